// The rollout status operators watch: per-batch device counts in one grouped query.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { deviceOffline } from "../devices/sql.js";
import { isoNullable } from "../devices/schemas.js";
import { stagedStrategyOf } from "./rollout.js";
import { outcomeText, successTarget, type BatchOutcome, type RolloutState } from "./rollout-machine.js";
import type { RolloutDto } from "./schemas.js";
import { SERVICE_STATE, type DeploymentRow } from "./store.js";

type BatchCounts = RolloutDto["batches"][number]["counts"];

/**
 * Device states as the rollout counts them, each under its own name (a cancelled device is
 * counted as cancelled, not as skipped), and `offline` for devices the batch still waits for
 * whose device is offline now (OFFLINE_STATE).
 */
const COUNTED_AS: Record<string, keyof BatchCounts> = {
  pending: "pending", downloading: "downloading", installing: "installing", running: "running", failed: "failed", waiting_to_retry: "waitingToRetry", waiting_for_window: "waitingForWindow", waiting_for_budget: "waitingForBudget",
  offline: "offline", cancelled: "cancelled", superseded: "superseded", removing: "removed", removed: "removed", skipped: "skipped",
};

const emptyBatchCounts = (): BatchCounts => ({
  pending: 0, downloading: 0, installing: 0, running: 0, failed: 0, waitingToRetry: 0, waitingForWindow: 0, waitingForBudget: 0, offline: 0, cancelled: 0, superseded: 0, removed: 0, skipped: 0,
});

/**
 * SERVICE_STATE, with `offline` for a device that has not finished (not dispatched yet, pending,
 * downloading, installing, waiting for its window or for a place in the budget) while its device
 * is offline: the batch would wait on it, so it is counted apart. A failed device waiting to
 * retry stays waiting_to_retry, a running one running.
 */
const OFFLINE_STATE = Prisma.sql`CASE WHEN ${deviceOffline("dev")} AND ${SERVICE_STATE} IN ('pending', 'downloading', 'installing', 'waiting_for_window', 'waiting_for_budget')
  THEN 'offline' ELSE ${SERVICE_STATE} END`;

export async function rolloutStatus(db: DbTx, row: DeploymentRow): Promise<RolloutDto> {
  const strategy = stagedStrategyOf(row);
  const [batches, counts, retries, [windows]] = await Promise.all([
    db.deploymentBatch.findMany({ where: { deploymentId: row.id }, orderBy: { index: "asc" } }),
    // A continuous deployment's leaver that does not keep it left its batch (the batch shrank by
    // it, and judging it no longer counts it: verdict-precheck.ts): it is counted in no batch.
    db.$queryRaw<Array<{ batchIndex: number | null; state: string; n: number }>>`
      SELECT "batchIndex", ${OFFLINE_STATE} AS "state", count(*)::int AS "n"
        FROM "DeploymentDevice" JOIN "Device" dev ON dev."id" = "deviceId"
       WHERE "deploymentId" = ${row.id}::uuid AND ("leftAt" IS NULL OR "desiredAction" = 'install') GROUP BY 1, 2`,
    db.deploymentDevice.aggregate({ where: { deploymentId: row.id, retryAt: { not: null } }, _count: { _all: true }, _min: { retryAt: true } }),
    db.$queryRaw<Array<{ waiting: number; next: Date | null; joined: number; left: number }>>`
      SELECT count(*) FILTER (WHERE ${SERVICE_STATE} = 'waiting_for_window')::int AS "waiting",
             min("windowOpensAt") FILTER (WHERE ${SERVICE_STATE} = 'waiting_for_window') AS "next",
             count(*) FILTER (WHERE "lateJoiner")::int AS "joined", count("leftAt")::int AS "left"
        FROM "DeploymentDevice" WHERE "deploymentId" = ${row.id}::uuid`,
  ]);
  const perBatch = new Map<number, BatchCounts>();
  let skippedDevices = 0;
  for (const group of counts) {
    if (group.batchIndex === null) {
      skippedDevices += group.n;
      continue;
    }
    const entry = perBatch.get(group.batchIndex) ?? emptyBatchCounts();
    entry[COUNTED_AS[group.state] ?? "skipped"] += group.n;
    perBatch.set(group.batchIndex, entry);
  }
  return {
    deploymentId: row.id,
    state: row.rolloutState as RolloutState,
    currentBatch: row.currentBatch,
    batches: batches.map((b) => ({
      index: b.index,
      kind: b.kind as RolloutDto["batches"][number]["kind"],
      size: b.size,
      state: b.state as RolloutDto["batches"][number]["state"],
      outcome: b.outcome ? { ...(b.outcome as unknown as BatchOutcome), summary: outcomeText(b.outcome as unknown as BatchOutcome) } : null,
      counts: perBatch.get(b.index) ?? emptyBatchCounts(),
      successTarget: successTarget(b.size, strategy.successThreshold),
      startedAt: isoNullable(b.startedAt),
      deadlineAt: isoNullable(b.deadlineAt),
      completedAt: isoNullable(b.completedAt),
    })),
    successThreshold: strategy.successThreshold,
    failureThreshold: strategy.failureThreshold,
    autoAdvance: strategy.autoAdvance,
    batchTimeoutSeconds: strategy.batchTimeoutSeconds,
    skippedDevices,
    membership: { joined: windows.joined, left: windows.left },
    windows: { waiting: windows.waiting, nextWindowAt: isoNullable(windows.next) },
    retries: { waiting: retries._count._all, nextRetryAt: isoNullable(retries._min.retryAt) },
    startAt: isoNullable(row.startAt),
    startedAt: isoNullable(row.startedAt),
    completedAt: isoNullable(row.completedAt),
    reason: row.rolloutReason,
  };
}
