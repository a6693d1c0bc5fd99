// Marketplace store syncs always run as jobs of the job runner (src/jobs): a manual sync
// queues one, the schedule queues one per due store. The job's unique key is the store, so a
// store never has two queued or running syncs: a second request is answered with the live one.
import type { DbTx } from "../../db/client.js";
import { Prisma, type MarketplaceStore } from "../../generated/prisma/client.js";
import { enqueueJob } from "../../jobs/queue.js";
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import type { Services } from "../../services.js";
import { conflict } from "../../trpc/errors.js";
import { enqueueDueSyncs, SYNC_JOB_ATTEMPTS, syncJobDefinition } from "../registries/oci/jobs.js";
import { idleProgress, progressOf, publishProgress, saveProgress } from "./progress.js";
import type { Progress } from "./schemas.js";
import { runStoreSync, STORE_DISABLED } from "./sync.js";

export const STORE_SYNC_JOB = "marketplace-store.sync";
export const storeSyncJobKey = (storeId: string) => `${STORE_SYNC_JOB}:${storeId}`;

type SyncPayload = {
  organizationId: string;
  storeId: string;
  /** the user id of a manual run, "scheduler" */
  triggeredBy: string | null;
};

/** The store's queued or running sync job, if any. */
export async function liveSyncJob(db: DbTx, storeId: string) {
  return db.job.findUnique({ where: { activeKey: storeSyncJobKey(storeId) }, select: { id: true, state: true } });
}

/**
 * Queues a manual sync of the store, or answers the queued or running one (a queued scheduled
 * one then starts at once and counts as this user's). Runs in the caller's transaction.
 */
export async function requestStoreSync(db: DbTx, services: Services, store: MarketplaceStore, userId: string | null, afterCommit: (effect: () => void) => void) {
  const record = async (progress: Progress) => {
    await saveProgress(db, store.organizationId, progress);
    afterCommit(() => publishProgress(services, store.organizationId, progress));
  };
  if (!store.enabled) throw conflict(STORE_DISABLED);
  const payload: SyncPayload = { organizationId: store.organizationId, storeId: store.id, triggeredBy: userId };
  for (let attempt = 0; attempt < 3; attempt++) {
    const jobId = await enqueueJob(db, { type: STORE_SYNC_JOB, payload, uniqueKey: storeSyncJobKey(store.id), maxAttempts: SYNC_JOB_ATTEMPTS });
    if (jobId) {
      const progress: Progress = { ...idleProgress(store.id), state: "queued", jobId, triggeredBy: userId };
      await record(progress);
      return { storeId: store.id, jobId, state: "queued" as const, coalesced: false, progress };
    }
    // Pull a queued (possibly jittered scheduled) job forward; a running one is answered as it is.
    await db.$executeRaw`
      UPDATE "Job" SET "runAt" = LEAST("runAt", ${Prisma.raw(`(now() AT TIME ZONE 'UTC')`)}),
                       "payload" = "payload" || ${JSON.stringify({ triggeredBy: userId })}::jsonb
      WHERE "activeKey" = ${storeSyncJobKey(store.id)} AND "state" = 'pending'`;
    const live = await liveSyncJob(db, store.id);
    if (live) {
      const current = progressOf(await db.marketplaceStore.findUniqueOrThrow({ where: { id: store.id } }));
      const progress = live.state === "pending" && current.state !== "running" ? { ...current, state: "queued" as const, jobId: live.id, triggeredBy: userId } : current;
      if (progress !== current) await record(progress);
      return { storeId: store.id, jobId: live.id, state: live.state === "running" ? "running" as const : "queued" as const, coalesced: true, progress };
    }
    // The live job ended between the two statements: queue again.
  }
  throw conflict("The marketplace store's sync job changed too often; try again");
}

export function marketplaceJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const syncJob = syncJobDefinition<SyncPayload>(STORE_SYNC_JOB, "marketplace sync", ({ services, job, signal }) =>
    runStoreSync(services, job.payload.organizationId, { triggeredBy: job.payload.triggeredBy ?? null, jobId: job.id, signal }));

  const schedule: ScheduleDefinition = {
    name: "marketplace-store.due-syncs",
    everyMs: 60_000,
    jitterMs: 10_000,
    run: ({ services }) => enqueueDueSyncs(services, "MarketplaceStore", {
      type: STORE_SYNC_JOB,
      keyOf: storeSyncJobKey,
      payloadOf: (row): SyncPayload => ({ organizationId: row.organizationId, storeId: row.id, triggeredBy: "scheduler" }),
      maxAttempts: syncJob.maxAttempts,
    }),
  };

  return { definitions: [syncJob], schedules: [schedule] };
}
