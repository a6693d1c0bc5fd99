// Benchmark: telemetry ingest through HTTP in batches of 1,000 snapshots (device tokens, the
// real agent route), against a bare node:http server that receives and parses the same
// bodies in the same run; then the latency of spec op 11 (downsampled range) and op 13 over
// 1,000,000 snapshots of one device, in a table that also holds 10,000 other devices with 100
// snapshots each. Runs on PGlite and on PostgreSQL (a throwaway server when the binaries are
// installed, or a fresh database on BENCH_DATABASE_URL). Prints figures; asserts nothing.
//
//   npm run bench -- telemetry
//   BENCH_SERIES=1000000 BENCH_CONCURRENCY=4 BENCH_FLEET=10000 BENCH_QUERY_RUNS=30 BENCH_DB=both|pglite|postgres
//
// The file is also its own helper processes (BENCH_TELEMETRY_ROLE=serve|bare), so that the
// service, the baseline and the load generator each have their own event loop.
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { fmtMs, machineLine, percentiles } from "./support/machine.js";
import { startThrowawayPostgres } from "./support/postgres.js";
import { startChild } from "./support/child.js";
import { benchServiceEnv } from "./support/service-env.js";

const SERIES = Number(process.env.BENCH_SERIES ?? 1_000_000);
const FLEET = Number(process.env.BENCH_FLEET ?? 10_000);
const PER_FLEET_DEVICE = Number(process.env.BENCH_FLEET_SNAPSHOTS ?? 100);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 4);
const QUERY_RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 30);
const WHICH = process.env.BENCH_DB ?? "both";
const BATCH = 1000;
const STEP_MS = 10_000; // one snapshot every 10 s: 1,000,000 snapshots span about 116 days
const ADMIN_KEY = "fm_bench" + "T".repeat(36);

// ---- helper process roles --------------------------------------------------------------

async function serve() {
  const { loadConfig } = await import("../src/config.js");
  const { createLogger } = await import("../src/lib/logger.js");
  const { startService } = await import("../src/server.js");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-telemetry-"));
  // The series spans about 116 days: with the default 30-day retention its older part would go
  // into the rollups only (docs/telemetry.md); keep every snapshot raw, as this benchmark always did.
  const config = loadConfig({ ...benchServiceEnv({ dataDir, adminKey: ADMIN_KEY, databaseUrl: process.env.BENCH_DATABASE }), TELEMETRY_RETENTION_DAYS: "0" });
  const service = await startService(config, createLogger("warn"));
  const raw = service.services.database.opened.raw;
  const started = performance.now();
  const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
  // The other devices of the table: FLEET devices with PER_FLEET_DEVICE snapshots each, one INSERT ... SELECT.
  await raw.query(
    `INSERT INTO "Device" ("id", "organizationId", "name", "status", "labels", "createdAt", "updatedAt")
     SELECT gen_random_uuid(), $1::uuid, 'fleet-' || i, 'online', '{}'::jsonb, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
       FROM generate_series(1, $2::int) i`, [org.id, FLEET]);
  // Their snapshots go through the ingest statement (one batch per device), so that the rollups
  // op 11 reads at 5m, 1h and 1d hold them too.
  const { insertSnapshots } = await import("../src/modules/telemetry/ingest.js");
  const fleetIds = await raw.query<{ id: string }>(`SELECT "id" FROM "Device" WHERE "name" LIKE 'fleet-%'`);
  const now = Date.now();
  for (const { id } of fleetIds) {
    const snapshots = Array.from({ length: PER_FLEET_DEVICE }, (_, g) => ({
      timestamp: new Date(now - (g + 1) * 60_000).toISOString(), cpuUsagePercent: Math.random() * 100, memoryUsedBytes: 1_000_000_000,
      memoryTotalBytes: 4_000_000_000, diskUsedBytes: 50_000_000_000, diskTotalBytes: 100_000_000_000, uptimeSeconds: (g + 1) * 60,
      restartCount: 0, containersRunning: 3, containersFailed: 0, errorCount: 0,
    }));
    await insertSnapshots(raw, { id, organizationId: org.id }, snapshots, { retentionDays: config.TELEMETRY_RETENTION_DAYS });
  }
  const fleetSeconds = (performance.now() - started) / 1000;
  const [one] = await raw.query<{ id: string }>(`SELECT "id" FROM "Device" WHERE "name" = 'fleet-1'`);
  process.stdout.write(`READY ${JSON.stringify({ url: service.url, fleetSeconds, fleetDeviceId: one.id })}\n`);
  process.on("SIGTERM", () => {
    void service.stop().finally(() => {
      fs.rmSync(dataDir, { recursive: true, force: true });
      process.exit(0);
    });
  });
}

/** The baseline: receives the same body, parses it, answers like the service. */
function bare() {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as { snapshots: unknown[] };
      const payload = JSON.stringify({ accepted: body.snapshots.length });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }).end(payload);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, "127.0.0.1", () => process.stdout.write(`READY ${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

// ---- load generator --------------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(url: string, body: Buffer | string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const payload = typeof body === "string" ? Buffer.from(body) : body;
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", agent, headers: { "content-type": "application/json", "content-length": String(payload.length), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on("error", reject);
    req.end(payload);
  });
}

async function get(url: string, key: string) {
  return new Promise<{ status: number; json: any }>((resolve, reject) => {
    http.get(url, { agent, headers: { "x-api-key": key } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || "null") }));
    }).on("error", reject);
  });
}

async function api(base: string, key: string, method: string, p: string, body?: unknown) {
  const res = await post(base + p, JSON.stringify(body ?? {}), { "x-api-key": key });
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${res.text}`);
  return JSON.parse(res.text);
}

const SERIES_START = Date.now() - SERIES * STEP_MS - 3600_000;

/** Batch `b` of the series: 1,000 consecutive snapshots with plausible values. */
function batchBody(b: number): Buffer {
  const snapshots = [];
  for (let i = 0; i < BATCH; i++) {
    const n = b * BATCH + i;
    snapshots.push({
      timestamp: new Date(SERIES_START + n * STEP_MS).toISOString(),
      cpuUsagePercent: (n * 37) % 100,
      memoryUsedBytes: 1_000_000_000 + (n % 1000) * 1_000_000,
      memoryTotalBytes: 4_000_000_000,
      diskUsedBytes: 50_000_000_000 + (n % 977) * 10_000_000,
      diskTotalBytes: 100_000_000_000,
      uptimeSeconds: n * 10,
      restartCount: Math.floor(n / 100_000),
      containersRunning: 3,
      containersFailed: n % 50 === 0 ? 1 : 0,
      errorCount: n % 7,
    });
  }
  return Buffer.from(JSON.stringify({ snapshots }));
}

/** Sends batches first..first+count-1 with `concurrency` requests in flight; answers snapshots/s and latencies. */
async function ingest(url: string, count: number, concurrency: number, headers: () => Promise<Record<string, string>>, first = 0) {
  let next = 0;
  const latencies: number[] = [];
  let failed = 0;
  let lastError = "";
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let b = next++; b < count; b = next++) {
      // Built per request (about a millisecond) outside the timed span; only the request is timed.
      const body = batchBody(first + b);
      const t0 = performance.now();
      const res = await post(url, body, await headers());
      latencies.push(performance.now() - t0);
      if (res.status !== 200) {
        failed++;
        lastError = `${res.status} ${res.text.slice(0, 200)}`;
      }
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  return { perSecond: ((count - failed) * BATCH) / seconds, seconds, failed, lastError, latency: percentiles(latencies) };
}

async function timeQuery(url: string, key: string) {
  for (let i = 0; i < 3; i++) {
    const res = await get(url, key);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(res.json)}`);
  }
  const samples: number[] = [];
  let last: any = null;
  for (let i = 0; i < QUERY_RUNS; i++) {
    const t0 = performance.now();
    last = (await get(url, key)).json;
    samples.push(performance.now() - t0);
  }
  return { ...percentiles(samples), last };
}

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const service = await startChild("../telemetry.ts", { BENCH_TELEMETRY_ROLE: "serve", ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) });
  const base = service.info.url as string;
  try {
    console.log(`bulk-inserted ${FLEET.toLocaleString("en")} devices with ${PER_FLEET_DEVICE} snapshots each (${(FLEET * PER_FLEET_DEVICE).toLocaleString("en")} rows) in ${Number(service.info.fleetSeconds).toFixed(1)} s`);
    // One device enrolled over the real protocol, in its own organization.
    const { FleetSimulator } = await import("../src/simulator/engine.js");
    const org = await api(base, ADMIN_KEY, "POST", "/api/v1/organizations", { name: "Bench Telemetry" });
    const key = (await api(base, ADMIN_KEY, "POST", `/api/v1/organizations/${org.id}/api-keys`, { name: "bench", permissions: ["*"] })).key as string;
    await api(base, key, "POST", "/api/v1/ca-certificates/generate", { name: "bench-ca", commonName: "Bench CA" });
    const token = await api(base, key, "POST", "/api/v1/enrollment-tokens", { name: "bench" });
    const simulator = new FleetSimulator({ url: base, enrollmentToken: token.token, devices: 1, heartbeatMs: 30_000, telemetryMs: 0, failureRate: 0, enrollConcurrency: 1, maxSockets: 4 });
    await simulator.enrollAll();
    const device = simulator.devices.find((d) => d.deviceId)!;
    await simulator.stop();
    // Tokens live five minutes: sign a fresh one now and then.
    let token0 = { value: await device.authorization(), at: Date.now() };
    const auth = async () => {
      if (Date.now() - token0.at > 120_000) token0 = { value: await device.authorization(), at: Date.now() };
      return { authorization: token0.value };
    };

    const batches = Math.ceil(SERIES / BATCH);
    const ingestUrl = `${base}/api/v1/agent/telemetry`;
    await ingest(ingestUrl, 5, 1, auth, -5); // warm-up: 5,000 snapshots just before the series
    const ingested = await ingest(ingestUrl, batches, CONCURRENCY, auth);
    console.log(
      `ingest: ${ingested.perSecond.toFixed(0)} snapshots/s (${batches} batches of ${BATCH} over ${ingested.seconds.toFixed(1)} s, ${CONCURRENCY} in flight, one device); ` +
      `batch p50 ${fmtMs(ingested.latency.p50)}, p99 ${fmtMs(ingested.latency.p99)}; failed ${ingested.failed}${ingested.failed ? ` (${ingested.lastError})` : ""}`,
    );

    const deviceId = device.deviceId!;
    const end = SERIES_START + SERIES * STEP_MS;
    const iso = (t: number) => new Date(t).toISOString();
    const day = 86_400_000;
    const series = (from: number, to: number, interval: string, id = deviceId) =>
      `${base}/api/v1/devices/${id}/telemetry?from=${iso(from)}&to=${iso(to)}&interval=${interval}`;
    const queries: Record<string, Awaited<ReturnType<typeof timeQuery>>> = {
      "op 11 one day at 5m": await timeQuery(series(end - day, end, "5m"), key),
      "op 11 one hour at 1m": await timeQuery(series(end - 3600_000, end, "1m"), key),
      "op 11 seven days at 1h": await timeQuery(series(end - 7 * day, end, "1h"), key),
      "op 11 whole series at 1d": await timeQuery(series(SERIES_START, end, "1d"), key),
      "op 13 latest": await timeQuery(`${base}/api/v1/devices/${deviceId}/telemetry/latest`, key),
      "raw cpu, one day, page of 50": await timeQuery(`${base}/api/v1/devices/${deviceId}/telemetry/raw?metric=cpuUsagePercent&from=${iso(end - day)}&to=${iso(end)}&limit=50`, key),
      "op 11 fleet device, 2 h at 5m": await timeQuery(series(Date.now() - 2 * 3600_000, Date.now(), "5m", service.info.fleetDeviceId), ADMIN_KEY),
    };
    for (const [name, q] of Object.entries(queries)) {
      const rows = Array.isArray(q.last?.data) ? `, ${q.last.total.toLocaleString("en")} raw snapshots, ${q.last.data.length} buckets`
        : Array.isArray(q.last?.items) ? `, ${q.last.total.toLocaleString("en")} values in range` : "";
      console.log(`${name.padEnd(32)} p50 ${fmtMs(q.p50).padStart(9)}  p90 ${fmtMs(q.p90).padStart(9)}  p99 ${fmtMs(q.p99).padStart(9)}  (n=${q.n}${rows})`);
    }

    const baseline = await startChild("../telemetry.ts", { BENCH_TELEMETRY_ROLE: "bare" });
    let bareFigures;
    try {
      bareFigures = await ingest(`${baseline.info.url}/api/v1/agent/telemetry`, Math.min(batches, 300), CONCURRENCY, auth);
    } finally {
      await baseline.stop();
    }
    console.log(`bare node:http receiving and parsing the same batches: ${bareFigures.perSecond.toFixed(0)} snapshots/s, batch p50 ${fmtMs(bareFigures.latency.p50)}; ` +
      `service/bare = ${((ingested.perSecond / bareFigures.perSecond) * 100).toFixed(1)} %`);
    return {
      database,
      ingestSnapshotsPerSecond: Math.round(ingested.perSecond),
      ingestBatchP50Ms: +ingested.latency.p50.toFixed(1),
      ingestBatchP99Ms: +ingested.latency.p99.toFixed(1),
      bareSnapshotsPerSecond: Math.round(bareFigures.perSecond),
      queriesP50Ms: Object.fromEntries(Object.entries(queries).map(([k, v]) => [k, +v.p50.toFixed(2)])),
    };
  } finally {
    await service.stop();
  }
}

/** A fresh database on the given server (dropped afterwards), so that a shared server is not polluted. */
async function freshDatabase(url: string) {
  const name = `fleet_bench_telemetry_${process.pid}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  const u = new URL(url);
  u.pathname = `/${name}`;
  return { url: u.toString(), drop: async () => { await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`); await admin.end(); } };
}

async function main() {
  console.log(machineLine());
  console.log(`settings: ${SERIES.toLocaleString("en")} snapshots of one device in batches of ${BATCH} (${CONCURRENCY} in flight), ` +
    `${FLEET.toLocaleString("en")} other devices x ${PER_FLEET_DEVICE} snapshots, ${QUERY_RUNS} sequential runs per query`);
  const results = [];
  if (WHICH !== "postgres") results.push(await run("PGlite (embedded)"));
  if (WHICH !== "pglite") {
    const external = process.env.BENCH_DATABASE_URL;
    if (external) {
      const db = await freshDatabase(external);
      try {
        results.push(await run("PostgreSQL (BENCH_DATABASE_URL, fresh database)", db.url));
      } finally {
        await db.drop();
      }
    } else {
      const server = await startThrowawayPostgres();
      if (server) {
        try {
          results.push(await run(`PostgreSQL (${server.version}, throwaway, default settings)`, server.url));
        } finally {
          server.stop();
        }
      } else {
        console.log("\n== PostgreSQL: skipped (no binaries under /usr/lib/postgresql; set BENCH_DATABASE_URL to use a server)");
      }
    }
  }
  console.log("\nsummary (JSON):");
  console.log(JSON.stringify(results, null, 2));
  process.exit(0);
}

const role = process.env.BENCH_TELEMETRY_ROLE;
if (role === "serve") await serve();
else if (role === "bare") bare();
else await main();
