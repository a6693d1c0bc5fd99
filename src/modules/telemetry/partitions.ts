// Time partitions of the time-series tables (raw telemetry snapshots: one per UTC day):
// PostgreSQL declarative partitioning by range of time, one partition per period named
// `<table>_pYYYYMMDD` after its first day, plus a DEFAULT partition that catches any row whose
// period has no partition yet. The SQL function fleet_ensure_partition (migration
// 20261125150000_telemetry_partitions) makes one partition and moves its period's rows out of
// the default partition, atomically.
//
// Who makes partitions:
//  - the `telemetry.partitions` schedule, every hour, for yesterday to PARTITION_DAYS_AHEAD
//    days ahead, so ingest normally finds its partition ready;
//  - ingest itself, for a day it has not seen yet (a backlog upload of old data), before it
//    inserts. If that fails (a lock held too long), the rows go to the default partition and
//    the next creation of that day moves them: a missing partition never refuses ingest.
// Retention drops whole partitions (dropExpiredPartitions): constant time whatever the size.
import type { RawDatabase } from "../../db/adapters.js";
import type { Logger } from "../../lib/logger.js";

export type PartitionedTable = "TelemetrySnapshot";

export const DAY_MS = 86_400_000;
/** How many days ahead of today the schedule keeps partitions ready. */
export const PARTITION_DAYS_AHEAD = 3;
/** DDL on the ingest path waits at most this long for a lock, then leaves the rows to the default partition. */
const INGEST_LOCK_TIMEOUT_MS = 2_000;
/** A retention drop waits at most this long for the parent's lock (ingest keeps running meanwhile). */
const DROP_LOCK_TIMEOUT_MS = 5_000;

/** Days (as days since the epoch) known to have a partition, per database and table. */
const known = new WeakMap<RawDatabase, Map<PartitionedTable, Set<number>>>();

function knownDays(db: RawDatabase, table: PartitionedTable): Set<number> {
  let tables = known.get(db);
  if (!tables) known.set(db, (tables = new Map()));
  let days = tables.get(table);
  if (!days) tables.set(table, (days = new Set()));
  return days;
}

export const dayOf = (instant: number) => Math.floor(instant / DAY_MS);
const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
export const partitionName = (table: PartitionedTable, day: number) => `${table}_p${isoDay(day).replace(/-/g, "")}`;

/**
 * Makes the partitions of `days` that do not exist yet (one statement, its own transaction, bounded lock wait).
 * Returns how many it created.
 */
export async function ensureDayPartitions(db: RawDatabase, table: PartitionedTable, days: number[], lockTimeoutMs = INGEST_LOCK_TIMEOUT_MS): Promise<number> {
  const cache = knownDays(db, table);
  const missing = [...new Set(days)].filter((d) => !cache.has(d)).sort((a, b) => a - b);
  if (missing.length === 0) return 0;
  // One statement: its own transaction, so PGlite's single connection is never left inside one.
  const rows = await db.query<{ created: boolean }>(
    `SELECT "fleet_ensure_partition"($1, d, d + 1, $3) AS "created" FROM unnest($2::date[]) AS d`,
    [table, missing.map(isoDay), Math.max(1, Math.round(lockTimeoutMs))],
  );
  const created = rows.filter((r) => r.created).length;
  for (const d of missing) cache.add(d);
  return created;
}

/**
 * Before an insert: makes sure the days of `timestamps` have their partitions. Never throws:
 * without a partition the rows land in the default partition, which is correct, only slower
 * to prune; the next creation of that day moves them.
 */
export async function preparePartitionsFor(db: RawDatabase, table: PartitionedTable, timestamps: string[], logger?: Logger): Promise<void> {
  const cache = knownDays(db, table);
  let days: number[] | undefined;
  for (const t of timestamps) {
    const day = dayOf(Date.parse(t));
    if (!cache.has(day)) (days ??= []).push(day);
  }
  if (!days) return;
  await ensureDayPartitions(db, table, days).catch((err: Error) =>
    logger?.warn({ err: err.message, table }, "could not create a partition now; the rows go to the default partition"),
  );
}

/** Yesterday to `daysAhead` days after today (the scheduled job). */
export async function ensureUpcomingPartitions(db: RawDatabase, table: PartitionedTable, now: Date, daysAhead = PARTITION_DAYS_AHEAD): Promise<number> {
  const today = dayOf(now.getTime());
  const days = Array.from({ length: daysAhead + 2 }, (_, i) => today - 1 + i);
  return ensureDayPartitions(db, table, days, DROP_LOCK_TIMEOUT_MS);
}

export interface DayPartition {
  name: string;
  day: number;
}

/** The daily partitions of `table`, oldest first (the default partition is not one of them). */
export async function listDayPartitions(db: RawDatabase, table: PartitionedTable): Promise<DayPartition[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname AS "name" FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [`"${table}"`],
  );
  const pattern = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`);
  return rows
    .map((r) => {
      const m = pattern.exec(r.name);
      return m ? { name: r.name, day: dayOf(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]))) } : undefined;
    })
    .filter((p): p is DayPartition => p !== undefined)
    .sort((a, b) => a.day - b.day);
}

/**
 * Drops every daily partition whose whole day is older than `cutoff`: a row is kept until the
 * end of its day plus the retention, i.e. between N and N+1 days. Each drop is one statement,
 * its own short transaction (a crash leaves the partition whole or gone). Returns the names
 * dropped.
 */
export async function dropExpiredPartitions(db: RawDatabase, table: PartitionedTable, cutoff: Date, mayContinue: () => boolean = () => true): Promise<string[]> {
  const dropped: string[] = [];
  for (const partition of await listDayPartitions(db, table)) {
    if ((partition.day + 1) * DAY_MS > cutoff.getTime() || !mayContinue()) break;
    await db.query(`SELECT "fleet_drop_partition"($1, $2, $3)`, [table, partition.name, DROP_LOCK_TIMEOUT_MS]);
    knownDays(db, table).delete(partition.day);
    dropped.push(partition.name);
  }
  return dropped;
}
