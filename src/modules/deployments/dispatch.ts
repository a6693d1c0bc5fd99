// Putting a deployment into the desired state of its devices, and taking it out.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { UTC_NOW } from "../devices/sql.js";
import { admittedMembers, budgetGroupKey } from "../rollout-engine/budget-admission.js";
import type { DisruptionBudget } from "../rollout-engine/options.js";

interface Dispatchable {
  id: string;
  name: string;
  applicationId: string;
  disruptionBudget?: unknown;
}

/**
 * Another deployment of the same application that the devices of the `dispatched` CTE ran is
 * taken over: its entry becomes `superseded` and leaves their desired state, so the agent sees
 * one version of the application (upgrades, downgrades and rollbacks alike).
 */
function supersededCte(deployment: Dispatchable): Prisma.Sql {
  return Prisma.sql`superseded AS (
      UPDATE "DeploymentDevice" other
         SET "desiredAction" = NULL, "state" = 'superseded', "stateChangedAt" = ${UTC_NOW},
             "reason" = 'superseded by deployment ' || ${deployment.name}
        FROM "Deployment" od, dispatched x
       WHERE other."deviceId" = x."deviceId" AND other."deploymentId" <> ${deployment.id}::uuid
         AND od."id" = other."deploymentId" AND od."applicationId" = ${deployment.applicationId}::uuid
         AND other."desiredAction" = 'install'
      RETURNING 1
    )`;
}

/**
 * Tells the devices of one batch (or every eligible device, batch null) to install the
 * deployment (superseding other deployments of the application on them). With a disruption
 * budget they are held back instead, and as many as the budget allows are admitted at once.
 * Returns how many devices were told to install.
 */
export async function dispatchInstall(db: DbTx, deployment: Dispatchable, batchIndex: number | null): Promise<number> {
  if (deployment.disruptionBudget) {
    await db.$executeRaw`
      UPDATE "DeploymentDevice" dd SET "heldForBudget" = true, "stateChangedAt" = ${UTC_NOW}
       WHERE dd."deploymentId" = ${deployment.id}::uuid AND dd."state" = 'pending' AND dd."desiredAction" IS NULL
         AND (${batchIndex}::int IS NULL OR dd."batchIndex" = ${batchIndex}::int)`;
    return admitWithinBudget(db, deployment);
  }
  const rows = await db.$queryRaw<Array<{ dispatched: number }>>`
    WITH dispatched AS (
      UPDATE "DeploymentDevice" dd
         SET "desiredAction" = 'install', "dispatchedAt" = ${UTC_NOW}, "stateChangedAt" = ${UTC_NOW}, "message" = NULL
       WHERE dd."deploymentId" = ${deployment.id}::uuid AND dd."state" = 'pending' AND dd."desiredAction" IS NULL
         AND (${batchIndex}::int IS NULL OR dd."batchIndex" = ${batchIndex}::int)
      RETURNING dd."deviceId"
    ), ${supersededCte(deployment)}
    SELECT (SELECT count(*) FROM dispatched)::int AS "dispatched", (SELECT count(*) FROM superseded)::int AS "superseded"`;
  return rows[0]?.dispatched ?? 0;
}

/** A held-back device, or a failed one whose retry is due (with a budget, retries wait for a place too). */
const WAITING_FOR_PLACE = Prisma.raw(`((dd."heldForBudget" AND dd."state" = 'pending') OR (dd."state" = 'failed' AND dd."retryAt" <= (now() AT TIME ZONE 'UTC') AND dd."desiredAction" = 'install'))`);

/**
 * Stores the group of the entries the budget has not grouped yet (all of them after a start,
 * late joiners after that): from then on the group is read from the entry, not computed from
 * the device's labels. A device's group is the one it had when the deployment first grouped
 * it; a label changed during the rollout moves it at the next start.
 */
async function groupNewEntries(db: DbTx, deploymentId: string, budget: DisruptionBudget): Promise<void> {
  await db.$executeRaw`
    UPDATE "DeploymentDevice" dd SET "budgetGroup" = ${budgetGroupKey(budget.groupBy, Prisma.sql`dev."labels"`)}
      FROM "Device" dev
     WHERE dd."deploymentId" = ${deploymentId}::uuid AND dd."budgetGroup" IS NULL AND dev."id" = dd."deviceId"`;
}

/**
 * Admits the devices the disruption budget has room for (rollout-engine/budget.ts): per group, the free
 * places go to the waiting devices in a stable pseudo-random order. Must run under the
 * deployment's row lock: the loads read here stay true until the admission is written, since
 * nothing else tells this deployment's devices to install (reports only free places).
 *
 * `onlyGroupOf`: a device's report frees a place in its own group only, so it counts and admits
 * that group alone (through the (deploymentId, budgetGroup) index); the start, a resume and the
 * rollout job pass nothing and look at every group (due retries, late joiners, grown groups).
 */
export async function admitWithinBudget(db: DbTx, deployment: Dispatchable, onlyGroupOf?: { deviceId: string }): Promise<number> {
  const budget = deployment.disruptionBudget as DisruptionBudget;
  // A report's own entry was grouped when it was admitted; new entries wait for a full pass.
  if (!onlyGroupOf) await groupNewEntries(db, deployment.id, budget);
  const reporterId = onlyGroupOf?.deviceId ?? null;
  // the deployment's devices as the rollout engine's budget reads them (budget-admission.ts)
  const members = Prisma.sql`
    SELECT dd."deviceId"::text AS "ref", dd."budgetGroup" AS "group",
           (dd."desiredAction" = 'install' AND dd."state" IN ('pending', 'downloading', 'installing')) AS "busy",
           ${WAITING_FOR_PLACE} AS "waiting", md5(dd."deviceId"::text || ${deployment.id}::text) AS "rank"
      FROM "DeploymentDevice" dd
     WHERE dd."deploymentId" = ${deployment.id}::uuid AND dd."state" NOT IN ('skipped', 'cancelled', 'superseded')
       AND (${reporterId}::uuid IS NULL OR dd."budgetGroup" = (SELECT r."budgetGroup" FROM "DeploymentDevice" r
                                                               WHERE r."deploymentId" = ${deployment.id}::uuid AND r."deviceId" = ${reporterId}::uuid))`;
  const admitted = await admittedMembers(db, members, budget);
  if (!admitted) return 0;
  const rows = await db.$queryRaw<Array<{ dispatched: number }>>`
    WITH dispatched AS (
      UPDATE "DeploymentDevice" dd
         SET "desiredAction" = 'install', "dispatchedAt" = ${UTC_NOW}, "stateChangedAt" = ${UTC_NOW}, "message" = NULL, "heldForBudget" = false,
             "attempt" = CASE WHEN dd."state" = 'failed' THEN dd."attempt" + 1 ELSE dd."attempt" END,
             "reason" = CASE WHEN dd."state" = 'failed' THEN 'automatic retry: attempt ' || (dd."attempt" + 1) ELSE dd."reason" END,
             "state" = 'pending', "retryAt" = NULL
        FROM (${admitted}) r
       WHERE dd."deploymentId" = ${deployment.id}::uuid AND dd."deviceId" = r."ref"::uuid
      RETURNING dd."deviceId"
    ), ${supersededCte(deployment)}
    SELECT (SELECT count(*) FROM dispatched)::int AS "dispatched", (SELECT count(*) FROM superseded)::int AS "superseded"`;
  return rows[0]?.dispatched ?? 0;
}

/**
 * Devices that were never dispatched, or were dispatched but have not started (still
 * `pending`), will not get the deployment: they become `cancelled` and leave the desired state.
 * Devices waiting to retry keep their failure: it is final now.
 */
export async function cancelNotStarted(db: DbTx, deploymentId: string, reason: string): Promise<number> {
  await cancelRetries(db, deploymentId, reason);
  return db.$executeRaw`
    UPDATE "DeploymentDevice"
       SET "state" = 'cancelled', "desiredAction" = NULL, "reason" = ${reason}, "stateChangedAt" = ${UTC_NOW}
     WHERE "deploymentId" = ${deploymentId}::uuid AND "state" = 'pending'`;
}

/** Devices waiting to retry get no retry: their failure is final (counted as failed from now on). */
export async function cancelRetries(db: DbTx, deploymentId: string, reason: string): Promise<void> {
  await db.$executeRaw`
    UPDATE "DeploymentDevice" SET "retryAt" = NULL, "reason" = 'no retry: ' || ${reason}
     WHERE "deploymentId" = ${deploymentId}::uuid AND "retryAt" IS NOT NULL`;
}

export interface RetryDispatched {
  deploymentId: string;
  organizationId: string;
  deviceId: string;
  attempt: number;
}

/**
 * Hands out the retries that are due: a failed device waiting to retry is given the install
 * again as its next attempt (state pending, attempt + 1). One conditional statement: of two
 * processes (the rollout job, a heartbeat) that both find a retry due, the second finds the
 * entry no longer failed and skips it, so an attempt is handed out once. Nothing is handed
 * out while the rollout is paused, aborted or failed, or the deployment is not running.
 * `deviceId` limits it to one device (its heartbeat), `deploymentId` to one deployment (an
 * operator's retry of a batch's failed devices, whose `reason` the entries then carry).
 */
export async function dispatchDueRetries(db: DbTx, scope: { deviceId?: string; deploymentId?: string; reason?: string } = {}): Promise<RetryDispatched[]> {
  const deviceId = scope.deviceId ?? null;
  const deploymentId = scope.deploymentId ?? null;
  const reason = scope.reason ?? null;
  return db.$queryRaw<RetryDispatched[]>`
    UPDATE "DeploymentDevice" dd
       SET "state" = 'pending', "attempt" = dd."attempt" + 1, "retryAt" = NULL, "dispatchedAt" = ${UTC_NOW}, "stateChangedAt" = ${UTC_NOW},
           "reason" = CASE WHEN ${reason}::text IS NULL THEN 'automatic retry: attempt ' || (dd."attempt" + 1) || ' of ' || (d."retry"->>'maxAttempts')
                           ELSE ${reason}::text || ': attempt ' || (dd."attempt" + 1) END
      FROM "Deployment" d
     WHERE dd."retryAt" <= ${UTC_NOW} AND dd."state" = 'failed' AND dd."desiredAction" = 'install'
       AND (${deviceId}::uuid IS NULL OR dd."deviceId" = ${deviceId}::uuid)
       AND (${deploymentId}::uuid IS NULL OR dd."deploymentId" = ${deploymentId}::uuid)
       AND d."id" = dd."deploymentId" AND d."status" = 'running' AND d."rolloutState" NOT IN ('paused', 'aborted', 'failed')
       -- with a disruption budget a retry waits for a place: admitWithinBudget hands it out
       AND d."disruptionBudget" IS NULL
    RETURNING dd."deploymentId"::text AS "deploymentId", dd."organizationId"::text AS "organizationId", dd."deviceId"::text AS "deviceId", dd."attempt"`;
}

/**
 * Asks every device that was given the deployment to remove it; the others are cancelled.
 * Returns how many devices must confirm the removal.
 */
export async function requestRemoval(db: DbTx, deploymentId: string, reason: string): Promise<number> {
  await cancelRetries(db, deploymentId, reason);
  await db.$executeRaw`
    UPDATE "DeploymentDevice"
       SET "state" = 'cancelled', "desiredAction" = NULL, "reason" = ${reason}, "stateChangedAt" = ${UTC_NOW}
     WHERE "deploymentId" = ${deploymentId}::uuid AND "desiredAction" IS NULL AND "state" = 'pending'`;
  return db.$executeRaw`
    UPDATE "DeploymentDevice"
       SET "desiredAction" = 'remove', "stateChangedAt" = ${UTC_NOW}
     WHERE "deploymentId" = ${deploymentId}::uuid AND "desiredAction" = 'install'`;
}

/** Devices asked to remove the deployment that have not confirmed yet. */
export async function removalsAwaited(db: DbTx, deploymentId: string): Promise<number> {
  return db.deploymentDevice.count({ where: { deploymentId, desiredAction: "remove", state: { not: "removed" } } });
}
