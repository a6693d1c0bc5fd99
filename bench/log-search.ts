// Benchmark: search of one device's log lines of one day (GET /devices/{id}/logs?q=&from=&to=,
// a case-insensitive substring) on PostgreSQL, over a day's partition holding the lines of a
// whole fleet: the plan PostgreSQL picks (EXPLAIN ANALYZE) and its time, with the indexes of
// migration 20261126054000_log_partitions (the device's (deviceId, timestamp) index) and, in
// the same run, with a trigram GIN index on the message added inside a transaction that is
// rolled back (the alternative measured and not taken: docs/telemetry.md, "Searching logs").
// Prints figures; asserts nothing.
//
//   npm run bench -- log-search
//   BENCH_LOG_ROWS=1000000 BENCH_LOG_DEVICES=1000 BENCH_DATABASE_URL=postgresql://... (default: a throwaway server)
import pg from "pg";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { withMigratedPostgres } from "./support/postgres.js";
import { DAY_MS, dayOf, ensurePartitions } from "../src/modules/telemetry/partitions.js";

const ROWS = Number(process.env.BENCH_LOG_ROWS ?? 1_000_000);
const DEVICES = Number(process.env.BENCH_LOG_DEVICES ?? 1000);
const RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 20);
/** one line in this many says the searched-for thing */
const RARE = 499; // prime: not a multiple of any device number
const deviceOf = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;

async function main() {
  console.log(machineLine());
  await withMigratedPostgres("bench_log_search", 1, async (db, url) => {
    const day = dayOf(Date.now()) - 2;
    await ensurePartitions(db.raw, "DeviceLog", [day]);
    const from = new Date(day * DAY_MS).toISOString();
    const to = new Date((day + 1) * DAY_MS - 1).toISOString();
    // A day of the fleet's lines, spread evenly over the devices, as ingest leaves them.
    let started = Date.now();
    await db.raw.query(
      `INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message")
       SELECT ('00000000-0000-4000-8000-' || lpad((g % $3)::text, 12, '0'))::uuid,
              $1::timestamptz + ((g::float8 / $2) * interval '1 day'),
              CASE WHEN g % 10 = 0 THEN 'warn' ELSE 'info' END, 'app',
              CASE WHEN g % ${RARE} = 7 THEN 'write failed: disk quota exceeded on /data/' || (g % 97)
                   ELSE 'GET /api/v1/items/' || (g % 9973) || ' 200 in ' || (g % 113) || ' ms, worker ' || (g % 16) END
         FROM generate_series(0, $2::int - 1) g`,
      [from, ROWS, DEVICES],
    );
    await db.raw.exec(`VACUUM ANALYZE "DeviceLog"`);
    const fillMs = Date.now() - started;
    const partition = `DeviceLog_p${new Date(day * DAY_MS).toISOString().slice(0, 10).replace(/-/g, "")}`;
    // the day's partition and its indexes (named after it)
    const sizes = await db.raw.query<{ name: string; size: string }>(
      `SELECT relname AS "name", pg_size_pretty(pg_relation_size(oid)) AS "size" FROM pg_class WHERE relname LIKE $1 ORDER BY 1`, [`${partition}%`]);

    // what listLogs runs (src/modules/logs/service.ts): the page and the count
    const where = `l."deviceId" = $1::uuid AND l."message" ILIKE $2 AND l."timestamp" >= $3::timestamptz AND l."timestamp" <= $4::timestamptz`;
    const page = `SELECT l."id", l."deviceId", l."timestamp", l."level", l."source", l."message" FROM "DeviceLog" l WHERE ${where}
                  ORDER BY l."timestamp" DESC, l."id" DESC LIMIT 50 OFFSET 0`;
    const count = `SELECT count(*)::int AS "n" FROM "DeviceLog" l WHERE ${where}`;
    const device = deviceOf(7);
    const cases: Array<[string, string]> = [["rare term 'quota exceeded'", "%quota exceeded%"], ["common term 'worker 3'", "%worker 3%"]];

    const measure = async (label: string) => {
      for (const [what, pattern] of cases) {
        const params = [device, pattern, from, to];
        const plan = await db.raw.query<{ "QUERY PLAN": string }>(`EXPLAIN (ANALYZE, BUFFERS) ${count}`, params);
        const times: number[] = [];
        let matches = 0;
        for (let i = 0; i < RUNS; i++) {
          const t = performance.now();
          await db.raw.query(page, params);
          matches = (await db.raw.query<{ n: number }>(count, params))[0].n;
          times.push(performance.now() - t);
        }
        const p = percentiles(times);
        console.log(`\n### ${label}, ${what}: ${matches} of the device's lines match; page + count p50 ${fmtMs(p.p50)}, p99 ${fmtMs(p.p99)}`);
        console.log(plan.map((r) => r["QUERY PLAN"]).join("\n"));
      }
    };

    console.log(`one day of ${ROWS.toLocaleString("en")} log lines from ${DEVICES} devices (${ROWS / DEVICES} per device), filled in ${fmtMs(fillMs)}`);
    console.log(sizes.map((s) => `${s.name}: ${s.size}`).join(", "));
    await measure("the (deviceId, timestamp) index (what the migration builds)");
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      // the same queries on a connection that added a trigram index (rolled back afterwards)
      started = Date.now();
      await client.query(`BEGIN; CREATE EXTENSION IF NOT EXISTS pg_trgm; CREATE INDEX "DeviceLog_message_trgm" ON "DeviceLog" USING GIN ("message" gin_trgm_ops); ANALYZE "DeviceLog"`);
      console.log(`\ntrigram index built in ${fmtMs(Date.now() - started)}`);
      const viaClient = { query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[] };
      const saved = db.raw.query;
      db.raw.query = viaClient.query as typeof db.raw.query;
      try {
        await measure("with a trigram GIN index on the message (not taken)");
      } finally {
        db.raw.query = saved;
      }
    } finally {
      await client.query("ROLLBACK").catch(() => undefined);
      await client.end();
    }
  });
}

await main();
