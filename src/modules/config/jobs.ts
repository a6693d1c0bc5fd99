// Config sources in the background (docs/config-as-code.md): one schedule finds every source
// that is due, in one statement, and enqueues one sync job per source (unique key per source,
// so a source never has two); the job fetches and applies as the source. Due: polling on and
// the interval passed since the last sync, or a verified webhook push asked for a sync
// (syncRequestedAt) whose job was coalesced with one already running.
import { TRPCError } from "@trpc/server";
import { Prisma } from "../../generated/prisma/client.js";
import type { Config } from "../../config.js";
import type { DbTx } from "../../db/client.js";
import { enqueueJob } from "../../jobs/queue.js";
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { syncSource } from "./sources.js";

export const CONFIG_SYNC_JOB = "config-source.sync";
export const CONFIG_DUE_SCHEDULE = "config-source.due-syncs";
export const configSyncJobKey = (sourceId: string) => `${CONFIG_SYNC_JOB}:${sourceId}`;
const MAX_ATTEMPTS = 2;

interface SyncPayload {
  organizationId: string;
  sourceId: string;
  trigger: "webhook" | "schedule";
  /** the webhook's style (github, gitlab, gitea) */
  style?: string;
}

/** Asks for a sync of the source now (a verified webhook push); a sync already pending takes it. */
export async function requestSync(db: DbTx, organizationId: string, sourceId: string, style: string): Promise<void> {
  await db.configSource.update({ where: { id: sourceId }, data: { syncRequestedAt: new Date() } });
  await enqueueJob(db, {
    type: CONFIG_SYNC_JOB, payload: { organizationId, sourceId, trigger: "webhook", style } satisfies SyncPayload,
    uniqueKey: configSyncJobKey(sourceId), maxAttempts: MAX_ATTEMPTS,
  });
}

/** Every source due now, enqueued by one INSERT ... SELECT (a source with a pending or running job is skipped by the unique key). */
export async function enqueueDueSyncs(db: DbTx): Promise<number> {
  const now = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);
  return db.$executeRaw`
    INSERT INTO "Job" ("id", "type", "payload", "uniqueKey", "activeKey", "state", "attempts", "maxAttempts", "runAt", "createdAt", "updatedAt")
    SELECT gen_random_uuid(), ${CONFIG_SYNC_JOB},
           jsonb_build_object('organizationId', s."organizationId", 'sourceId', s."id",
                              'trigger', CASE WHEN s."syncRequestedAt" IS NOT NULL THEN 'webhook' ELSE 'schedule' END),
           ${`${CONFIG_SYNC_JOB}:`} || s."id", ${`${CONFIG_SYNC_JOB}:`} || s."id", 'pending', 0, ${MAX_ATTEMPTS}::int, ${now}, ${now}, ${now}
    FROM "ConfigSource" s JOIN "Organization" o ON o."id" = s."organizationId"
    WHERE o."status" = 'active'
      AND (s."syncRequestedAt" IS NOT NULL
           OR (s."pollIntervalSeconds" > 0
               AND (s."lastSyncAt" IS NULL OR s."lastSyncAt" + make_interval(secs => s."pollIntervalSeconds") <= now())))
    ON CONFLICT ("activeKey") DO NOTHING`;
}

export function configSourceJobs(config: Config): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const syncJob: JobDefinition<SyncPayload> = {
    type: CONFIG_SYNC_JOB,
    maxAttempts: MAX_ATTEMPTS,
    timeoutMs: 2 * config.GIT_SYNC_TIMEOUT_SECONDS * 1000 + 60_000,
    backoff: { baseMs: 10_000, maxMs: 120_000 },
    async run({ services, job, logger }) {
      const { organizationId, sourceId, trigger, style } = job.payload;
      try {
        const answer = await syncSource(services, trigger === "webhook" ? { type: "webhook", style: style ?? "webhook" } : { type: "schedule" }, organizationId, sourceId, { skipSameCommit: true });
        if (answer.status !== "applied" && answer.status !== "unchanged") logger.info({ sourceId, status: answer.status }, "config source sync not applied");
      } catch (err) {
        // The source was deleted meanwhile: nothing to do.
        if (err instanceof TRPCError && err.code === "NOT_FOUND") return;
        throw err;
      }
    },
  };

  const schedule: ScheduleDefinition = {
    name: CONFIG_DUE_SCHEDULE,
    // often enough that a webhook push coalesced with a running sync follows within seconds;
    // the polls themselves are per source (pollIntervalSeconds, at least 30)
    everyMs: 15_000,
    jitterMs: 2_000,
    async run({ services }) {
      await enqueueDueSyncs(services.prisma);
    },
  };

  return { definitions: [syncJob], schedules: [schedule] };
}
