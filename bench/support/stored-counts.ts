// What the service's database holds, read inside the service's process (bench/support/serve.ts,
// `counts` command) because the embedded database admits one process only: snapshots and log
// lines stored since an instant (to set against what the load generator saw acknowledged), the
// database's size, and whether the expired day seeded for the retention job is still there.
import fs from "node:fs";
import path from "node:path";
import type { RawDatabase } from "../../src/db/adapters.js";
import { DAY_MS, dayOf, ensurePartitions, partitionName } from "../../src/modules/telemetry/partitions.js";

/** The expired days seeded: the partitions the retention job should drop. */
export interface ExpiredDay {
  snapshotPartition: string;
  logPartition: string;
  rows: number;
}

/**
 * Writes `rows` snapshots and as many log lines on the day two days past each one's retention
 * (their own partitions, as ingest of that day would have made them), spread over 1,000
 * device ids that exist nowhere else: the day's work of the retention job, which drops them.
 */
export async function seedExpiredDay(raw: RawDatabase, rows: number, retention: { telemetryDays: number; logDays: number }): Promise<ExpiredDay> {
  const snapshotDay = dayOf(Date.now()) - retention.telemetryDays - 2;
  const logDay = dayOf(Date.now()) - retention.logDays - 2;
  await ensurePartitions(raw, "TelemetrySnapshot", [snapshotDay]);
  await ensurePartitions(raw, "DeviceLog", [logDay]);
  const deviceOf = `('00000000-0000-4000-8000-' || lpad((g % 1000)::text, 12, '0'))::uuid`;
  const timeOf = `$1::timestamptz + ((g::float8 / $2) * interval '1 day')`;
  await raw.query(
    `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent", "memoryUsedBytes", "memoryTotalBytes", "containersRunning")
     SELECT ${deviceOf}, ${timeOf}, (g % 100)::float8, 1000000 + g, 8000000000, g % 5 FROM generate_series(0, $2::int - 1) g`,
    [new Date(snapshotDay * DAY_MS).toISOString(), rows],
  );
  await raw.query(
    `INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message")
     SELECT ${deviceOf}, ${timeOf}, 'info', 'agent', 'heartbeat acknowledged' FROM generate_series(0, $2::int - 1) g`,
    [new Date(logDay * DAY_MS).toISOString(), rows],
  );
  return { snapshotPartition: partitionName("TelemetrySnapshot", snapshotDay), logPartition: partitionName("DeviceLog", logDay), rows };
}

function directoryBytes(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += directoryBytes(full);
    else if (entry.isFile()) total += fs.statSync(full).size;
  }
  return total;
}

export interface StoredCounts {
  snapshots: number;
  logLines: number;
  databaseBytes: number;
  /** the seeded expired partitions still there (null: none seeded) */
  expiredSnapshotsKept: boolean | null;
  expiredLogsKept: boolean | null;
}

/** Snapshots and log lines stamped at or after `since`, the database's size, the expired day's partitions. */
export async function storedCounts(raw: RawDatabase, since: string, where: { dataDir: string; postgres: boolean; oldDay: ExpiredDay | null }): Promise<StoredCounts> {
  const [row] = await raw.query<{ snapshots: number; logLines: number; bytes: string | null; oldSnapshots: string | null; oldLogs: string | null }>(
    `SELECT (SELECT count(*)::int FROM "TelemetrySnapshot" WHERE "timestamp" >= $1::timestamptz) AS "snapshots",
            (SELECT count(*)::int FROM "DeviceLog" WHERE "timestamp" >= $1::timestamptz) AS "logLines",
            ${where.postgres ? `pg_database_size(current_database())::text` : "NULL"} AS "bytes",
            to_regclass($2)::text AS "oldSnapshots", to_regclass($3)::text AS "oldLogs"`,
    [since, `"${where.oldDay?.snapshotPartition ?? "none"}"`, `"${where.oldDay?.logPartition ?? "none"}"`],
  );
  return {
    snapshots: row.snapshots,
    logLines: row.logLines,
    // the embedded database's files are the data directory's
    databaseBytes: row.bytes !== null ? Number(row.bytes) : directoryBytes(where.dataDir),
    expiredSnapshotsKept: where.oldDay ? row.oldSnapshots !== null : null,
    expiredLogsKept: where.oldDay ? row.oldLogs !== null : null,
  };
}
