// Benchmark: retention of one day of raw telemetry snapshots by dropping its partition (what
// the retention job does since the snapshots are partitioned by day) against the chunked
// delete of the same rows (what it did before: DELETE ... LIMIT 10,000 until none is left),
// side by side in one run on PostgreSQL: time, and database size before, right after, and
// after a plain VACUUM. Prints figures; asserts nothing.
//
//   npm run bench -- retention
//   BENCH_RETENTION_ROWS=10000000 BENCH_DATABASE_URL=postgresql://... (default: a throwaway server)
import { fmtMs, machineLine } from "./support/machine.js";
import { withMigratedPostgres } from "./support/postgres.js";
import { DAY_MS, dayOf, ensurePartitions, partitionName } from "../src/modules/telemetry/partitions.js";

const ROWS = Number(process.env.BENCH_RETENTION_ROWS ?? 10_000_000);
const CHUNK = 10_000;
const DEVICES = 1000;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;

async function main() {
  console.log(machineLine());
  await withMigratedPostgres("bench_retention", 2, async (db) => {
    const day = dayOf(Date.now()) - 40;
    const size = async () => Number((await db.raw.query<{ n: string }>(`SELECT pg_database_size(current_database())::text AS "n"`))[0].n);
    /** One day's rows, evenly spread over DEVICES devices, as ingest would have left them. */
    const fill = async () => {
      await ensurePartitions(db.raw, "TelemetrySnapshot", [day]);
      const started = Date.now();
      await db.raw.query(
        `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent", "memoryUsedBytes", "memoryTotalBytes", "containersRunning")
         SELECT ('00000000-0000-4000-8000-' || lpad(((g % ${DEVICES}))::text, 12, '0'))::uuid,
                $1::timestamptz + ((g::float8 / $2) * interval '1 day'), (g % 100)::float8, 1000000 + g, 8000000000, g % 5
           FROM generate_series(0, $2::int - 1) g`,
        [new Date(day * DAY_MS).toISOString(), ROWS],
      );
      await db.raw.exec(`ANALYZE "TelemetrySnapshot"`);
      return Date.now() - started;
    };
    const cutoff = new Date((day + 1) * DAY_MS).toISOString();

    const filled1 = await fill();
    const before = await size();
    let started = Date.now();
    await db.raw.query(`SELECT "fleet_drop_partition"('TelemetrySnapshot', $1, 0)`, [partitionName("TelemetrySnapshot", day)]);
    const dropMs = Date.now() - started;
    const afterDrop = await size();

    // remade past ensurePartitions, whose per-process cache still remembers the dropped day
    await db.raw.query(`SELECT "fleet_ensure_partition"('TelemetrySnapshot', $1::date, $2::date)`, [
      new Date(day * DAY_MS).toISOString().slice(0, 10), new Date((day + 1) * DAY_MS).toISOString().slice(0, 10)]);
    const filled2 = await fill();
    const before2 = await size();
    started = Date.now();
    let statements = 0;
    for (;;) {
      statements++;
      const rows = await db.raw.query<{ n: number }>(
        `WITH gone AS (DELETE FROM "TelemetrySnapshot" WHERE ("id", "timestamp") IN
           (SELECT "id", "timestamp" FROM "TelemetrySnapshot" WHERE "timestamp" < $1::timestamptz LIMIT ${CHUNK}) RETURNING 1)
         SELECT count(*)::int AS "n" FROM gone`, [cutoff]);
      if (rows[0].n < CHUNK) break;
    }
    const deleteMs = Date.now() - started;
    const afterDelete = await size();
    started = Date.now();
    await db.raw.exec(`VACUUM "TelemetrySnapshot"`);
    const vacuumMs = Date.now() - started;
    const afterVacuum = await size();

    console.log(`one day of ${ROWS.toLocaleString("en")} snapshots (${DEVICES} devices), PostgreSQL ${(await db.raw.query<{ server_version: string }>("SHOW server_version"))[0].server_version}`);
    console.log(`| | drop the day's partition | chunked delete (${CHUNK.toLocaleString("en")} per statement) |`);
    console.log(`|---|---|---|`);
    console.log(`| filling the day (insert + analyze) | ${fmtMs(filled1)} | ${fmtMs(filled2)} |`);
    console.log(`| removing it | **${fmtMs(dropMs)}** (1 statement) | **${fmtMs(deleteMs)}** (${statements} statements) |`);
    console.log(`| database size before | ${mb(before)} | ${mb(before2)} |`);
    console.log(`| database size right after | ${mb(afterDrop)} | ${mb(afterDelete)} |`);
    console.log(`| after a plain VACUUM (${fmtMs(vacuumMs)}) | (nothing to vacuum) | ${mb(afterVacuum)} |`);
  });
}

await main();
