// Benchmark: management reads by id (GET /api/v1/devices/{id}) with an API key at
// BENCH_READ_CONCURRENCY (50) concurrent clients, over BENCH_FLEET devices, against a bare
// node:http server answering a device of the same size in the same run. The goal:
// p50 under 5 ms at 50 concurrent clients. Runs on PGlite and PostgreSQL (throwaway, or
// BENCH_DATABASE_URL). Prints figures; asserts nothing.
//
//   npm run bench -- management-read
//   BENCH_FLEET=10000 BENCH_SECONDS=10 BENCH_READ_CONCURRENCY=50 BENCH_DB=both|pglite|postgres BENCH_PROFILE=<dir>
import http from "node:http";
import os from "node:os";
import { JsonClient } from "../src/simulator/http-client.js";
import { closedLoop, LatencyRecorder } from "../src/simulator/latency.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { startChild } from "./support/child.js";

const FLEET = Number(process.env.BENCH_FLEET ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_READ_CONCURRENCY ?? 50);
const ADMIN_KEY = "fm_bench" + "R".repeat(36);

interface Load {
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  failed: number;
}

async function load(client: JsonClient, paths: () => string, headers: Record<string, string>): Promise<Load> {
  await closedLoop(CONCURRENCY, 2000, async () => void (await client.request("GET", paths(), undefined, headers))); // warm-up
  const latency = new LatencyRecorder();
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  await closedLoop(CONCURRENCY, SECONDS * 1000, async () => {
    const t0 = performance.now();
    const res = await client.request("GET", paths(), undefined, headers);
    latency.record(performance.now() - t0);
    if (res.status === 200) ok++;
    else failed++;
  });
  const s = latency.summary();
  return { perSecond: ok / ((performance.now() - started) / 1000), p50: s.p50, p90: s.p90, p99: s.p99, failed };
}

/** A bare node:http server in this process's sibling: the same JSON for every GET. */
async function bare(sample: unknown): Promise<Load> {
  const payload = JSON.stringify(sample);
  const server = http.createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
    res.end(payload);
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = new JsonClient(`http://127.0.0.1:${(server.address() as { port: number }).port}`, CONCURRENCY);
  try {
    return await load(client, () => "/api/v1/devices/x", {});
  } finally {
    client.close();
    server.closeAllConnections();
    server.close();
  }
}

const line = (label: string, l: Load) =>
  `${label.padEnd(44)} ${l.perSecond.toFixed(0).padStart(6)}/s  p50 ${fmtMs(l.p50).padStart(9)}  p90 ${fmtMs(l.p90).padStart(9)}  p99 ${fmtMs(l.p99).padStart(9)}  failed ${l.failed}; load average ${os.loadavg()[0].toFixed(1)}`;

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: String(FLEET), ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) });
  const client = new JsonClient(service.info.url as string, CONCURRENCY);
  try {
    const headers = { "x-api-key": ADMIN_KEY };
    const list = await client.request<{ items: { id: string }[] }>("GET", "/api/v1/devices?limit=200", undefined, headers);
    if (list.status !== 200) throw new Error(`device list: ${list.status}`);
    const ids = list.body.items.map((d) => d.id);
    const sample = (await client.request("GET", `/api/v1/devices/${ids[0]}`, undefined, headers)).body;
    let i = 0;
    const profile = process.env.BENCH_PROFILE; // CPU profile of the service during the measured phase (bench/support/serve.ts)
    if (profile) setTimeout(() => service.process.kill("SIGUSR2"), 2500).unref();
    const byId = await load(client, () => `/api/v1/devices/${ids[i++ % ids.length]}`, headers);
    if (profile) service.process.kill("SIGUSR2");
    console.log(line(`GET /devices/{id}, ${CONCURRENCY} concurrent`, byId));
    const base = await bare(sample);
    console.log(line("bare node:http, same JSON, same client", base));
    console.log(`service/bare = ${((byId.perSecond / base.perSecond) * 100).toFixed(1)} %`);
    return { database, byId, bare: base };
  } finally {
    client.close();
    await service.stop();
  }
}

console.log(machineLine());
console.log(`settings: ${FLEET.toLocaleString("en")} devices, ${SECONDS} s at ${CONCURRENCY} concurrent clients, API key, 200 different devices in turn`);
const results = [];
results.push(...(await onEachDatabase(run)));
console.log("\nsummary (JSON):");
console.log(JSON.stringify(results.map((r) => ({
  database: r.database,
  getByIdPerSecond: Math.round(r.byId.perSecond),
  getByIdP50Ms: +r.byId.p50.toFixed(2),
  getByIdP99Ms: +r.byId.p99.toFixed(2),
  bareNodeHttpPerSecond: Math.round(r.bare.perSecond),
  ratioToBare: +(r.byId.perSecond / r.bare.perSecond).toFixed(3),
})), null, 2));
process.exit(0);
