// Benchmark: telemetry at the scale of 100,000 devices, on PostgreSQL, in one run:
//
// 1. Sustained ingest at the fleet's rate (100,000 devices, one snapshot each every 15 s:
//    6,667 snapshots/s) for 10 minutes, paced (open loop: each device's snapshot is due at its
//    own second of the 15-second cycle, whether or not the database kept up), with the job
//    runner on (retention drops a 32-day-old partition during the run, partitions are made
//    ahead, whole-fleet rollups are recomputed). Measured: the accepted rate, p50/p99 of an
//    ingest statement, how far behind schedule the load fell (lag), database growth per hour,
//    whether the rollups hold every snapshot the raw table holds (they are written by the
//    same statement, so the expected lag is zero: checked, not assumed), the share of rollup
//    and latest-snapshot updates that stayed on their page (HOT), and checkpoints forced by WAL.
// 2. Spec op 11 over the history of one device (a year at one snapshot every 15 s, written
//    before the run: the last 30 days raw, the rest in the rollups only) through the REST API:
//    30 days at 1h, a year at 1d.
// 3. The fleet-wide series (GET /api/v1/fleet/telemetry) over the 100,000 devices: the whole
//    fleet over 30 days at 1h and 1d, and a selector (a third of the fleet) over the last day.
// 4. The telemetry.fleet-rollups job's largest bucket: a whole day of hourly rollups of every
//    device (as near midnight), against one hour.
//
// What is driven directly: the telemetry writer (src/modules/telemetry/ingest.ts,
// `createTelemetryWriter`: the group commit POST /api/v1/agent/telemetry hands a batch to once
// it is authenticated and validated), BENCH_PROCESSES of them as that many service processes
// would run, each with at most BENCH_INGEST_CONCURRENCY requests in flight (the ingest gate's
// INGEST_CONCURRENCY; a snapshot due while its process is full waits, and counts as behind
// schedule). The HTTP, token and validation work per request is not in it: it scales with
// service processes, and is measured per process by bench/telemetry.ts and bench/heartbeat.ts
// (docs/scaling.md combines the two). 100,000 enrolled device identities would not fit this
// machine's two cores beside the database. BENCH_GROUP_COMMIT=0 sends one statement per
// request instead, as ingest did before the writer. Prints figures; asserts nothing.
//
//   npm run bench -- telemetry-at-scale
//   BENCH_DEVICES=100000 BENCH_PERIOD_SECONDS=15 BENCH_DURATION_SECONDS=600 BENCH_PROCESSES=10
//   BENCH_INGEST_CONCURRENCY=64 BENCH_GROUP_COMMIT=1
//   BENCH_OLD_DAY_ROWS=2000000 BENCH_HISTORY_DAYS=365 BENCH_QUERY_RUNS=20
//   BENCH_DATABASE_URL=postgresql://... (default: a throwaway server)
import http from "node:http";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { withMigratedPostgres } from "./support/postgres.js";
import { startChild } from "./support/child.js";
import { createTelemetryWriter, insertSnapshots } from "../src/modules/telemetry/ingest.js";
import { DAY_MS, dayOf, ensurePartitions, partitionName } from "../src/modules/telemetry/partitions.js";
import type { SnapshotInput } from "../src/modules/telemetry/schemas.js";
import { refreshFleetRollups } from "../src/modules/fleet/fleet-rollups.js";
import { createPrisma } from "../src/db/client.js";

const DEVICES = Number(process.env.BENCH_DEVICES ?? 100_000);
const PERIOD_S = Number(process.env.BENCH_PERIOD_SECONDS ?? 15);
const DURATION_S = Number(process.env.BENCH_DURATION_SECONDS ?? 600);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 10);
const PER_PROCESS = Number(process.env.BENCH_INGEST_CONCURRENCY ?? 64);
const GROUP_COMMIT = process.env.BENCH_GROUP_COMMIT !== "0";
const CONNECTIONS = PROCESSES * 2 + 2;
const OLD_DAY_ROWS = Number(process.env.BENCH_OLD_DAY_ROWS ?? 2_000_000);
const HISTORY_DAYS = Number(process.env.BENCH_HISTORY_DAYS ?? 365);
const QUERY_RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 20);
const RETENTION_DAYS = 30;
const ADMIN_KEY = "fm_bench" + "S".repeat(36);
const RATE = DEVICES / PERIOD_S;

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MB`;
const iso = (t: number) => new Date(t).toISOString();

function snapshot(at: number, n: number): SnapshotInput {
  return {
    timestamp: iso(at), cpuUsagePercent: (n * 37) % 100, memoryUsedBytes: 1_000_000_000 + (n % 1000) * 1_000_000,
    memoryTotalBytes: 4_000_000_000, diskUsedBytes: 50_000_000_000 + (n % 977) * 10_000_000, diskTotalBytes: 100_000_000_000,
    uptimeSeconds: n * PERIOD_S, restartCount: 0, containersRunning: 3, containersFailed: n % 50 === 0 ? 1 : 0, errorCount: n % 7,
  } as SnapshotInput;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
function get(url: string): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    http.get(url, { agent, headers: { "x-api-key": ADMIN_KEY } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
    }).on("error", reject);
  });
}

async function timeQuery(name: string, url: string) {
  for (let i = 0; i < 2; i++) {
    const res = await get(url);
    if (res.status !== 200) throw new Error(`${name}: ${res.status} ${JSON.stringify(res.json).slice(0, 300)}`);
  }
  const samples: number[] = [];
  let last: any = null;
  for (let i = 0; i < QUERY_RUNS; i++) {
    const t0 = performance.now();
    last = (await get(url)).json;
    samples.push(performance.now() - t0);
  }
  const p = percentiles(samples);
  const what = Array.isArray(last?.data) ? `${last.data.length} buckets, source ${last.source}${last.sources ? ` (${last.sources.map((s: any) => s.source).join(" + ")})` : ""}` : "";
  console.log(`${name.padEnd(46)} p50 ${fmtMs(p.p50).padStart(9)}  p99 ${fmtMs(p.p99).padStart(9)}  (n=${p.n}; ${what})`);
  return { p50: +p.p50.toFixed(1), p99: +p.p99.toFixed(1) };
}

async function main() {
  console.log(machineLine());
  console.log(`settings: ${DEVICES.toLocaleString("en")} devices, one snapshot each every ${PERIOD_S} s (${RATE.toFixed(0)}/s) for ${DURATION_S} s ` +
    `through ${PROCESSES} writers (as many processes) of ${PER_PROCESS} requests in flight each, ${GROUP_COMMIT ? "group commit" : "one statement per request"}; an old day of ${OLD_DAY_ROWS.toLocaleString("en")} rows for retention; ${HISTORY_DAYS} days of one device's history`);
  await withMigratedPostgres("bench_telemetry_scale", CONNECTIONS, async (db, url) => {
    const raw = db.raw;
    const size = async () => Number((await raw.query<{ n: string }>(`SELECT pg_database_size(current_database())::text AS "n"`))[0].n);
    const service = (jobs: boolean, fleet: number) =>
      startChild("serve.ts", { BENCH_DATABASE: url, BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: String(fleet), BENCH_JOBS: jobs ? "1" : "0" });

    // The fleet, by the service's own bootstrap (organization, key) and bulk insert.
    const seeding = await service(false, DEVICES);
    console.log(`${DEVICES.toLocaleString("en")} devices inserted in ${Number(seeding.info.fleetSeconds).toFixed(1)} s`);
    await seeding.stop();
    const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
    const devices = (await raw.query<{ id: string }>(`SELECT "id" FROM "Device" WHERE "organizationId" = $1::uuid ORDER BY "name"`, [org.id])).map((d) => d.id);

    // One device's history: a snapshot every PERIOD_S for HISTORY_DAYS, ending two hours ago,
    // in batches of 1,000 as an agent uploading its backlog would (older than the raw retention:
    // rollups only).
    const history = devices[0];
    let started = performance.now();
    const historyEnd = Date.now() - 2 * 3600_000;
    const historyCount = Math.floor((HISTORY_DAYS * DAY_MS) / (PERIOD_S * 1000));
    for (let first = 0; first < historyCount; first += 1000) {
      const batch = [];
      for (let n = first; n < Math.min(first + 1000, historyCount); n++) batch.push(snapshot(historyEnd - (historyCount - n) * PERIOD_S * 1000, n));
      await insertSnapshots(raw, { id: history, organizationId: org.id }, batch, { retentionDays: RETENTION_DAYS });
    }
    console.log(`history: ${historyCount.toLocaleString("en")} snapshots of one device over ${HISTORY_DAYS} days in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    // Its whole-fleet rows, as the telemetry.fleet-rollups job makes them.
    started = performance.now();
    const prisma = createPrisma(db);
    let fleetBuckets = 0;
    for (let run = await refreshFleetRollups(prisma); ; run = await refreshFleetRollups(prisma)) {
      fleetBuckets += run.buckets;
      if (run.complete) break;
    }
    console.log(`whole-fleet rows of that history: ${fleetBuckets.toLocaleString("en")} buckets (5m, 1h, 1d) computed in ${((performance.now() - started) / 1000).toFixed(1)} s`);

    // A day past the raw retention, for the retention job to drop during the run.
    const oldDay = dayOf(Date.now()) - RETENTION_DAYS - 2;
    started = performance.now();
    await ensurePartitions(raw, "TelemetrySnapshot", [oldDay]);
    await raw.query(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent", "memoryUsedBytes", "memoryTotalBytes", "containersRunning")
       SELECT ($3::uuid[])[1 + g % array_length($3::uuid[], 1)], $1::timestamptz + ((g::float8 / $2) * interval '1 day'), (g % 100)::float8, 1000000 + g, 8000000000, g % 5
         FROM generate_series(0, $2::int - 1) g`,
      [iso(oldDay * DAY_MS), OLD_DAY_ROWS, devices.slice(0, 1000)],
    );
    const oldPartition = partitionName("TelemetrySnapshot", oldDay);
    console.log(`old day ${iso(oldDay * DAY_MS).slice(0, 10)}: ${OLD_DAY_ROWS.toLocaleString("en")} rows in ${oldPartition} (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    await raw.exec(`VACUUM ANALYZE`);

    // The service under measurement, with its job runner on (first retention run within a minute).
    const svc = await service(true, 0);
    const base = svc.info.url as string;
    try {
      // Growth is measured without the old day, which the retention job removes during the run.
      const oldDaySize = Number((await raw.query<{ n: string }>(`SELECT pg_total_relation_size($1)::text AS "n"`, [`"${oldPartition}"`]))[0].n);
      const sizeBefore = (await size()) - oldDaySize;
      // Rollup rows are updated in place by every snapshot of their bucket: how many of those
      // updates stayed on their page (HOT: no index entry, pruned without vacuum), and how many
      // checkpoints the run forced.
      type Churn = { tables: Map<string, { upd: number; hot: number }>; dead: number; forced: number };
      const churn = async (): Promise<Churn> => {
        const rows = await raw.query<{ t: string; upd: string; hot: string; dead: string }>(
          `SELECT CASE WHEN relname LIKE 'TelemetryRollup5m%' THEN '5m' WHEN relname LIKE 'TelemetryRollup1h%' THEN '1h' ELSE 'latest' END AS "t",
                  sum(n_tup_upd)::text AS "upd", sum(n_tup_hot_upd)::text AS "hot", sum(n_dead_tup)::text AS "dead"
             FROM pg_stat_user_tables WHERE relname LIKE 'TelemetryRollup%' OR relname = 'DeviceTelemetryLatest' GROUP BY 1 ORDER BY 1`);
        const [{ forced }] = await raw.query<{ forced: string }>(`SELECT checkpoints_req::text AS "forced" FROM pg_stat_bgwriter`);
        return {
          tables: new Map(rows.map((r) => [r.t, { upd: Number(r.upd), hot: Number(r.hot) }])),
          dead: rows.reduce((n, r) => n + Number(r.dead), 0), forced: Number(forced),
        };
      };
      /** Updates and HOT updates per table since `before` ("all": every table). */
      const churnSince = (before: Churn, after: Churn) => {
        const delta = [...after.tables].map(([t, a]) => ({ t, upd: a.upd - (before.tables.get(t)?.upd ?? 0), hot: a.hot - (before.tables.get(t)?.hot ?? 0) }));
        const share = (d: { upd: number; hot: number }) => (d.upd ? d.hot / d.upd : 0);
        const all = delta.reduce((s, d) => ({ upd: s.upd + d.upd, hot: s.hot + d.hot }), { upd: 0, hot: 0 });
        return { updates: all.upd, hotShare: share(all), perTable: delta.map((d) => `${d.t} ${(share(d) * 100).toFixed(0)} %`).join(", ") };
      };
      const churnBefore = await churn();
      const fleetTable = (await raw.query<{ t: string | null }>(`SELECT to_regclass('"TelemetryFleetRollup"')::text AS "t"`))[0].t !== null;
      const latencies: number[] = [];
      let accepted = 0;
      let failed = 0;
      let lastError = "";
      let issued = 0;
      let maxLagMs = 0;
      const lagSamples: number[] = [];
      let droppedAt: number | null = null;
      const ingestOptions = { retentionDays: RETENTION_DAYS };
      const writers = Array.from({ length: PROCESSES }, () => createTelemetryWriter(raw, ingestOptions));
      if (!GROUP_COMMIT) for (const w of writers) w.options = { maxInFlight: PER_PROCESS, maxBatch: 1 };
      const inFlight = writers.map(() => 0);
      const runStart = Date.now();
      // Snapshot k (device k mod DEVICES) is due at runStart + k / RATE seconds: each device every PERIOD_S.
      const dueAt = (k: number) => runStart + (k / RATE) * 1000;
      const totalDue = Math.floor(DURATION_S * RATE);
      // A device always reaches the same process (a load balancer's connection), in order.
      const waiting: number[][] = writers.map(() => []);
      const send = (p: number, k: number) => {
        inFlight[p]++;
        const lag = Date.now() - dueAt(k);
        if (lag > maxLagMs) maxLagMs = lag;
        if (k % 200 === 0) lagSamples.push(lag);
        const t0 = performance.now();
        writers[p].submit({ device: { id: devices[k % devices.length], organizationId: org.id }, snapshots: [snapshot(Date.now(), k)] })
          .then(() => void accepted++, (err) => { failed++; lastError = (err as Error).message.slice(0, 200); })
          .finally(() => {
            latencies.push(performance.now() - t0);
            inFlight[p]--;
            const next = waiting[p].shift();
            if (next !== undefined) send(p, next);
          });
      };
      const monitor = setInterval(() => {
        void (async () => {
          const elapsed = (Date.now() - runStart) / 1000;
          if (droppedAt === null && (await raw.query<{ t: string | null }>(`SELECT to_regclass($1)::text AS "t"`, [`"${oldPartition}"`]))[0].t === null) droppedAt = elapsed;
          let fleet = "";
          if (fleetTable) {
            const [f] = await raw.query<{ marks: number; fresh: Date | string | null }>(
              `SELECT (SELECT count(*)::int FROM "TelemetryFleetDirty") AS "marks", (SELECT max("computedAt") FROM "TelemetryFleetRollup") AS "fresh"`);
            fleet = `; fleet rollups: ${f.marks} dirty marks, newest computed ${f.fresh ? ((Date.now() - new Date(f.fresh).getTime()) / 1000).toFixed(0) + " s ago" : "never"}`;
          }
          console.log(`  t=${elapsed.toFixed(0)} s: ${accepted.toLocaleString("en")} accepted (${(accepted / elapsed).toFixed(0)}/s), waiting ${waiting.reduce((n, w) => n + w.length, 0).toLocaleString("en")}, statements ${writers.reduce((n, w) => n + w.stats.statements, 0).toLocaleString("en")}` +
            `${droppedAt !== null ? `, old partition dropped at t=${droppedAt.toFixed(0)} s` : ""}${fleet}`);
        })().catch(() => undefined);
      }, 30_000);
      await new Promise<void>((resolve) => {
        const tick = setInterval(() => {
          const now = Date.now();
          while (issued < totalDue && dueAt(issued) <= now) {
            const k = issued++;
            const p = (k % DEVICES) % PROCESSES;
            if (inFlight[p] < PER_PROCESS) send(p, k);
            else waiting[p].push(k);
          }
          if (issued >= totalDue && inFlight.every((n) => n === 0) && waiting.every((w) => w.length === 0)) {
            clearInterval(tick);
            resolve();
          }
        }, 5);
      });
      clearInterval(monitor);
      const seconds = (Date.now() - runStart) / 1000;
      const sizeAfter = await size();
      if (droppedAt === null && (await raw.query<{ t: string | null }>(`SELECT to_regclass($1)::text AS "t"`, [`"${oldPartition}"`]))[0].t === null) droppedAt = seconds;
      const lat = percentiles(latencies);
      const lag = percentiles(lagSamples);
      // Rollups against raw rows over the run (the history device's rows end before it).
      const from5m = Math.floor(runStart / 300_000) * 300_000;
      const [check] = await raw.query<{ raw: string; rolled: string }>(
        `SELECT (SELECT count(*) FROM "TelemetrySnapshot" WHERE "timestamp" >= $1::timestamptz AND "deviceId" <> $2::uuid)::text AS "raw",
                (SELECT coalesce(sum("samples"), 0) FROM "TelemetryRollup5m" WHERE "bucket" >= $1::timestamptz AND "deviceId" <> $2::uuid)::text AS "rolled"`,
        [iso(from5m), history]);
      console.log(`\nsustained ingest: ${accepted.toLocaleString("en")} snapshots accepted in ${seconds.toFixed(0)} s = ${(accepted / seconds).toFixed(0)}/s ` +
        `(target ${RATE.toFixed(0)}/s), failed ${failed}${failed ? ` (${lastError})` : ""}`);
      const statements = writers.reduce((n, w) => n + w.stats.statements, 0);
      console.log(`  ${statements.toLocaleString("en")} statements (${(accepted / Math.max(1, statements)).toFixed(1)} snapshots each on average, largest ${Math.max(...writers.map((w) => w.stats.largestBatch))})`);
      console.log(`  one request's batch, handed to its writer until stored: p50 ${fmtMs(lat.p50)}, p99 ${fmtMs(lat.p99)}`);
      console.log(`  behind schedule: p50 ${fmtMs(lag.p50)}, p99 ${fmtMs(lag.p99)}, max ${fmtMs(maxLagMs)}`);
      console.log(`  database ${mb(sizeBefore)} (without the old day's ${mb(oldDaySize)}) -> ${mb(sizeAfter)}: ${mb(((sizeAfter - sizeBefore) / seconds) * 3600)} per hour; ` +
        `${droppedAt !== null ? `the old day's partition was dropped by the retention job at t=${droppedAt.toFixed(0)} s` : "the old day's partition was NOT dropped during the run"}`);
      if (droppedAt === null) console.log(`  (so the size after still holds it: growth overstated by ${mb(oldDaySize)})`);
      const churnAfter = await churn();
      const { updates, hotShare, perTable } = churnSince(churnBefore, churnAfter);
      console.log(`  rollup and latest-snapshot rows: ${updates.toLocaleString("en")} updates, ${(hotShare * 100).toFixed(0)} % in place (HOT) (${perTable}); ` +
        `${churnAfter.dead.toLocaleString("en")} dead row versions left; ${churnAfter.forced - churnBefore.forced} checkpoints forced by WAL volume`);
      console.log(`  rollups: ${Number(check.rolled).toLocaleString("en")} snapshots in the 5-minute rollups of the run, ${Number(check.raw).toLocaleString("en")} raw rows: ` +
        `${check.rolled === check.raw ? "equal (no lag)" : "NOT equal"}`);
      if (fleetTable) {
        // What the job has left once ingest stops, caught up here (the service's job may take part: claims serialise).
        const [{ marks }] = await raw.query<{ marks: number }>(`SELECT count(*)::int AS "marks" FROM "TelemetryFleetDirty"`);
        const t0 = performance.now();
        let caught = 0;
        for (let run = await refreshFleetRollups(prisma); ; run = await refreshFleetRollups(prisma)) {
          caught += run.buckets;
          if (run.complete) break;
        }
        const [fresh] = await raw.query<{ rows: number }>(`SELECT count(*)::int AS "rows" FROM "TelemetryFleetRollup" WHERE "bucket" >= $1::timestamptz`, [iso(runStart - DAY_MS)]);
        console.log(`  fleet rollups: ${marks} marks left when ingest stopped; ${caught} buckets recomputed in ${fmtMs(performance.now() - t0)}; ${fresh.rows} fleet rows of the last day`);
      }

      console.log("\nqueries (sequential, through the REST API):");
      const now = Date.now();
      const op11 = (from: number, to: number, interval: string) => `${base}/api/v1/devices/${history}/telemetry?from=${iso(from)}&to=${iso(to)}&interval=${interval}`;
      const fleet = (from: number, interval: string, labels = "") => `${base}/api/v1/fleet/telemetry?from=${iso(from)}&to=${iso(now)}&interval=${interval}${labels ? `&labels=${encodeURIComponent(labels)}` : ""}`;
      const queries = {
        "op 11, one device, 30 days at 1h": await timeQuery("op 11, one device, 30 days at 1h", op11(historyEnd - 30 * DAY_MS, historyEnd, "1h")),
        "op 11, one device, a year at 1d": await timeQuery("op 11, one device, a year at 1d", op11(historyEnd - 365 * DAY_MS, historyEnd, "1d")),
        "fleet, whole fleet, 30 days at 1h": await timeQuery("fleet, whole fleet, 30 days at 1h", fleet(now - 30 * DAY_MS, "1h")),
        "fleet, whole fleet, 30 days at 1d": await timeQuery("fleet, whole fleet, 30 days at 1d", fleet(now - 30 * DAY_MS, "1d")),
        "fleet, tier=core (1/3), last day at 1h": await timeQuery("fleet, tier=core (1/3), last day at 1h", fleet(now - DAY_MS, "1h", "tier=core")),
      };
      const [rows] = await raw.query<{ h: string; f: string }>(
        `SELECT (SELECT count(*) FROM "TelemetryRollup1h" WHERE "bucket" >= $1::timestamptz)::text AS "h",
                (SELECT count(*) FROM "TelemetryRollup5m" WHERE "bucket" >= $1::timestamptz)::text AS "f"`, [iso(now - DAY_MS)]);
      console.log(`  (per-device rollup rows of the last day: ${Number(rows.h).toLocaleString("en")} hourly, ${Number(rows.f).toLocaleString("en")} 5-minute)`);

      // The fleet job's most expensive bucket: a day near midnight, when every device has 24
      // hourly rollup rows in it (ten days ago: no other data there), against one hour of it.
      const fullDay = dayOf(now) - 10;
      started = performance.now();
      await raw.query(
        `INSERT INTO "TelemetryRollup1h" ("deviceId", "organizationId", "bucket", "samples", "lastAt", "cpuUsagePercentCount", "cpuUsagePercentSum", "containersFailedCount", "containersFailedSum", "containersFailedMax")
         SELECT d."id", d."organizationId", $1::timestamptz + h * interval '1 hour', 240, $1::timestamptz + h * interval '1 hour', 240, 240 * (((hashtext(d."id"::text)::int8 + h) % 100 + 100) % 100), 240, 0, (random() < 0.02)::int
           FROM "Device" d CROSS JOIN generate_series(0, 23) h WHERE d."organizationId" = $2::uuid AND d."id" <> $3::uuid`,
        [iso(fullDay * DAY_MS), org.id, history]);
      await raw.exec(`ANALYZE "TelemetryRollup1h"`);
      console.log(`\nfleet job, one full day: ${(DEVICES * 24).toLocaleString("en")} hourly rows written in ${((performance.now() - started) / 1000).toFixed(1)} s`);
      const fleetBucket = async (interval: string, at: number) => {
        await raw.query(`INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket") VALUES ($1::uuid, $2, $3::timestamptz)`, [org.id, interval, iso(at)]);
        const t0 = performance.now();
        for (let run = await refreshFleetRollups(prisma); !run.complete; run = await refreshFleetRollups(prisma));
        return performance.now() - t0;
      };
      const dayMs = await fleetBucket("1d", fullDay * DAY_MS);
      const hourMs = await fleetBucket("1h", fullDay * DAY_MS + 23 * 3600_000);
      console.log(`  its day bucket recomputed in ${fmtMs(dayMs)}; its last hour in ${fmtMs(hourMs)}`);
      console.log("\nsummary (JSON):");
      console.log(JSON.stringify({
        devices: DEVICES, targetPerSecond: Math.round(RATE), acceptedPerSecond: Math.round(accepted / seconds), seconds: Math.round(seconds), failed,
        groupCommit: GROUP_COMMIT, processes: PROCESSES, statements, batchP50Ms: +lat.p50.toFixed(2), batchP99Ms: +lat.p99.toFixed(2), behindScheduleP99Ms: +lag.p99.toFixed(0), behindScheduleMaxMs: Math.round(maxLagMs),
        growthMBPerHour: Math.round(((sizeAfter - sizeBefore) / seconds) * 3600 / 1024 / 1024), oldPartitionDroppedAtS: droppedAt, rollupsEqualRaw: check.rolled === check.raw, hotUpdateShare: +hotShare.toFixed(2),
        queries, fleetDayBucketMs: Math.round(dayMs), fleetHourBucketMs: Math.round(hourMs),
      }, null, 2));
    } finally {
      await svc.stop();
    }
  });
  process.exit(0);
}

await main();
