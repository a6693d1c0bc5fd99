// The Job table's SQL. Times come from the database clock (UTC), so processes whose clocks
// differ still agree on what is due and which locks have expired.
import { randomUUID } from "node:crypto";
import type { DbTx } from "../db/client.js";
import { Prisma } from "../generated/prisma/client.js";
import type { EnqueueSpec } from "./types.js";

const NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);
// Truncated to the millisecond the column keeps: stored as is, timestamp(3) rounds to the
// nearest millisecond, so a job enqueued to run now could be stored up to 0.5 ms in the future
// and a claim in the next half millisecond would not see it due (a flake of test/unit/jobs.test.ts).
const secondsFromNow = (seconds: number) => Prisma.sql`date_trunc('milliseconds', ${NOW} + make_interval(secs => ${seconds}::double precision))`;

export interface ClaimedJob {
  id: string;
  type: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  uniqueKey: string | null;
  /** seconds between the job's runAt and its claim, by the database's clock (the service's metrics) */
  lagSeconds: number;
}

/**
 * Adds a job; with a uniqueKey it is a no-op while another job of that key is pending or
 * running (the unique index on activeKey). Usable inside a transaction: the job then exists
 * exactly when the change that asked for it does. Returns the new job's id, or null.
 */
export async function enqueueJob(db: DbTx, spec: EnqueueSpec): Promise<string | null> {
  const rows = await db.$queryRaw<Array<{ id: string }>>`
    INSERT INTO "Job" ("id", "type", "payload", "uniqueKey", "activeKey", "state", "attempts", "maxAttempts", "runAt", "createdAt", "updatedAt")
    VALUES (${randomUUID()}::uuid, ${spec.type}, ${JSON.stringify(spec.payload ?? {})}::jsonb, ${spec.uniqueKey ?? null}, ${spec.uniqueKey ?? null},
            'pending', 0, ${spec.maxAttempts ?? 5}::int, ${secondsFromNow(spec.delaySeconds ?? 0)}, ${NOW}, ${NOW})
    ON CONFLICT ("activeKey") DO NOTHING
    RETURNING "id"`;
  return rows[0]?.id ?? null;
}

/**
 * Takes up to `limit` due jobs of these types: pending ones whose time has come, and running
 * ones whose worker stopped renewing its lock (a crashed process). FOR UPDATE SKIP LOCKED lets
 * several processes claim at once without waiting for, or taking, each other's rows.
 */
export async function claimJobs(db: DbTx, workerId: string, types: string[], limit: number, lockSeconds: number): Promise<ClaimedJob[]> {
  if (types.length === 0 || limit <= 0) return [];
  return db.$queryRaw<ClaimedJob[]>`
    UPDATE "Job" SET "state" = 'running', "lockedBy" = ${workerId}, "lockedUntil" = ${secondsFromNow(lockSeconds)},
                     "attempts" = "attempts" + 1, "updatedAt" = ${NOW}
    WHERE "id" IN (
      SELECT "id" FROM "Job"
      WHERE "type" IN (${Prisma.join(types)})
        AND (("state" = 'pending' AND "runAt" <= ${NOW}) OR ("state" = 'running' AND "lockedUntil" < ${NOW}))
      ORDER BY "runAt" ASC
      LIMIT ${limit}::int
      FOR UPDATE SKIP LOCKED)
    RETURNING "id", "type", "payload", "attempts", "maxAttempts", "uniqueKey",
              GREATEST(0, EXTRACT(EPOCH FROM (${NOW} - "runAt")))::float8 AS "lagSeconds"`;
}

/** Keeps the locks of jobs this worker is still running. */
export async function renewLocks(db: DbTx, workerId: string, ids: string[], lockSeconds: number): Promise<void> {
  if (ids.length === 0) return;
  await db.$executeRaw`
    UPDATE "Job" SET "lockedUntil" = ${secondsFromNow(lockSeconds)}
    WHERE "id" IN (${Prisma.join(ids.map((id) => Prisma.sql`${id}::uuid`))}) AND "lockedBy" = ${workerId} AND "state" = 'running'`;
}

export async function completeJob(db: DbTx, workerId: string, id: string): Promise<void> {
  await db.$executeRaw`
    UPDATE "Job" SET "state" = 'succeeded', "activeKey" = NULL, "lockedBy" = NULL, "lockedUntil" = NULL, "lastError" = NULL,
                     "finishedAt" = ${NOW}, "updatedAt" = ${NOW}
    WHERE "id" = ${id}::uuid AND "lockedBy" = ${workerId} AND "state" = 'running'`;
}

/** Back to pending after `retryInSeconds`, or failed for good when null. */
export async function failJob(db: DbTx, workerId: string, id: string, error: string, retryInSeconds: number | null): Promise<void> {
  const message = error.slice(0, 2000);
  if (retryInSeconds === null) {
    await db.$executeRaw`
      UPDATE "Job" SET "state" = 'failed', "activeKey" = NULL, "lockedBy" = NULL, "lockedUntil" = NULL, "lastError" = ${message},
                       "finishedAt" = ${NOW}, "updatedAt" = ${NOW}
      WHERE "id" = ${id}::uuid AND "lockedBy" = ${workerId} AND "state" = 'running'`;
  } else {
    // activeKey stays: the retry is still the target's one live job.
    await db.$executeRaw`
      UPDATE "Job" SET "state" = 'pending', "lockedBy" = NULL, "lockedUntil" = NULL, "lastError" = ${message},
                       "runAt" = ${secondsFromNow(retryInSeconds)}, "updatedAt" = ${NOW}
      WHERE "id" = ${id}::uuid AND "lockedBy" = ${workerId} AND "state" = 'running'`;
  }
}

/** Deletes ended jobs older than `days`; the table keeps recent history only. */
export async function purgeEndedJobs(db: DbTx, days: number): Promise<number> {
  return db.$executeRaw`
    DELETE FROM "Job" WHERE "state" IN ('succeeded', 'failed') AND "finishedAt" < ${NOW} - make_interval(days => ${days}::int)`;
}
