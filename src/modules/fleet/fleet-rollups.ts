// The whole fleet's telemetry series, precomputed: TelemetryFleetRollup holds, per
// organization, interval ('5m', '1h', '1d') and bucket, the row fleetBucketsSql (telemetry.ts)
// yields for that bucket over all the organization's devices, so a month of the whole fleet
// reads hundreds of rows whatever the fleet's size.
//
// Kept up to date in two steps:
// * The ingest statement (src/modules/telemetry/ingest.ts) marks the buckets its batch touches
//   in TelemetryFleetDirty (markFleetDirtySql), INSERT ... ON CONFLICT DO NOTHING: thousands of
//   devices hit the same few marks at once, and DO NOTHING on an existing, unlocked mark neither
//   writes nor waits.
// * The telemetry.fleet-rollups job (refreshFleetRollups) claims a bounded number of marks,
//   oldest buckets first, and recomputes them in bounded chunks, one statement per interval
//   for all the buckets of a chunk.
//
// Why a claim step and a lock (instead of deleting the marks in the recompute's transaction):
// * A batch whose DO NOTHING met an existing mark relies on that mark being recomputed after
//   the batch commits. So ingest holds a shared advisory lock (FLEET_MARK_LOCK) from the start
//   of its statement until it commits, and the claim takes it exclusively: when a claim commits, every
//   batch that met one of its marks has committed too, and the recompute (a later snapshot)
//   reads its rows. A batch arriving after the claim finds no unclaimed mark and inserts a new
//   one: the next run recomputes that bucket again.
// * The claim is its own short transaction (ingest waits on the lock only while it runs);
//   claimed marks stay in the table (claimed = true, a separate key from the unclaimed mark
//   ingest inserts) until the transaction that recomputes them commits and deletes them, so a
//   crash mid-recompute leaves them for the next run.
import type { Db, DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { INTERVALS } from "../telemetry/schemas.js";
import { EPOCH } from "../telemetry/rollups.js";
import { FLEET_INTERVALS, fleetBucketsSql, type FleetInterval } from "./telemetry.js";

/** Marks claimed at a time (a short transaction). */
export const FLEET_CLAIM_CHUNK = 500;
/**
 * Claimed buckets recomputed per transaction, by interval: a 5-minute or hourly bucket reads one
 * rollup row per reporting device, a day 24; so a transaction reads at most about 100 rows per
 * device (10 million at 100,000 devices, as after an upgrade), never a chunk too big to finish.
 */
export const FLEET_RECOMPUTE_CHUNK: Record<FleetInterval, number> = { "5m": 100, "1h": 100, "1d": 4 };
/** The advisory lock between ingest's marks (shared) and the job's claim (exclusive). */
const FLEET_MARK_LOCK = `hashtextextended('telemetry-fleet-dirty', 0)`;

/**
 * A FROM item for the ingest statement's first CTE: takes the lock shared, before the
 * statement locks any row (taken later, it could wait behind a claim that waits for another
 * batch that waits for one of this statement's rows: a deadlock).
 */
export const FLEET_MARK_LOCK_SHARED = `(SELECT pg_advisory_xact_lock_shared(${FLEET_MARK_LOCK})) AS fleet_mark_lock`;

/**
 * One data-modifying CTE body for the ingest statement (which holds FLEET_MARK_LOCK_SHARED):
 * marks every 5-minute, hourly and daily bucket of the rows of `source` (with "organizationId"
 * and "timestamp") for their organization.
 */
export function markFleetDirtySql(source: string): string {
  const steps = FLEET_INTERVALS.map((i) => `('${i}', INTERVAL '${INTERVALS[i]} seconds')`).join(", ");
  return `INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket")
    SELECT DISTINCT s."organizationId", i."interval", date_bin(i."step", s."timestamp", ${EPOCH})
      FROM ${source} s CROSS JOIN (VALUES ${steps}) AS i("interval", "step")
     ORDER BY 1, 2, 3
    ON CONFLICT DO NOTHING`;
}

/**
 * Marks every bucket holding rows of these devices in the per-device rollups (the retention
 * job, before it deletes a deleted device's rows: the whole-fleet figures must drop it too).
 */
export async function markDevicesFleetDirty(db: DbTx, deviceIds: string[]) {
  await db.$executeRaw`
    INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket")
    SELECT DISTINCT "organizationId", '5m', "bucket" FROM "TelemetryRollup5m" WHERE "deviceId" = ANY(${deviceIds}::uuid[])
    UNION
    SELECT DISTINCT "organizationId", '1h', "bucket" FROM "TelemetryRollup1h" WHERE "deviceId" = ANY(${deviceIds}::uuid[])
    UNION
    SELECT DISTINCT "organizationId", '1d', date_bin('1 day', "bucket", ${Prisma.raw(EPOCH)}) FROM "TelemetryRollup1h" WHERE "deviceId" = ANY(${deviceIds}::uuid[])
    ON CONFLICT DO NOTHING`;
}

type Mark = { organizationId: string; interval: FleetInterval; bucket: Date };

/**
 * Moves up to `limit` unclaimed marks, oldest buckets first, to claimed; returns how many.
 * Today's day bucket is left unclaimed while its row is younger than `dayRefreshMs`: ingest
 * marks it again every minute, and recomputing it reads every hourly row of the day (at
 * 100,000 devices near midnight, 2.4 million rows: 4.4 s, measured), where the 5-minute and
 * hourly buckets read one row per device. Past days are recomputed at once.
 */
async function claimMarks(prisma: Db, limit: number, dayRefreshMs: number): Promise<number> {
  return prisma.$transaction(async (tx) => {
    // Waits for the ingest batches in flight (they hold the lock shared until they commit).
    await tx.$executeRaw`SELECT pg_advisory_xact_lock(${Prisma.raw(FLEET_MARK_LOCK)})`;
    return tx.$executeRaw`
      WITH picked AS (
        SELECT d."organizationId", d."interval", d."bucket" FROM "TelemetryFleetDirty" d
         WHERE NOT d."claimed"
           AND NOT (d."interval" = '1d' AND d."bucket" > now() - INTERVAL '1 day' AND EXISTS (
             SELECT 1 FROM "TelemetryFleetRollup" f
              WHERE f."organizationId" = d."organizationId" AND f."interval" = '1d' AND f."bucket" = d."bucket"
                AND f."computedAt" > now() - ${dayRefreshMs} * INTERVAL '1 millisecond'))
         ORDER BY d."bucket" LIMIT ${limit}
      ), taken AS (
        DELETE FROM "TelemetryFleetDirty" d USING picked p
         WHERE d."organizationId" = p."organizationId" AND d."interval" = p."interval" AND d."bucket" = p."bucket" AND NOT d."claimed"
        RETURNING d."organizationId", d."interval", d."bucket"
      )
      INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket", "claimed")
      SELECT "organizationId", "interval", "bucket", TRUE FROM taken
      ON CONFLICT DO NOTHING`;
  });
}

/**
 * Recomputes one interval's claimed buckets in one statement: upserts the fleet row of each
 * bucket that still has devices, deletes the row of each bucket that has none.
 */
async function recomputeBuckets(tx: DbTx, interval: FleetInterval, marks: Mark[]) {
  const organizations = marks.map((m) => m.organizationId);
  const buckets = marks.map((m) => new Date(m.bucket).toISOString());
  const step = `${INTERVALS[interval]} seconds`;
  // The claimed buckets' span as constants too: the planner can then skip the rollup's
  // partitions outside it (the join condition alone makes it probe every partition per bucket).
  const first = buckets.reduce((a, b) => (a < b ? a : b));
  const last = buckets.reduce((a, b) => (a > b ? a : b));
  await tx.$executeRaw`
    WITH claimed AS (
      SELECT * FROM unnest(${organizations}::uuid[], ${buckets}::timestamptz[]) AS c("organizationId", "bucket")
    ), computed AS (
      ${fleetBucketsSql(interval, Prisma.sql`TRUE`, Prisma.sql`
        JOIN claimed c ON c."organizationId" = r."organizationId" AND r."bucket" >= c."bucket" AND r."bucket" < c."bucket" + ${step}::interval
         AND r."bucket" >= ${first}::timestamptz AND r."bucket" < ${last}::timestamptz + ${step}::interval`)}
    ), upserted AS (
      INSERT INTO "TelemetryFleetRollup" ("organizationId", "interval", "bucket", "devicesReporting", "cpuAvg", "cpuP95", "containersFailed", "devicesWithFailedContainers", "computedAt")
      SELECT "organizationId", ${interval}, "bucket", "devicesReporting", "cpuAvg", "cpuP95", "containersFailed", "devicesWithFailedContainers", now() FROM computed
      ON CONFLICT ("organizationId", "interval", "bucket") DO UPDATE SET
        "devicesReporting" = excluded."devicesReporting", "cpuAvg" = excluded."cpuAvg", "cpuP95" = excluded."cpuP95",
        "containersFailed" = excluded."containersFailed", "devicesWithFailedContainers" = excluded."devicesWithFailedContainers",
        "computedAt" = excluded."computedAt"
    )
    DELETE FROM "TelemetryFleetRollup" f USING claimed c
     WHERE f."organizationId" = c."organizationId" AND f."interval" = ${interval} AND f."bucket" = c."bucket"
       AND NOT EXISTS (SELECT 1 FROM computed x WHERE x."organizationId" = c."organizationId" AND x."bucket" = c."bucket")`;
}

/** Recomputes up to `limit` claimed marks of one interval (oldest first) and deletes them, in one transaction; returns how many. */
async function recomputeClaimed(prisma: Db, interval: FleetInterval, limit: number): Promise<number> {
  return prisma.$transaction(async (tx) => {
    const marks = await tx.$queryRaw<Mark[]>`
      SELECT "organizationId"::text, "interval", "bucket" FROM "TelemetryFleetDirty"
       WHERE "claimed" AND "interval" = ${interval} ORDER BY "bucket" LIMIT ${limit} FOR UPDATE`;
    if (marks.length === 0) return 0;
    await recomputeBuckets(tx, interval, marks);
    await tx.$executeRaw`
      DELETE FROM "TelemetryFleetDirty" d
       USING unnest(${marks.map((m) => m.organizationId)}::uuid[], ${marks.map((m) => new Date(m.bucket).toISOString())}::timestamptz[]) AS c("organizationId", "bucket")
       WHERE d."claimed" AND d."interval" = ${interval} AND d."organizationId" = c."organizationId" AND d."bucket" = c."bucket"`;
    return marks.length;
  }, { timeout: 120_000, maxWait: 10_000 });
}

export interface RefreshOptions {
  /** stop starting new chunks after this long (default 50 s); the next run continues */
  budgetMs?: number;
  /** recompute today's day bucket only when its row is older than this (default 0: always; the job passes TELEMETRY_FLEET_DAY_REFRESH_SECONDS) */
  dayRefreshMs?: number;
  signal?: AbortSignal;
}

/**
 * One run of telemetry.fleet-rollups: recomputes the claimed marks (a crashed run's first),
 * claims more when none are left, until there are no marks (or the budget ends).
 */
export async function refreshFleetRollups(prisma: Db, options: RefreshOptions = {}): Promise<{ buckets: number; complete: boolean }> {
  const deadline = Date.now() + (options.budgetMs ?? 50_000);
  let buckets = 0;
  for (;;) {
    let done = 0;
    for (const interval of FLEET_INTERVALS) done += await recomputeClaimed(prisma, interval, FLEET_RECOMPUTE_CHUNK[interval]);
    buckets += done;
    if (done === 0 && (await claimMarks(prisma, FLEET_CLAIM_CHUNK, options.dayRefreshMs ?? 0)) === 0) return { buckets, complete: true };
    if (Date.now() >= deadline || options.signal?.aborted) return { buckets, complete: false };
  }
}
