// What the end of a configuration layer's rollout (kind apply-configuration) does to its layer:
// completed, the job's revision is released (every device the layer applies to gets it, those
// offline during the rollout when they come back); cancelled or expired, nothing: the layer's
// released revision stays the one before, which the devices that took the new one get again.
import type { DbTx } from "../../db/client.js";

export async function releaseConfiguration(db: DbTx, job: { configLayerId: string | null; configRevision: number | null }): Promise<void> {
  if (!job.configLayerId || job.configRevision === null) return;
  // updatedAt moves: the heartbeat's stamp of the layer set (config-layers/heartbeat.ts)
  await db.$executeRaw`
    UPDATE "ConfigLayer" SET "releasedRevision" = ${job.configRevision}::int, "updatedAt" = (now() AT TIME ZONE 'UTC')
     WHERE "id" = ${job.configLayerId}::uuid AND "currentRevision" >= ${job.configRevision}::int`;
}

/** The actions a completed rollout leaves open: released, their devices need them no more. Returns how many. */
export async function closeOpenOnRelease(db: DbTx, jobId: string): Promise<number> {
  return db.$executeRaw`
    UPDATE "DeviceAction" SET "state" = 'cancelled', "finishedAt" = (now() AT TIME ZONE 'UTC'), "updatedAt" = (now() AT TIME ZONE 'UTC'),
           "heldForBudget" = false, "message" = 'the rollout completed: the revision is released, and the device gets it with its next heartbeat'
     WHERE "jobId" = ${jobId}::uuid AND "state" IN ('queued', 'pending', 'delivered', 'deferred')`;
}
