// Benchmark: management reads by id (GET /api/v1/devices/{id}) with an API key, over
// BENCH_FLEET devices, driven by autocannon (a load generator no one here wrote), against a
// bare node:http server answering the same JSON in the same run. The issue's goal: p50 under
// 5 ms at 50 concurrent clients. Measured three ways, because "50 concurrent clients" means
// two different things:
//   * saturation: 50 connections, each sending its next request as soon as the last is
//     answered (autocannon's default). This is a throughput figure: by Little's law the p50
//     is 50 / throughput, the queue, whatever one read costs.
//   * paced: 50 clients sharing a fixed rate (BENCH_READ_RATES), requests evenly spaced, each
//     latency counted from the moment the request was due: the latency 50 clients see while the
//     service keeps up, which is what a dashboard or a script waiting on an answer experiences.
//     (Our own loop, `pacedLoop`: autocannon's rate limit sends each second's budget in a burst
//     and its coordinated-omission correction assumes a 1 ms interval, which inflates the
//     percentiles it reports.)
//   * one client: what one read costs end to end.
//   * the ladder (saturation, same connections): where the time of a saturated read goes, one
//     layer at a time: bare node:http; GET /healthz (express and the middleware every request
//     passes: request id, security headers); GET /api/v1/roles/permissions (an authenticated
//     procedure through tRPC and trpc-to-openapi that reads no database); the device read.
// Runs on PGlite and PostgreSQL (throwaway, or BENCH_DATABASE_URL). Prints figures; asserts nothing.
//
//   npm run bench -- management-read
//   BENCH_FLEET=10000 BENCH_SECONDS=10 BENCH_READ_CONCURRENCY=50 BENCH_READ_RATES=250,500,1000
//   BENCH_DB=both|pglite|postgres BENCH_PROFILE=<dir>
import os from "node:os";
import autocannon from "autocannon";
import { JsonClient } from "../agent/src/core/json-client.js";
import { LatencyRecorder, pacedLoop } from "../src/simulator/latency.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { cpuMicrosPerRequest, cpuOf, startChild, type Child } from "./support/child.js";

const FLEET = Number(process.env.BENCH_FLEET ?? 10_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_READ_CONCURRENCY ?? 50);
const RATES = (process.env.BENCH_READ_RATES ?? "250,500,1000").split(",").map(Number).filter((n) => n > 0);
const ADMIN_KEY = "fm_bench" + "R".repeat(36);

interface Load {
  label: string;
  perSecond: number;
  p50: number;
  p90: number;
  p99: number;
  failed: number;
  /** the server process's CPU (user + system) per request over the run, µs */
  cpuMicros?: number;
}

/** One autocannon run over `paths` in turn, each connection sending as soon as it is answered. */
async function cannon(label: string, url: string, paths: string[], headers: Record<string, string>, options: { connections: number; seconds: number; server?: Child }): Promise<Load> {
  let i = 0;
  const cpuBefore = options.server ? await cpuOf(options.server) : null;
  const result = await autocannon({
    url,
    connections: options.connections,
    duration: options.seconds,
    headers,
    requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: paths[i++ % paths.length] }) }],
  });
  const cpuMicros = cpuBefore ? cpuMicrosPerRequest(cpuBefore, await cpuOf(options.server!), result.requests.total) : undefined;
  return {
    cpuMicros,
    label,
    perSecond: result["2xx"] / result.duration,
    p50: result.latency.p50,
    p90: result.latency.p90,
    p99: result.latency.p99,
    failed: result.non2xx + result.errors + result.timeouts,
  };
}

/** `clients` clients sharing `perSecond` reads a second, latency from each read's due time. */
async function paced(label: string, url: string, paths: string[], headers: Record<string, string>, clients: number, perSecond: number): Promise<Load> {
  const client = new JsonClient(url, clients);
  const latency = new LatencyRecorder();
  let ok = 0;
  let failed = 0;
  let i = 0;
  const started = performance.now();
  try {
    await pacedLoop(clients, perSecond, SECONDS * 1000, async (dueAt) => {
      const res = await client.request("GET", paths[i++ % paths.length], undefined, headers);
      latency.record(performance.now() - dueAt);
      if (res.status === 200) ok++;
      else failed++;
    });
  } finally {
    client.close();
  }
  const s = latency.summary();
  return { label, perSecond: ok / ((performance.now() - started) / 1000), p50: s.p50, p90: s.p90, p99: s.p99, failed };
}

const line = (l: Load) =>
  `${l.label.padEnd(52)} ${l.perSecond.toFixed(0).padStart(6)}/s  p50 ${fmtMs(l.p50).padStart(8)}  p90 ${fmtMs(l.p90).padStart(8)}  p99 ${fmtMs(l.p99).padStart(8)}  failed ${l.failed}` +
  `${l.cpuMicros !== undefined ? `; server CPU ${l.cpuMicros.toFixed(0)} µs/request` : ""}; load average ${os.loadavg()[0].toFixed(1)}`;

async function run(database: string, databaseUrl?: string) {
  console.log(`\n== ${database}`);
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: String(FLEET), ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) });
  const url = service.info.url as string;
  const headers = { "x-api-key": ADMIN_KEY };
  const loads: Load[] = [];
  const report = (l: Load) => (loads.push(l), console.log(line(l)), l);
  let sample: unknown;
  try {
    const client = new JsonClient(url, 1);
    const list = await client.request<{ items: { id: string }[] }>("GET", "/api/v1/devices?limit=200", undefined, headers);
    if (list.status !== 200) throw new Error(`device list: ${list.status}`);
    const paths = list.body.items.map((d) => `/api/v1/devices/${d.id}`);
    sample = (await client.request("GET", paths[0], undefined, headers)).body;
    client.close();

    await cannon("warm-up", url, paths, headers, { connections: CONCURRENCY, seconds: 2 });
    const profile = process.env.BENCH_PROFILE; // CPU profiles of the service during the saturation run and the /roles/permissions rung (bench/support/serve.ts)
    if (profile) setTimeout(() => service.process.kill("SIGUSR2"), 1000).unref();
    const server = service;
    report(await cannon(`saturation: ${CONCURRENCY} connections, no pause`, url, paths, headers, { connections: CONCURRENCY, seconds: SECONDS, server }));
    if (profile) service.process.kill("SIGUSR2");
    const healthz = report(await cannon("ladder: GET /healthz (express, middleware)", url, ["/healthz"], {}, { connections: CONCURRENCY, seconds: SECONDS, server }));
    if (profile) setTimeout(() => service.process.kill("SIGUSR2"), 1000).unref(); // and of this rung: the REST facade's own cost
    const permissions = report(await cannon("ladder: GET /roles/permissions (procedure, no db)", url, ["/api/v1/roles/permissions"], headers, { connections: CONCURRENCY, seconds: SECONDS, server }));
    if (profile) service.process.kill("SIGUSR2");
    console.log(`roles/permissions / healthz = ${((permissions.perSecond / healthz.perSecond) * 100).toFixed(1)} % by throughput, ` +
      `${((healthz.cpuMicros! / permissions.cpuMicros!) * 100).toFixed(1)} % by CPU per request (the REST facade's own cost)`);
    for (const rate of RATES) {
      report(await paced(`paced: ${CONCURRENCY} clients sharing ${rate}/s`, url, paths, headers, CONCURRENCY, rate));
    }
    report(await cannon("one client, no pause", url, paths, headers, { connections: 1, seconds: SECONDS }));
  } finally {
    await service.stop();
  }
  const bare = await startChild("bare-server.ts", { BARE_PAYLOAD: JSON.stringify(sample) });
  try {
    const paths = ["/api/v1/devices/x"];
    const base = report(await cannon(`bare node:http, same JSON: ${CONCURRENCY} connections`, bare.info.url as string, paths, {}, { connections: CONCURRENCY, seconds: SECONDS, server: bare }));
    console.log(`service/bare (saturation) = ${((loads[0].perSecond / base.perSecond) * 100).toFixed(1)} %`);
  } finally {
    await bare.stop();
  }
  return { database, loads };
}

console.log(machineLine());
console.log(`settings: ${FLEET.toLocaleString("en")} devices, ${SECONDS} s per run, ${CONCURRENCY} connections, API key, 200 different devices in turn, autocannon`);
const results = await onEachDatabase(run);
console.log("\nsummary (JSON):");
console.log(JSON.stringify(results.map((r) => ({
  database: r.database,
  runs: r.loads.map((l) => ({ run: l.label, perSecond: Math.round(l.perSecond), p50Ms: l.p50, p90Ms: l.p90, p99Ms: l.p99, failed: l.failed, cpuMicrosPerRequest: l.cpuMicros === undefined ? null : Math.round(l.cpuMicros) })),
})), null, 2));
process.exit(0);
