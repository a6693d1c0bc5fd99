// Staged rollouts in the database: the operator's moves and the evaluation that agent
// reports and the timeout job trigger. Every function here runs inside a transaction that
// holds the deployment's row lock (lockDeployment), and takes its decisions from
// rollout-machine.ts.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { conflict } from "../../trpc/errors.js";
import { counted } from "../../lib/plural.js";
import { UTC_NOW } from "../devices/sql.js";
import type { DeploymentEvents } from "./events.js";
import { admitWithinBudget, cancelNotStarted, cancelRetries, dispatchDueRetries, dispatchInstall } from "./dispatch.js";
import {
  abortedOutcome, acceptedOutcome, afterBatchSucceeded, assertMoveAllowed, batchLabel, completionReason, judgeBatch, judgedOutcome,
  outcomeText, resumeTarget, TERMINAL_ROLLOUT_STATES, waitingText, type BatchOutcome, type RolloutMove, type RolloutState,
} from "./rollout-machine.js";
import type { DeploymentRow } from "./store.js";
import type { StagedStrategy, Strategy } from "./strategy.js";
import { freezeTargets, planRollout } from "./targets.js";
import { profileOfDeployment } from "./versions.js";
import { batchInFlight } from "./verdict-precheck.js";
import type { MaintenanceWindows } from "../rollout-engine/options.js";
import { deadlineInWindows } from "../rollout-engine/windows.js";
import { endPredecessors, restorePredecessors } from "./upgrade.js";

export function stagedStrategyOf(row: DeploymentRow): StagedStrategy {
  const strategy = row.strategy as Strategy;
  if (strategy.type !== "staged") throw conflict("The deployment uses the all-at-once strategy; it has no staged rollout");
  return strategy;
}

interface RolloutChange {
  rolloutState?: RolloutState;
  removalRequestedAt?: Date | null;
  currentBatch?: number | null;
  pausedFrom?: string | null;
  rolloutReason?: string | null;
  status?: string;
  startedAt?: Date;
  completedAt?: Date | null;
}

/** Writes the new rollout position and records the events it causes. */
export async function moveRollout(db: DbTx, row: DeploymentRow, change: RolloutChange, events: DeploymentEvents): Promise<DeploymentRow> {
  const updated = await db.deployment.update({ where: { id: row.id }, data: change, include: { application: { select: { name: true } } } });
  events.rolloutChanged(row.organizationId, row.id, row.rolloutState, updated.rolloutState, updated.currentBatch, updated.rolloutReason);
  events.statusChanged(row.organizationId, row.id, row.status, updated.status);
  return updated;
}

/** Dispatches batch `index` and starts its clock. */
async function startBatch(db: DbTx, row: DeploymentRow, index: number, strategy: StagedStrategy): Promise<void> {
  await dispatchInstall(db, row, index);
  const now = new Date();
  await db.deploymentBatch.update({
    where: { deploymentId_index: { deploymentId: row.id, index } },
    data: { state: "in_progress", startedAt: now, deadlineAt: batchDeadline(row, strategy, now) },
  });
}

/**
 * When a batch started at `from` times out: batchTimeoutSeconds later, or, with maintenance
 * windows, once that much time inside the windows (read in the deployment's time zone) passed.
 */
function batchDeadline(row: DeploymentRow, strategy: StagedStrategy, from: Date): Date {
  const windows = row.maintenanceWindows as MaintenanceWindows | null;
  const inWindows = windows ? deadlineInWindows(windows.windows, windows.timeZone, from.getTime(), strategy.batchTimeoutSeconds) : null;
  return new Date(inWindows ?? from.getTime() + strategy.batchTimeoutSeconds * 1000);
}

/** Ends batch `index` (when planned or in flight) with its outcome: its state says how, the outcome who and with which counts. */
async function finishBatch(db: DbTx, deploymentId: string, index: number, outcome: BatchOutcome): Promise<void> {
  await db.deploymentBatch.updateMany({
    where: { deploymentId, index, state: { in: ["planned", "in_progress"] } },
    data: { state: outcome.kind, outcome: outcome as unknown as Prisma.InputJsonValue, completedAt: new Date(outcome.at) },
  });
}

/** The completed rollout's reason, from every batch's recorded outcome (rollout-machine.ts completionReason). */
async function completedReason(db: DbTx, deploymentId: string): Promise<string> {
  const batches = await db.deploymentBatch.findMany({ where: { deploymentId }, orderBy: { index: "asc" }, select: { index: true, outcome: true } });
  return completionReason(batches.map((b) => ({ index: b.index, outcome: b.outcome as BatchOutcome | null })));
}

/** initialize: freezes the device set and plans the batches (again, while only initialized). */
export async function initializeRollout(db: DbTx, row: DeploymentRow, events: DeploymentEvents): Promise<DeploymentRow> {
  assertRolloutMove("initialize", row);
  const strategy = stagedStrategyOf(row);
  const profile = await profileOfDeployment(db, row);
  const frozen = await freezeTargets(db, row, profile);
  if (frozen.eligible === 0) {
    throw conflict(`The target matches no eligible device (${frozen.skipped} skipped as not eligible); nothing to roll out`);
  }
  const plan = await planRollout(db, row.id, strategy, frozen.eligible);
  return moveRollout(db, row, { rolloutState: "initialized", currentBatch: null, rolloutReason: `planned ${plan.length} batches over ${frozen.eligible} devices`, completedAt: null }, events);
}

/** start: dispatches the canary. */
export async function startRollout(db: DbTx, row: DeploymentRow, events: DeploymentEvents): Promise<DeploymentRow> {
  assertRolloutMove("start", row);
  const strategy = stagedStrategyOf(row);
  await startBatch(db, row, 0, strategy);
  return moveRollout(db, row, { rolloutState: "canary", currentBatch: 0, rolloutReason: null, status: "running", startedAt: new Date() }, events);
}

/**
 * promote (the batch in flight as it is: the canary, or a paused batch; or the canary's gate)
 * and approve (any gate): the current batch is accepted and the next one dispatched. A batch
 * still in flight is recorded as it is: succeeded when it reached its success target anyway,
 * else promoted by `by` with its counts of now.
 */
export async function advanceRollout(db: DbTx, row: DeploymentRow, move: "promote" | "approve", events: DeploymentEvents, by: string): Promise<DeploymentRow> {
  assertRolloutMove(move, row);
  const strategy = stagedStrategyOf(row);
  const current = row.currentBatch ?? 0;
  const inFlight = await batchInFlight(db, row.organizationId, row.id);
  let accepted: BatchOutcome | null = null;
  if (inFlight) {
    accepted = acceptedOutcome(move, by, inFlight, strategy, new Date());
    await finishBatch(db, row.id, current, accepted);
  }
  const batchCount = await db.deploymentBatch.count({ where: { deploymentId: row.id } });
  const change = { pausedFrom: null };
  if (current >= batchCount - 1) {
    return moveRollout(db, row, { ...change, rolloutState: "completed", completedAt: new Date(), rolloutReason: await completedReason(db, row.id) }, events);
  }
  await startBatch(db, row, current + 1, strategy);
  await endPredecessors(db, row, events);
  const reason = accepted?.kind === "promoted" ? `${batchLabel(current)} ${outcomeText(accepted)}; ${batchLabel(current + 1)} dispatched` : null;
  return moveRollout(db, row, { ...change, rolloutState: "in_progress", currentBatch: current + 1, rolloutReason: reason }, events);
}

export async function pauseRollout(db: DbTx, row: DeploymentRow, reason: string, events: DeploymentEvents): Promise<DeploymentRow> {
  assertRolloutMove("pause", row);
  return moveRollout(db, row, { rolloutState: "paused", pausedFrom: row.rolloutState, rolloutReason: reason }, events);
}

/**
 * resume: back to the state it paused from. The batch in flight gets a fresh timeout (paused
 * time does not count), and when the failure threshold had paused it, the operator's resume
 * accepts those failures: the batch is judged on its success threshold from now on.
 */
export async function resumeRollout(db: DbTx, row: DeploymentRow, events: DeploymentEvents, by: string): Promise<DeploymentRow> {
  assertRolloutMove("resume", row);
  const strategy = stagedStrategyOf(row);
  const deadline = batchDeadline(row, strategy, new Date());
  if (row.currentBatch !== null) {
    await db.deploymentBatch.updateMany({
      where: { deploymentId: row.id, index: row.currentBatch, state: "in_progress" },
      data: { failureAccepted: true, deadlineAt: deadline },
    });
  }
  // Says what the batch in flight waits for from now on; its counts are the rollout status's to
  // tell (a reason is stored, and counts said here would be untrue after the next report).
  const batch = await batchInFlight(db, row.organizationId, row.id);
  const reason = batch
    ? `${batchLabel(batch.index)} resumed by ${by}: ${batch.failed > 0 ? "failures accepted; " : ""}${waitingText(batch, strategy, deadline)}`
    : `resumed by ${by}`;
  const resumed = await moveRollout(db, row, { rolloutState: resumeTarget(row.pausedFrom as RolloutState | null), pausedFrom: null, rolloutReason: reason }, events);
  // continuous: devices that joined the batch in flight while it was paused were not told yet
  if (row.continuous && row.currentBatch !== null && (resumed.rolloutState === "canary" || resumed.rolloutState === "in_progress")) {
    await dispatchInstall(db, resumed, row.currentBatch);
  }
  return evaluateLocked(db, resumed, events);
}

/**
 * retry: the failed devices of the batch in flight get a new attempt now (the automatic
 * retries' own hand-out, dispatch.ts; under a disruption budget as places free up). The batch
 * gets a fresh timeout and the failure threshold watches it again; a paused rollout resumes.
 */
export async function retryFailedRollout(db: DbTx, row: DeploymentRow, events: DeploymentEvents, by: string): Promise<DeploymentRow> {
  assertRolloutMove("retry", row);
  const strategy = stagedStrategyOf(row);
  const batch = await batchInFlight(db, row.organizationId, row.id);
  if (!batch) throw conflict(`Cannot retry the failed devices of the rollout: no batch is in flight (batch ${row.currentBatch} is done)`);
  const label = batchLabel(batch.index);
  // Due now: the automatic retries' hand-out gives each its next attempt.
  // (also those already waiting for an automatic retry; a leaver that keeps it is still in the batch).
  // Truncated: the column keeps milliseconds, and a rounded-up "now" would not be due yet.
  const due = await db.$executeRaw`
    UPDATE "DeploymentDevice" SET "retryAt" = date_trunc('milliseconds', ${UTC_NOW})
     WHERE "deploymentId" = ${row.id}::uuid AND "batchIndex" = ${batch.index}::int AND "state" = 'failed' AND "desiredAction" = 'install'`;
  if (due === 0) throw conflict(`Cannot retry the failed devices of the ${label}: none of its devices failed`);
  const deadline = batchDeadline(row, strategy, new Date());
  await db.deploymentBatch.updateMany({ where: { deploymentId: row.id, index: batch.index, state: "in_progress" }, data: { failureAccepted: false, deadlineAt: deadline } });
  const state = row.rolloutState === "paused" ? resumeTarget(row.pausedFrom as RolloutState | null) : (row.rolloutState as RolloutState);
  // how many this move retried is a fact of the move, true for good; the batch's counts are not
  const reason = `${label}: ${counted(due, "failed device")} retried by ${by}; ${waitingText(batch, strategy, deadline)}`;
  const moved = await moveRollout(db, row, { rolloutState: state, pausedFrom: null, rolloutReason: reason }, events);
  // under a disruption budget the retries wait for a place like any (dispatch.ts)
  if (moved.disruptionBudget) await admitWithinBudget(db, moved);
  else {
    for (const r of await dispatchDueRetries(db, { deploymentId: row.id, reason: `retried by ${by}` })) {
      events.progress(r.organizationId, r.deploymentId, r.deviceId, "pending", `retried by ${by}: attempt ${r.attempt}`);
    }
  }
  return moved;
}

/** abort: nothing new is dispatched; devices that have not started are cancelled; in-flight ones finish. */
export async function abortRollout(
  db: DbTx, row: DeploymentRow, reason: string, events: DeploymentEvents, by: string | null = null, opts: { removing?: "stopping" | "deleting" } = {},
): Promise<DeploymentRow> {
  assertRolloutMove("abort", row);
  const strategy = stagedStrategyOf(row);
  // Devices waiting to retry get none: their failure is final, and the batch's record counts
  // them as failed, as its counts do from now on.
  await cancelRetries(db, row.id, "rollout aborted");
  // the batch in flight is recorded with its counts before its pending devices are cancelled
  const inFlight = await batchInFlight(db, row.organizationId, row.id);
  if (inFlight) await finishBatch(db, row.id, inFlight.index, abortedOutcome(by, inFlight, strategy, new Date()));
  // an update rollout: the devices told the new version that have not started keep the old one
  // (a stop or delete: they remove the old one instead)
  await restorePredecessors(db, row, events, opts.removing ?? null);
  await cancelNotStarted(db, row.id, "rollout aborted");
  await db.deploymentBatch.updateMany({ where: { deploymentId: row.id, state: { in: ["planned", "in_progress"] } }, data: { state: "cancelled", completedAt: new Date() } });
  return moveRollout(db, row, { rolloutState: "aborted", completedAt: new Date(), rolloutReason: reason, pausedFrom: null }, events);
}

function assertRolloutMove(move: RolloutMove, row: DeploymentRow): void {
  stagedStrategyOf(row);
  if (row.status === "stopping" || row.status === "deleting") throw conflict(`Cannot ${move} the rollout: the deployment is ${row.status}`);
  assertMoveAllowed(move, { state: row.rolloutState as RolloutState, currentBatch: row.currentBatch });
}

/**
 * Judges the batch in flight of a locked, running deployment and takes the move the state
 * machine decides (success: next batch, approval gate or completion; failure threshold:
 * pause; timeout: failed). For all-at-once deployments: completed once no device is in flight.
 */
export async function evaluateLocked(db: DbTx, row: DeploymentRow, events: DeploymentEvents, reporter?: { deviceId: string }): Promise<DeploymentRow> {
  if (row.status !== "running") return row;
  const judged = await judgeLocked(db, row, events, reporter);
  // devices dispatched now left the predecessors of an upgrade (upgrade.ts)
  await endPredecessors(db, judged, events);
  return judged;
}

async function judgeLocked(db: DbTx, row: DeploymentRow, events: DeploymentEvents, reporter?: { deviceId: string }): Promise<DeploymentRow> {
  const strategy = row.strategy as Strategy;
  if (strategy.type === "staged" && row.continuous && row.rolloutState === "completed") row = await openLateJoinerBatch(db, row, strategy, events);
  // Places freed by devices that reported running or failed go to the devices the budget held
  // back (and to the retries that are due), also once the rollout completed.
  // A device's report frees a place in its own group: only that group is looked at then.
  if (row.disruptionBudget && ADMITTING_STATES.includes(row.rolloutState)) await admitWithinBudget(db, row, reporter);
  if (TERMINAL_ROLLOUT_STATES.includes(row.rolloutState as RolloutState)) return row;
  if (strategy.type === "all-at-once") return evaluateAllAtOnce(db, row, events);
  if (row.rolloutState !== "canary" && row.rolloutState !== "in_progress") return row;

  const batch = await batchInFlight(db, row.organizationId, row.id);
  if (!batch) return row;
  const { index } = batch;
  const verdict = judgeBatch(batch, strategy);
  switch (verdict.kind) {
    case "wait":
      return row;
    case "failure_threshold":
      return moveRollout(db, row, { rolloutState: "paused", pausedFrom: row.rolloutState, rolloutReason: verdict.reason }, events);
    case "timed_out": {
      // Devices waiting to retry get none (their failure is final) before the batch is recorded:
      // its record then counts them as failed, as its counts do from now on.
      await cancelNotStarted(db, row.id, "rollout failed");
      const final = (await batchInFlight(db, row.organizationId, row.id)) ?? batch;
      await finishBatch(db, row.id, index, judgedOutcome("failed", final, strategy, new Date()));
      await db.deploymentBatch.updateMany({ where: { deploymentId: row.id, state: "planned" }, data: { state: "cancelled" } });
      return moveRollout(db, row, { rolloutState: "failed", completedAt: new Date(), rolloutReason: verdict.reason }, events);
    }
    case "succeeded": {
      await finishBatch(db, row.id, index, judgedOutcome("succeeded", batch, strategy, new Date()));
      const batchCount = await db.deploymentBatch.count({ where: { deploymentId: row.id } });
      const next = afterBatchSucceeded(index, batchCount, strategy.autoAdvance);
      if (next.state === "completed") {
        return moveRollout(db, row, { rolloutState: "completed", completedAt: new Date(), rolloutReason: await completedReason(db, row.id) }, events);
      }
      if (!next.dispatchNext) return moveRollout(db, row, { rolloutState: "awaiting_approval", rolloutReason: `${batchLabel(index)} succeeded; waiting for approval` }, events);
      await startBatch(db, row, index + 1, strategy);
      return moveRollout(db, row, { rolloutState: "in_progress", currentBatch: index + 1, rolloutReason: null }, events);
    }
  }
}

/**
 * Rollout states in which held-back devices (and due retries) are admitted: not paused,
 * aborted or failed, where nothing new is dispatched. A completed rollout still has devices
 * the budget held when its last batch reached its threshold, and retries to hand out.
 */
export const ADMITTING_STATES = ["canary", "in_progress", "awaiting_approval", "completed"];

/**
 * A completed staged continuous rollout gathers the devices that joined since (waiting with no
 * batch, placed so by the membership trigger) into a late-joiner batch of their own, dispatched
 * and judged like any batch: the rollout is in_progress again until it succeeds (completed),
 * crosses the failure threshold (paused) or times out (failed). Under the row lock, in one
 * transaction: of two processes one opens it, and a crash before the commit leaves the joiners
 * waiting for the next judgement.
 */
async function openLateJoinerBatch(db: DbTx, row: DeploymentRow, strategy: StagedStrategy, events: DeploymentEvents): Promise<DeploymentRow> {
  const [{ next }] = await db.$queryRaw<Array<{ next: number }>>`
    SELECT (COALESCE(max("index"), -1) + 1)::int AS "next" FROM "DeploymentBatch" WHERE "deploymentId" = ${row.id}::uuid`;
  const joiners = await db.$executeRaw`
    UPDATE "DeploymentDevice" SET "batchIndex" = ${next}::int, "reason" = 'joined: its labels match the selector now; late-joiner batch ' || ${next}::int
     WHERE "deploymentId" = ${row.id}::uuid AND "batchIndex" IS NULL AND "state" = 'pending' AND "desiredAction" IS NULL AND "lateJoiner"`;
  if (joiners === 0) return row;
  await db.deploymentBatch.create({ data: { deploymentId: row.id, index: next, kind: "late_joiners", size: joiners } });
  await startBatch(db, row, next, strategy);
  return moveRollout(db, row, {
    rolloutState: "in_progress", currentBatch: next, completedAt: null,
    rolloutReason: `late-joiner batch ${next}: ${counted(joiners, "device")} joined after the rollout completed`,
  }, events);
}

async function evaluateAllAtOnce(db: DbTx, row: DeploymentRow, events: DeploymentEvents): Promise<DeploymentRow> {
  // Asked on every decisive report: whether one device is still in flight stops at the first found.
  const [{ inFlight }] = await db.$queryRaw<Array<{ inFlight: boolean }>>`
    SELECT EXISTS (SELECT 1 FROM "DeploymentDevice"
                    WHERE "deploymentId" = ${row.id}::uuid
                      AND (((("state" IN ('pending', 'downloading', 'installing') OR "retryAt" IS NOT NULL) AND "desiredAction" = 'install'))
                           OR ("heldForBudget" AND "state" = 'pending'))) AS "inFlight"`;
  if (inFlight) return row;
  // The reason names no count: devices go on reporting after the rollout completed (a running
  // one fails later), and the deployment's progress counts them as they are.
  return moveRollout(db, row, { rolloutState: "completed", completedAt: new Date(), rolloutReason: "every device reported running or failed (no attempt left)" }, events);
}
