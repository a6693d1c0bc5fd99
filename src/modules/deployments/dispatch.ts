// Putting a deployment into the desired state of its devices, and taking it out.
import type { DbTx } from "../../db/client.js";
import { UTC_NOW } from "../devices/sql.js";

/**
 * Tells the devices of one batch (or every eligible device, batch null) to install the
 * deployment. A device that ran another deployment of the same application is taken over:
 * that entry becomes `superseded` and leaves the device's desired state, so the agent sees
 * one version of the application (upgrades, downgrades and rollbacks alike). Returns how many
 * devices were dispatched.
 */
export async function dispatchInstall(db: DbTx, deployment: { id: string; name: string; applicationId: string }, batchIndex: number | null): Promise<number> {
  const rows = await db.$queryRaw<Array<{ dispatched: number }>>`
    WITH dispatched AS (
      UPDATE "DeploymentDevice" dd
         SET "desiredAction" = 'install', "dispatchedAt" = ${UTC_NOW}, "stateChangedAt" = ${UTC_NOW}, "message" = NULL
       WHERE dd."deploymentId" = ${deployment.id}::uuid AND dd."state" = 'pending' AND dd."desiredAction" IS NULL
         AND (${batchIndex}::int IS NULL OR dd."batchIndex" = ${batchIndex}::int)
      RETURNING dd."deviceId"
    ), superseded AS (
      UPDATE "DeploymentDevice" other
         SET "desiredAction" = NULL, "state" = 'superseded', "stateChangedAt" = ${UTC_NOW},
             "reason" = 'superseded by deployment ' || ${deployment.name}
        FROM "Deployment" od, dispatched x
       WHERE other."deviceId" = x."deviceId" AND other."deploymentId" <> ${deployment.id}::uuid
         AND od."id" = other."deploymentId" AND od."applicationId" = ${deployment.applicationId}::uuid
         AND other."desiredAction" = 'install'
      RETURNING 1
    )
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

async function cancelRetries(db: DbTx, deploymentId: string, reason: string): Promise<void> {
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
 * `deviceId` limits it to one device (its heartbeat).
 */
export async function dispatchDueRetries(db: DbTx, scope: { deviceId?: string } = {}): Promise<RetryDispatched[]> {
  const deviceId = scope.deviceId ?? null;
  return db.$queryRaw<RetryDispatched[]>`
    UPDATE "DeploymentDevice" dd
       SET "state" = 'pending', "attempt" = dd."attempt" + 1, "retryAt" = NULL, "dispatchedAt" = ${UTC_NOW}, "stateChangedAt" = ${UTC_NOW},
           "reason" = 'automatic retry: attempt ' || (dd."attempt" + 1) || ' of ' || (d."retry"->>'maxAttempts')
      FROM "Deployment" d
     WHERE dd."retryAt" <= ${UTC_NOW} AND dd."state" = 'failed' AND dd."desiredAction" = 'install'
       AND (${deviceId}::uuid IS NULL OR dd."deviceId" = ${deviceId}::uuid)
       AND d."id" = dd."deploymentId" AND d."status" = 'running' AND d."rolloutState" NOT IN ('paused', 'aborted', 'failed')
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
