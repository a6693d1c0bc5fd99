// Time partitions of the time-series tables (raw telemetry snapshots, 5-minute rollups and
// device log lines: one per UTC day; hourly rollups: one per calendar month):
// PostgreSQL declarative partitioning by range of time, one partition per period named
// `<table>_pYYYYMMDD` after its first day, plus a DEFAULT partition that catches any row whose
// period has no partition yet. The SQL function fleet_ensure_partition (migration
// 20261125150000_telemetry_partitions; logs since 20261126054000_log_partitions) makes one
// partition and moves its period's rows out of the default partition, atomically.
//
// Who makes partitions:
//  - the `telemetry.partitions` schedule, every hour, for yesterday to PARTITION_DAYS_AHEAD
//    days ahead, so ingest normally finds its partition ready;
//  - ingest itself (telemetry and logs), for a day it has not seen yet (a backlog upload of
//    old data), before it inserts. If that fails (a lock held too long), the rows go to the
//    default partition and the next creation of that day moves them: a missing partition
//    never refuses ingest.
// Retention drops whole partitions (dropExpiredPartitions): constant time whatever the size.
import type { RawDatabase } from "../../db/adapters.js";
import type { Logger } from "../../lib/logger.js";

type Period = "day" | "month";
const PERIOD = { TelemetrySnapshot: "day", TelemetryRollup5m: "day", TelemetryRollup1h: "month", DeviceLog: "day" } satisfies Record<string, Period>;
export type PartitionedTable = keyof typeof PERIOD;
/**
 * Tables whose rows ingest rewrites (each device's current rollup rows, every snapshot) keep a
 * tenth of each page free, so that the update stays on the row's page (HOT): migration
 * 20261126173000_in_place_update_room. The rest are insert-only and fill their pages.
 */
const FILLFACTOR: Record<PartitionedTable, number> = { TelemetrySnapshot: 100, TelemetryRollup5m: 90, TelemetryRollup1h: 90, DeviceLog: 100 };
/** Every partitioned table: the schedule keeps the coming periods of each ready. */
const PARTITIONED_TABLES = Object.keys(PERIOD) as PartitionedTable[];

export const DAY_MS = 86_400_000;
/** How many days ahead of today the schedule keeps partitions ready. */
export const PARTITION_DAYS_AHEAD = 3;
/** DDL on the ingest path waits at most this long for a lock, then leaves the rows to the default partition. */
const INGEST_LOCK_TIMEOUT_MS = 2_000;
/** A retention drop waits at most this long for the parent's lock (ingest keeps running meanwhile). */
const DROP_LOCK_TIMEOUT_MS = 5_000;

/** Partitions (by their first day, in days since the epoch) known to exist, per database and table. */
const known = new WeakMap<RawDatabase, Map<PartitionedTable, Set<number>>>();

function knownStarts(db: RawDatabase, table: PartitionedTable): Set<number> {
  let tables = known.get(db);
  if (!tables) known.set(db, (tables = new Map()));
  let starts = tables.get(table);
  if (!starts) tables.set(table, (starts = new Set()));
  return starts;
}

export const dayOf = (instant: number) => Math.floor(instant / DAY_MS);
const isoDay = (day: number) => new Date(day * DAY_MS).toISOString().slice(0, 10);
/** The first day of the partition holding `day`. */
export function periodStart(table: PartitionedTable, day: number): number {
  if (PERIOD[table] === "day") return day;
  const d = new Date(day * DAY_MS);
  return dayOf(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}
/** The first day after the partition starting on `start`. */
export function periodEnd(table: PartitionedTable, start: number): number {
  if (PERIOD[table] === "day") return start + 1;
  const d = new Date(start * DAY_MS);
  return dayOf(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}
/** The partition of `table` holding `day`. */
export const partitionName = (table: PartitionedTable, day: number) => `${table}_p${isoDay(periodStart(table, day)).replace(/-/g, "")}`;

/**
 * Makes the partitions holding `days` that do not exist yet (one statement, its own
 * transaction, bounded lock wait). Returns how many it created.
 */
export async function ensurePartitions(db: RawDatabase, table: PartitionedTable, days: number[], lockTimeoutMs = INGEST_LOCK_TIMEOUT_MS): Promise<number> {
  const cache = knownStarts(db, table);
  const missing = [...new Set(days.map((d) => periodStart(table, d)))].filter((d) => !cache.has(d)).sort((a, b) => a - b);
  if (missing.length === 0) return 0;
  // One statement: its own transaction, so PGlite's single connection is never left inside one.
  const rows = await db.query<{ created: boolean }>(
    `SELECT "fleet_ensure_partition"($1, p.lo, p.hi, $4, $5) AS "created" FROM unnest($2::date[], $3::date[]) AS p(lo, hi)`,
    [table, missing.map(isoDay), missing.map((d) => isoDay(periodEnd(table, d))), Math.max(1, Math.round(lockTimeoutMs)), FILLFACTOR[table]],
  );
  const created = rows.filter((r) => r.created).length;
  for (const d of missing) cache.add(d);
  return created;
}

/**
 * The oldest instant a table with a retention of `retentionDays` still keeps: the start of
 * the oldest day whose partition retention has not dropped (dropExpiredPartitions drops a day
 * once it ended `retentionDays` ago). null: kept forever.
 */
export function retentionCutoff(retentionDays: number, now = Date.now()): Date | null {
  if (retentionDays === 0) return null;
  return new Date(Math.floor((now - retentionDays * DAY_MS) / DAY_MS) * DAY_MS);
}

/**
 * Before an insert: makes sure the periods of `timestamps` have their partitions in each of
 * `tables`. Never throws: without a partition the rows land in the default partition, which
 * is correct, only slower to prune; the next creation of that period moves them. With
 * `retentionDays`, days retention has already given up get no partition (the next retention
 * run would drop it): their rows go to the default partition, which retention prunes by age.
 */
export async function preparePartitionsFor(
  db: RawDatabase, tables: PartitionedTable[], timestamps: string[], options: { retentionDays?: number; logger?: Logger } = {},
): Promise<void> {
  const cutoff = retentionCutoff(options.retentionDays ?? 0)?.getTime() ?? -Infinity;
  const days = new Set(timestamps.map((t) => Date.parse(t)).filter((t) => t >= cutoff).map(dayOf));
  for (const table of tables) {
    const cache = knownStarts(db, table);
    const missing = [...days].filter((d) => !cache.has(periodStart(table, d)));
    if (missing.length === 0) continue;
    await ensurePartitions(db, table, missing).catch((err: Error) =>
      options.logger?.warn({ err: err.message, table }, "could not create a partition now; the rows go to the default partition"),
    );
  }
}

/** Yesterday to `daysAhead` days after today, in every table (the scheduled job). */
export async function ensureUpcomingPartitions(db: RawDatabase, now: Date, daysAhead = PARTITION_DAYS_AHEAD): Promise<number> {
  const today = dayOf(now.getTime());
  const days = Array.from({ length: daysAhead + 2 }, (_, i) => today - 1 + i);
  let created = 0;
  for (const table of PARTITIONED_TABLES) created += await ensurePartitions(db, table, days, DROP_LOCK_TIMEOUT_MS);
  return created;
}

export interface Partition {
  name: string;
  /** first day, in days since the epoch */
  start: number;
  /** first day after it */
  end: number;
}

/** The time partitions of `table`, oldest first (the default partition is not one of them). */
export async function listPartitions(db: RawDatabase, table: PartitionedTable): Promise<Partition[]> {
  const rows = await db.query<{ name: string }>(
    `SELECT c.relname AS "name" FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = to_regclass($1)`,
    [`"${table}"`],
  );
  const pattern = new RegExp(`^${table}_p(\\d{4})(\\d{2})(\\d{2})$`);
  return rows
    .map((r) => {
      const m = pattern.exec(r.name);
      if (!m) return undefined;
      const start = dayOf(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
      return { name: r.name, start, end: periodEnd(table, start) };
    })
    .filter((p): p is Partition => p !== undefined)
    .sort((a, b) => a.start - b.start);
}

/**
 * Drops every partition whose whole period is older than `cutoff`: a row is kept until the
 * end of its period plus the retention (raw snapshots: between N and N+1 days). Each drop is
 * one statement, its own short transaction (a crash leaves the partition whole or gone).
 * Returns the names dropped.
 */
export async function dropExpiredPartitions(db: RawDatabase, table: PartitionedTable, cutoff: Date, mayContinue: () => boolean = () => true): Promise<string[]> {
  const dropped: string[] = [];
  for (const partition of await listPartitions(db, table)) {
    if (partition.end * DAY_MS > cutoff.getTime() || !mayContinue()) break;
    await db.query(`SELECT "fleet_drop_partition"($1, $2, $3)`, [table, partition.name, DROP_LOCK_TIMEOUT_MS]);
    knownStarts(db, table).delete(partition.start);
    dropped.push(partition.name);
  }
  return dropped;
}
