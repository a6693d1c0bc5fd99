// The retention of shell recordings: what a person typed and read on a device is kept as long as
// its organization says (settings.remoteAccess.recordingRetentionDays, 90 days by default), and
// a recording whose organization is gone goes at once. The session rows stay, like the audit
// trail they belong to (who reached which device, when, how many bytes): only the recorded
// screen goes. One statement per run, one run per period across all processes.
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import type { DbTx } from "../../db/client.js";
import { REMOTE_ACCESS_DEFAULTS, RECORDING_RETENTION_MAX_DAYS } from "./settings.js";

const EVERY_MS = 60 * 60_000;

/** Deletes the recordings past their organization's retention; how many. */
export async function pruneRecordings(db: DbTx): Promise<number> {
  // The stored setting is read as remoteAccessOf reads it: a whole number in range, else the default.
  return db.$executeRaw`
    WITH retention AS (
      -- CASE tries its branches in order: text is never cast to a number
      SELECT o."id", CASE WHEN jsonb_typeof(v) IS DISTINCT FROM 'number' THEN ${REMOTE_ACCESS_DEFAULTS.recordingRetentionDays}::int
                          WHEN (v::text)::numeric = trunc((v::text)::numeric) AND (v::text)::numeric BETWEEN 1 AND ${RECORDING_RETENTION_MAX_DAYS}
                          THEN (v::text)::int ELSE ${REMOTE_ACCESS_DEFAULTS.recordingRetentionDays}::int END AS "days"
      FROM "Organization" o, LATERAL (SELECT o."settings" -> 'remoteAccess' -> 'recordingRetentionDays' AS v) setting
    )
    DELETE FROM "RemoteSessionRecording" r
    USING "RemoteSession" s
    LEFT JOIN retention k ON k."id" = s."organizationId"
    WHERE r."sessionId" = s."id"
      AND (k."id" IS NULL OR r."createdAt" < now() - make_interval(days => k."days"))`;
}

export function remoteSessionJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const retention: ScheduleDefinition = {
    name: "remote-sessions.recording-retention",
    everyMs: EVERY_MS,
    jitterMs: 60_000,
    timeoutMs: 120_000,
    run: async ({ services, logger }) => {
      const removed = await pruneRecordings(services.prisma);
      if (removed > 0) logger.info({ removed }, "remote session recordings past their retention removed");
    },
  };
  return { definitions: [], schedules: [retention] };
}
