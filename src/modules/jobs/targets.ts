// A job's device set: every device its target matches, frozen when the job is created as one
// DeviceAction per device (queued, or skipped with the reason), then cut into the rollout
// engine's batches in its order (offline devices last). Set-based: one statement per step.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { targetCondition, type BulkTarget } from "../groups/service.js";
import { deviceOffline } from "../devices/sql.js";
import { admittedSql, AWAITING_APPROVAL } from "../agent/admission-gate.js";
import { planBatches, type PlannedBatch } from "../deployments/batch-plan.js";
import { batchIndexOfRank, rolloutOrder } from "../rollout-engine/ranking.js";
import { APP_KINDS, type ActionKind } from "../device-actions/kinds.js";
import { budgetGroupKey } from "../rollout-engine/budget-admission.js";
import type { DisruptionBudget } from "../rollout-engine/options.js";
import { admitJobWithinBudget, type BudgetedJob } from "./budget.js";
import type { JobStrategy } from "./schemas.js";

const ADMITTED = Prisma.raw(admittedSql(`d."id"`));
export const NOT_RUNNING_DEPLOYMENT = "the device is not told to run this deployment";

interface Acting {
  kind: ActionKind;
  deploymentId?: string | null;
}

/** Why a targeted device cannot run the job (NULL: it can): awaiting approval, or an *-app kind on a device without the deployment. */
function skipReason(job: Acting): Prisma.Sql {
  const needsDeployment = APP_KINDS.includes(job.kind) && job.deploymentId ? job.deploymentId : null;
  return Prisma.sql`CASE WHEN NOT ${ADMITTED} THEN ${AWAITING_APPROVAL}
    WHEN ${needsDeployment}::uuid IS NOT NULL AND NOT EXISTS (
      SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = ${needsDeployment}::uuid AND x."deviceId" = d."id" AND x."desiredAction" = 'install')
    THEN ${NOT_RUNNING_DEPLOYMENT} END`;
}

/** What a job over `target` would take: matched, eligible, skipped, offline among the eligible, and the batches. One statement. */
export async function previewTargets(db: DbTx, organizationId: string, target: BulkTarget, job: Acting, strategy: JobStrategy) {
  const [row] = await db.$queryRaw<Array<{ matched: number; skipped: number; offline: number }>>`
    SELECT count(*)::int AS "matched", count(*) FILTER (WHERE s."reason" IS NOT NULL)::int AS "skipped",
           count(*) FILTER (WHERE s."reason" IS NULL AND s."offline")::int AS "offline"
      FROM (SELECT ${skipReason(job)} AS "reason", ${deviceOffline("d")} AS "offline" FROM "Device" d WHERE ${targetCondition(organizationId, target)}) s`;
  const eligible = row.matched - row.skipped;
  return { matched: row.matched, eligible, skipped: row.skipped, offline: row.offline, batches: planBatches(strategy, eligible) };
}

interface FrozenJob extends Acting {
  id: string;
  organizationId: string;
  applicationId: string | null;
  reason: string | null;
  expiresAt: Date;
  createdById: string | null;
  disruptionBudget?: unknown;
  /** apply-configuration: the layer and revision each device's action carries */
  configLayerId?: string | null;
  configRevision?: number | null;
}

/** One DeviceAction per targeted device: queued, or skipped with why; under a disruption budget, with its group. */
export async function freezeJobTargets(db: DbTx, job: FrozenJob, target: BulkTarget): Promise<{ eligible: number; skipped: number }> {
  // a device's group is the one it had when the job was created (a label changed later does not move it)
  const budget = job.disruptionBudget as DisruptionBudget | null | undefined;
  const group = budget ? budgetGroupKey(budget.groupBy, Prisma.sql`d."labels"`) : Prisma.sql`NULL`;
  const rows = await db.$queryRaw<Array<{ state: string; n: number }>>`
    WITH inserted AS (
      INSERT INTO "DeviceAction" ("id", "organizationId", "deviceId", "kind", "deploymentId", "applicationId", "reason", "state", "message",
                                  "expiresAt", "createdById", "jobId", "finishedAt", "updatedAt", "budgetGroup", "configLayerId", "configRevision")
      SELECT gen_random_uuid(), d."organizationId", d."id", ${job.kind}, ${job.deploymentId ?? null}::uuid, ${job.applicationId}::uuid, ${job.reason},
             CASE WHEN s."reason" IS NULL THEN 'queued' ELSE 'skipped' END, s."reason",
             ${job.expiresAt.toISOString()}::timestamptz AT TIME ZONE 'UTC', ${job.createdById}, ${job.id}::uuid,
             CASE WHEN s."reason" IS NULL THEN NULL ELSE (now() AT TIME ZONE 'UTC') END, (now() AT TIME ZONE 'UTC'), ${group},
             ${job.configLayerId ?? null}::uuid, ${job.configRevision ?? null}::int
        FROM "Device" d CROSS JOIN LATERAL (SELECT ${skipReason(job)} AS "reason") s
       WHERE ${targetCondition(job.organizationId, target)}
      RETURNING "state"
    )
    SELECT "state", count(*)::int AS "n" FROM inserted GROUP BY 1`;
  const count = (state: string) => rows.find((r) => r.state === state)?.n ?? 0;
  return { eligible: count("queued"), skipped: count("skipped") };
}

/** Cuts the queued devices into batches in the rollout engine's order; returns the plan. */
export async function planJobBatches(db: DbTx, jobId: string, strategy: JobStrategy, eligible: number): Promise<PlannedBatch[]> {
  const plan = planBatches(strategy, eligible);
  if (!plan.length) return plan;
  await db.$executeRaw`
    WITH ranked AS (
      SELECT a."id", row_number() OVER (ORDER BY ${rolloutOrder("dev", Prisma.sql`a."deviceId"`, jobId)}) AS "rank"
        FROM "DeviceAction" a JOIN "Device" dev ON dev."id" = a."deviceId"
       WHERE a."jobId" = ${jobId}::uuid AND a."state" = 'queued'
    )
    UPDATE "DeviceAction" a SET "batchIndex" = ${batchIndexOfRank(plan, Prisma.sql`r."rank"`)}
      FROM ranked r WHERE a."id" = r."id"`;
  return plan;
}

/**
 * Hands batch `index` to its devices: queued becomes pending, which their next heartbeat takes.
 * Under a disruption budget they are held instead, and as many as it has places for admitted
 * (budget.ts). Returns how many devices became pending.
 */
export async function dispatchJobBatch(db: DbTx, job: BudgetedJob, index: number): Promise<number> {
  if (job.disruptionBudget) {
    await db.$executeRaw`
      UPDATE "DeviceAction" SET "heldForBudget" = true, "updatedAt" = (now() AT TIME ZONE 'UTC')
       WHERE "jobId" = ${job.id}::uuid AND "batchIndex" = ${index}::int AND "state" = 'queued'`;
    return admitJobWithinBudget(db, job);
  }
  return db.$executeRaw`
    UPDATE "DeviceAction" SET "state" = 'pending', "updatedAt" = (now() AT TIME ZONE 'UTC')
     WHERE "jobId" = ${job.id}::uuid AND "batchIndex" = ${index}::int AND "state" = 'queued'`;
}
