// Scheduled OCI syncs, the Git registries' scheme (../git/jobs.ts): a schedule finds the enabled
// registries of active organizations whose syncIntervalMinutes has elapsed since their last
// attempt and enqueues one sync job per registry (unique key per registry), with the same jitter.
import { TRPCError } from "@trpc/server";
import { Prisma } from "../../../generated/prisma/client.js";
import { enqueueJob } from "../../../jobs/queue.js";
import type { JobDefinition, ScheduleDefinition } from "../../../jobs/types.js";
import { syncJitterSeconds } from "../git/jobs.js";
import { syncOciRegistry } from "./sync.js";

export const OCI_SYNC_JOB = "oci-registry.sync";
export const ociSyncJobKey = (registryId: string) => `${OCI_SYNC_JOB}:${registryId}`;

interface SyncPayload {
  organizationId: string;
  registryId: string;
}

export function ociRegistryJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const syncJob: JobDefinition<SyncPayload> = {
    type: OCI_SYNC_JOB,
    maxAttempts: 3,
    timeoutMs: 11 * 60_000,
    backoff: { baseMs: 30_000, maxMs: 600_000 },
    async run({ services, job, logger }) {
      try {
        const record = await syncOciRegistry(services, job.payload.organizationId, job.payload.registryId, { principal: null, request: null });
        // A failed run is recorded on the registry and in its history; the next interval tries again.
        if (record.status !== "success") logger.info({ registryId: job.payload.registryId, error: (record.errors as string[])[0] }, "scheduled oci sync failed");
      } catch (err) {
        // Deleted, disabled or already syncing: nothing to do. 503 (catalog not writable): retry.
        if (err instanceof TRPCError && (err.code === "NOT_FOUND" || err.code === "CONFLICT")) return;
        throw err;
      }
    },
  };

  const schedule: ScheduleDefinition = {
    name: "oci-registry.due-syncs",
    everyMs: 60_000,
    jitterMs: 10_000,
    async run({ services }) {
      const due = await services.prisma.$queryRaw<Array<{ id: string; organizationId: string; syncIntervalMinutes: number }>>`
        SELECT r."id", r."organizationId", r."syncIntervalMinutes"
        FROM "OciRegistry" r JOIN "Organization" o ON o."id" = r."organizationId"
        WHERE r."enabled" AND r."syncIntervalMinutes" > 0 AND o."status" = 'active'
          AND (r."lastSyncAttemptAt" IS NULL
               OR r."lastSyncAttemptAt" + make_interval(mins => r."syncIntervalMinutes") <= ${Prisma.raw(`(now() AT TIME ZONE 'UTC')`)})`;
      for (const registry of due) {
        await enqueueJob(services.prisma, {
          type: OCI_SYNC_JOB,
          payload: { organizationId: registry.organizationId, registryId: registry.id },
          uniqueKey: ociSyncJobKey(registry.id),
          delaySeconds: syncJitterSeconds(registry.syncIntervalMinutes),
          maxAttempts: syncJob.maxAttempts,
        });
      }
    },
  };

  return { definitions: [syncJob], schedules: [schedule] };
}
