// Scheduled OCI syncs, the Git registries' scheme (../git/jobs.ts): a schedule finds the enabled
// registries of active organizations whose syncIntervalMinutes has elapsed since their last
// attempt and enqueues one sync job per registry (unique key per registry), with the same jitter.
import { TRPCError } from "@trpc/server";
import { Prisma } from "../../../generated/prisma/client.js";
import { enqueueJob } from "../../../jobs/queue.js";
import type { JobContext, JobDefinition, ScheduleDefinition } from "../../../jobs/types.js";
import type { Services } from "../../../services.js";
import { syncJitterSeconds } from "../git/jobs.js";
import { syncOciRegistry } from "./sync.js";

export const OCI_SYNC_JOB = "oci-registry.sync";
export const ociSyncJobKey = (registryId: string) => `${OCI_SYNC_JOB}:${registryId}`;

interface SyncPayload {
  organizationId: string;
  registryId: string;
}

export function ociRegistryJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const syncJob = syncJobDefinition<SyncPayload>(OCI_SYNC_JOB, "oci sync", ({ services, job }) =>
    syncOciRegistry(services, job.payload.organizationId, job.payload.registryId, { principal: null, request: null }));

  const schedule: ScheduleDefinition = {
    name: "oci-registry.due-syncs",
    everyMs: 60_000,
    jitterMs: 10_000,
    run: ({ services }) => enqueueDueSyncs(services, "OciRegistry", {
      type: OCI_SYNC_JOB,
      keyOf: ociSyncJobKey,
      payloadOf: (row) => ({ organizationId: row.organizationId, registryId: row.id }),
      maxAttempts: syncJob.maxAttempts,
    }),
  };

  return { definitions: [syncJob], schedules: [schedule] };
}

/**
 * The job of one sync (OCI registry, marketplace store): 3 attempts with back-off. A failed
 * run is recorded by the sync itself (the next interval tries again); a target that is gone,
 * disabled or already syncing ends the job; anything else (503: the catalog could not be
 * written) is retried.
 */
export const SYNC_JOB_ATTEMPTS = 3;

export function syncJobDefinition<P>(type: string, label: string, sync: (ctx: JobContext<P>) => Promise<{ status: string; errors: unknown }>): JobDefinition<P> {
  return {
    type,
    maxAttempts: SYNC_JOB_ATTEMPTS,
    timeoutMs: 11 * 60_000,
    backoff: { baseMs: 30_000, maxMs: 600_000 },
    async run(ctx) {
      try {
        const record = await sync(ctx);
        if (record.status !== "success") ctx.logger.info({ job: ctx.job.payload, error: (record.errors as string[])[0] }, `${label} failed`);
      } catch (err) {
        if (err instanceof TRPCError && (err.code === "NOT_FOUND" || err.code === "CONFLICT")) return;
        throw err;
      }
    },
  };
}

interface DueRow {
  id: string;
  organizationId: string;
  syncIntervalMinutes: number;
}

/**
 * Enqueues one sync job per row of a sync table (OciRegistry, MarketplaceStore: columns
 * enabled, syncIntervalMinutes, lastSyncAttemptAt) whose interval has elapsed since its last
 * attempt, in active organizations; unique key per row, start delayed by the sync jitter.
 */
export async function enqueueDueSyncs(
  services: Services,
  table: "OciRegistry" | "MarketplaceStore",
  job: { type: string; keyOf: (id: string) => string; payloadOf: (row: DueRow) => Record<string, unknown>; maxAttempts?: number },
): Promise<void> {
  const due = await services.prisma.$queryRaw<DueRow[]>`
    SELECT r."id", r."organizationId", r."syncIntervalMinutes"
    FROM ${Prisma.raw(`"${table}"`)} r JOIN "Organization" o ON o."id" = r."organizationId"
    WHERE r."enabled" AND r."syncIntervalMinutes" > 0 AND o."status" = 'active'
      AND (r."lastSyncAttemptAt" IS NULL
           OR r."lastSyncAttemptAt" + make_interval(mins => r."syncIntervalMinutes") <= ${Prisma.raw(`(now() AT TIME ZONE 'UTC')`)})`;
  for (const row of due) {
    await enqueueJob(services.prisma, {
      type: job.type,
      payload: job.payloadOf(row),
      uniqueKey: job.keyOf(row.id),
      delaySeconds: syncJitterSeconds(row.syncIntervalMinutes),
      maxAttempts: job.maxAttempts,
    });
  }
}
