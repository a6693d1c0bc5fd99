// Scheduled Git syncs: a schedule finds the enabled registries whose syncIntervalMinutes has
// elapsed since their last attempt and enqueues one sync job per registry (unique key per
// registry, so a registry never has two), each with a jitter that spreads them out.
import { TRPCError } from "@trpc/server";
import { Prisma } from "../../../generated/prisma/client.js";
import type { Config } from "../../../config.js";
import { enqueueJob } from "../../../jobs/queue.js";
import type { JobDefinition, ScheduleDefinition } from "../../../jobs/types.js";
import { syncGitRegistry } from "./sync.js";

export const GIT_SYNC_JOB = "git-registry.sync";
export const gitSyncJobKey = (registryId: string) => `${GIT_SYNC_JOB}:${registryId}`;

/** Jitter of a scheduled sync: up to a tenth of its interval, at most five minutes. */
export function syncJitterSeconds(intervalMinutes: number, random = Math.random): number {
  return random() * Math.min(intervalMinutes * 6, 300);
}

interface SyncPayload {
  organizationId: string;
  registryId: string;
}

export function gitRegistryJobs(config: Config): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const syncJob: JobDefinition<SyncPayload> = {
    type: GIT_SYNC_JOB,
    maxAttempts: 3,
    timeoutMs: 2 * config.GIT_SYNC_TIMEOUT_SECONDS * 1000 + 60_000,
    backoff: { baseMs: 30_000, maxMs: 600_000 },
    async run({ services, job, logger }) {
      try {
        const result = await syncGitRegistry(services, job.payload.organizationId, job.payload.registryId, { principal: null, request: null });
        // A failed fetch is recorded on the registry; the next interval tries again.
        if (!result.success) logger.info({ registryId: job.payload.registryId, error: result.errors[0] }, "scheduled git sync failed");
      } catch (err) {
        // Deleted, disabled or already syncing: nothing to do. 503 (catalog not writable): retry.
        if (err instanceof TRPCError && (err.code === "NOT_FOUND" || err.code === "CONFLICT")) return;
        throw err;
      }
    },
  };

  const schedule: ScheduleDefinition = {
    name: "git-registry.due-syncs",
    everyMs: 60_000,
    jitterMs: 10_000,
    async run({ services }) {
      const due = await services.prisma.$queryRaw<Array<{ id: string; organizationId: string; syncIntervalMinutes: number }>>`
        SELECT r."id", r."organizationId", r."syncIntervalMinutes"
        FROM "GitRegistry" r JOIN "Organization" o ON o."id" = r."organizationId"
        WHERE r."enabled" AND r."syncIntervalMinutes" > 0 AND o."status" = 'active'
          AND (r."lastSyncAttemptAt" IS NULL
               OR r."lastSyncAttemptAt" + make_interval(mins => r."syncIntervalMinutes") <= ${Prisma.raw(`(now() AT TIME ZONE 'UTC')`)})`;
      for (const registry of due) {
        await enqueueJob(services.prisma, {
          type: GIT_SYNC_JOB,
          payload: { organizationId: registry.organizationId, registryId: registry.id },
          uniqueKey: gitSyncJobKey(registry.id),
          delaySeconds: syncJitterSeconds(registry.syncIntervalMinutes),
          maxAttempts: syncJob.maxAttempts,
        });
      }
    },
  };

  return { definitions: [syncJob], schedules: [schedule] };
}
