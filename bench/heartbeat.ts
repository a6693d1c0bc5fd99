// Benchmark: device heartbeats per second through HTTP with valid device JWTs (the
// simulator's engine), against a bare node:http server answering the same route in the same
// run, and the latency of spec ops 12 and 14 over 100,000 devices bulk-inserted with SQL.
// Runs on PGlite and, when PostgreSQL binaries are installed (or BENCH_DATABASE_URL is set),
// on a throwaway PostgreSQL. Prints figures; asserts nothing.
//
//   npm run bench -- heartbeat
//   BENCH_DEVICES=1000 BENCH_SECONDS=20 BENCH_CONCURRENCY=64 BENCH_FLEET=100000 BENCH_DB=both|pglite|postgres
//   BENCH_QUERY_RUNS=0 (heartbeats only)  BENCH_FACADE=0 (skip the REST-facade comparison)
//   BENCH_ROUNDS=4 (the service and the bare server take turns: this many slices of BENCH_SECONDS / BENCH_ROUNDS each)
//   BENCH_SERVICE_NODE_ARGS="--optimize-for-size" (flags of the service's process)
//   BENCH_RATE_LIMITS=1 (the /api/v1 rate limiters on, with budgets never reached: their cost)  BENCH_PROFILE=<dir> (CPU profile of the service during the measured heartbeats)
import os from "node:os";
import { FleetSimulator } from "../src/simulator/engine.js";
import { JsonClient } from "../agent/src/core/json-client.js";
import { closedLoop, LatencyRecorder } from "../src/simulator/latency.js";
import { fmtMs, postgresCpuMicros, machineLine, percentiles } from "./support/machine.js";
import { onEachDatabase } from "./support/postgres.js";
import { cpuMicrosUsed, cpuOf, startChild } from "./support/child.js";

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 20);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const FLEET = Number(process.env.BENCH_FLEET ?? 100_000);
const QUERY_RUNS = Number(process.env.BENCH_QUERY_RUNS ?? 40);
/** the service and the bare server alternate: this many slices of SECONDS / ROUNDS each */
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 4));
/** a directory: the service's CPU profile of the measured heartbeat phase goes there (bench/support/profile-summary.ts reads it) */
const PROFILE = process.env.BENCH_PROFILE;
// Node/V8 flags for the service's process only (e.g. "--optimize-for-size", which `npm start` passes)
const SERVICE_NODE_ARGS = (process.env.BENCH_SERVICE_NODE_ARGS ?? "").split(/\s+/).filter(Boolean);
const ADMIN_KEY = "fm_bench" + "B".repeat(36);

/** a heartbeat load, with the service's CPU µs per heartbeat over it */
type Measured = Awaited<ReturnType<FleetSimulator["heartbeatLoad"]>> & { cpuMicros: number };

interface Figures {
  database: string;
  enrollPerSecond: number;
  heartbeats: Measured;
  /** the same service and devices through the REST facade, one statement per heartbeat */
  facade: Measured | null;
  baseline: { perSecond: number; p50: number; p99: number; cpuMicros: number; generatorMicros: number };
  queries: Record<string, { p50: number; p90: number; p99: number; n: number }>;
}

async function api(client: JsonClient, method: string, p: string, body?: unknown) {
  const res = await client.request<any>(method, p, body, { "x-api-key": ADMIN_KEY });
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

async function timeQuery(client: JsonClient, method: string, p: string, body?: unknown) {
  for (let i = 0; i < 3; i++) await api(client, method, p, body); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < QUERY_RUNS; i++) {
    const t0 = performance.now();
    await api(client, method, p, body);
    samples.push(performance.now() - t0);
  }
  return percentiles(samples);
}

/** Requests, seconds and CPU summed over the slices of one side of the comparison. */
class Totals {
  ok = 0;
  failed = 0;
  seconds = 0;
  /** the server's CPU, µs */
  serverMicros = 0;
  /** this process's CPU (the load generator), µs */
  generatorMicros = 0;
  /** PostgreSQL's processes' CPU, µs; null when not measured */
  postgresMicros: number | null = null;
  /** the service's group commit: heartbeats written, and the statements that wrote them */
  rows = 0;
  statements = 0;
  readonly latency = new LatencyRecorder();

  /** adds one slice; returns its rate */
  add(slice: { ok: number; failed: number; seconds: number; serverMicros: number; generatorMicros: number; postgresMicros?: number | null; rows?: number; statements?: number }) {
    this.ok += slice.ok;
    this.failed += slice.failed;
    this.seconds += slice.seconds;
    this.serverMicros += slice.serverMicros;
    this.generatorMicros += slice.generatorMicros;
    if (slice.postgresMicros != null) this.postgresMicros = (this.postgresMicros ?? 0) + slice.postgresMicros;
    this.rows += slice.rows ?? 0;
    this.statements += slice.statements ?? 0;
    return slice.ok / slice.seconds;
  }

  get answered() {
    return this.ok + this.failed;
  }
  get perSecond() {
    return this.ok / this.seconds;
  }
  perRequest(micros: number) {
    return micros / Math.max(1, this.answered);
  }
}

/**
 * The same route answered by a bare node:http server (own process): the ceiling of this
 * machine and load generator. Started once and warmed up; `slice` measures it for a while, so
 * that its slices can alternate with the service's.
 */
async function startBaseline(authorization: string) {
  const bare = await startChild("bare-server.ts", {});
  const client = new JsonClient(bare.info.url, CONCURRENCY);
  const heartbeat = () => client.request("POST", "/api/v1/agent/heartbeat", { status: "online" }, { authorization });
  await closedLoop(CONCURRENCY, 2000, () => heartbeat().then(() => undefined));
  const totals = new Totals();
  return {
    totals,
    /** measures `ms` of load; returns the rate of this slice */
    async slice(ms: number) {
      const cpuBefore = await cpuOf(bare);
      const generatorBefore = process.cpuUsage();
      const started = performance.now();
      let ok = 0;
      let failed = 0;
      await closedLoop(CONCURRENCY, ms, async () => {
        const t0 = performance.now();
        const res = await heartbeat();
        if (res.status === 200) ok++;
        else failed++;
        totals.latency.record(performance.now() - t0);
      });
      const seconds = (performance.now() - started) / 1000;
      const generator = process.cpuUsage(generatorBefore);
      return totals.add({ ok, failed, seconds, serverMicros: cpuMicrosUsed(cpuBefore, await cpuOf(bare)), generatorMicros: generator.user + generator.system });
    },
    async stop() {
      client.close();
      await bare.stop();
    },
  };
}

async function run(database: string, databaseUrl?: string): Promise<Figures> {
  console.log(`\n== ${database}`);
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: String(FLEET), ...(databaseUrl ? { BENCH_DATABASE: databaseUrl } : {}) }, undefined, SERVICE_NODE_ARGS);
  const url = service.info.url as string;
  const client = new JsonClient(url, 8);
  try {
    console.log(`inserted ${FLEET.toLocaleString("en")} devices in ${Number(service.info.fleetSeconds).toFixed(1)} s (one INSERT ... SELECT)`);

    // Heartbeats come from devices of a second organization, enrolled over the real protocol.
    const org = await api(client, "POST", "/api/v1/organizations", { name: "Bench Devices" });
    const key = await api(client, "POST", `/api/v1/organizations/${org.id}/api-keys`, { name: "bench", permissions: ["*"] });
    const orgApi = (method: string, p: string, body?: unknown) =>
      client.request<any>(method, p, body, { "x-api-key": key.key }).then((r) => {
        if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(r.body)}`);
        return r.body;
      });
    await orgApi("POST", "/api/v1/ca-certificates/generate", { name: "bench-ca", commonName: "Bench CA" });
    const token = await orgApi("POST", "/api/v1/enrollment-tokens", { name: "bench", labels: { bench: "yes" } });

    const simulator = new FleetSimulator({
      url,
      enrollmentToken: token.token,
      devices: DEVICES,
      heartbeatMs: 30_000,
      telemetryMs: 0,
      failureRate: 0,
      enrollConcurrency: 16,
      maxSockets: CONCURRENCY,
    });
    const t0 = performance.now();
    await simulator.enrollAll();
    const enrollSeconds = (performance.now() - t0) / 1000;
    const enrolled = simulator.stats().enrolled;
    if (enrolled === 0) throw new Error(`no device enrolled: ${simulator.stats().lastError}`);
    const enrollPerSecond = enrolled / enrollSeconds;
    console.log(`enrolled ${enrolled} devices in ${enrollSeconds.toFixed(1)} s (${enrollPerSecond.toFixed(0)}/s, key generation and CSR included)`);

    // Warm-up (JIT, connections, the certificate cache): at least 3 s and until every device
    // was seen twice, so that the measured phase is not a series of first verifications.
    for (let seen = 0, t = performance.now(); seen < 2 * enrolled && performance.now() - t < 60_000;) {
      const w = await simulator.heartbeatLoad(3000, CONCURRENCY);
      seen += w.ok;
    }
    const postgresPort = databaseUrl ? Number(new URL(databaseUrl).port || 5432) : null;
    /** measures `ms` of heartbeats into `totals`; returns the rate of this slice */
    const slice = async (totals: Totals, ms: number) => {
      const before = await service.command("stats");
      const otherBefore = { postgres: postgresPort ? postgresCpuMicros(postgresPort) : null, generator: process.cpuUsage() };
      if (PROFILE) service.process.kill("SIGUSR2"); // start the service's CPU profile (bench/support/serve.ts)
      const result = await simulator.heartbeatLoad(ms, CONCURRENCY, totals.latency);
      if (PROFILE) service.process.kill("SIGUSR2"); // ... and write it
      const after = await service.command("stats");
      const generator = process.cpuUsage(otherBefore.generator);
      const postgresAfter = postgresPort ? postgresCpuMicros(postgresPort) : null;
      return totals.add({
        ok: result.ok,
        failed: result.failed,
        seconds: result.seconds,
        serverMicros: cpuMicrosUsed(before, after),
        generatorMicros: generator.user + generator.system,
        postgresMicros: postgresAfter !== null && otherBefore.postgres !== null ? postgresAfter - otherBefore.postgres : null,
        rows: after.rows - before.rows,
        statements: after.statements - before.statements,
      });
    };
    const report = (label: string, totals: Totals): Measured => {
      const latency = totals.latency.summary();
      console.log(
        `heartbeats, ${label}: ${totals.perSecond.toFixed(0)}/s over ${totals.seconds.toFixed(1)} s, ${CONCURRENCY} concurrent, ${enrolled} devices; ` +
        `service CPU ${totals.perRequest(totals.serverMicros).toFixed(0)} µs per heartbeat` +
        (totals.postgresMicros !== null ? `, PostgreSQL's processes ${totals.perRequest(totals.postgresMicros).toFixed(0)} µs` : "") +
        `, load generator ${totals.perRequest(totals.generatorMicros).toFixed(0)} µs; ` +
        `p50 ${fmtMs(latency.p50)}, p99 ${fmtMs(latency.p99)}; failed ${totals.failed}` +
        (totals.failed ? ` (${simulator.stats().lastError})` : "") +
        `; ${totals.statements} statements for ${totals.rows} heartbeats (${totals.statements ? (totals.rows / totals.statements).toFixed(1) : "-"} per statement); load average ${os.loadavg()[0].toFixed(1)}`,
      );
      return { ok: totals.ok, failed: totals.failed, seconds: totals.seconds, perSecond: totals.perSecond, latency, cpuMicros: totals.perRequest(totals.serverMicros) };
    };

    // The service and the bare server take turns, ROUNDS slices each, with the same load
    // generator: whatever else slows this machine for a while (other virtual machines on the
    // host, a background job) falls on both sides of the ratio, not on one.
    const authorization = await simulator.devices.find((d) => d.deviceId)!.authorization();
    const bare = await startBaseline(authorization);
    const serviceTotals = new Totals();
    const rounds = PROFILE ? 1 : ROUNDS;
    const sliceMs = (SECONDS * 1000) / rounds;
    try {
      for (let round = 1; round <= rounds; round++) {
        const servicePerSecond = await slice(serviceTotals, sliceMs);
        const barePerSecond = await bare.slice(sliceMs);
        console.log(`round ${round} of ${rounds}: service ${servicePerSecond.toFixed(0)}/s, bare ${barePerSecond.toFixed(0)}/s = ${((servicePerSecond / barePerSecond) * 100).toFixed(1)} %`);
      }
    } finally {
      await bare.stop();
    }
    const heartbeats = report("lean route + group commit", serviceTotals);
    // The same service with the heartbeat served by the REST facade and one statement per
    // heartbeat (the path before the lean route and the group commit), in the same run.
    let facade: Figures["facade"] = null;
    if (!PROFILE && process.env.BENCH_FACADE !== "0") {
      await service.command("path facade");
      await simulator.heartbeatLoad(3000, CONCURRENCY);
      const totals = new Totals();
      await slice(totals, SECONDS * 1000);
      facade = report("REST facade, one statement each", totals);
      await service.command("path lean");
    }
    await simulator.stop();

    const b = bare.totals;
    const baseline = { perSecond: b.perSecond, p50: b.latency.summary().p50, p99: b.latency.summary().p99, cpuMicros: b.perRequest(b.serverMicros), generatorMicros: b.perRequest(b.generatorMicros) };
    console.log(`bare node:http on the same route: ${baseline.perSecond.toFixed(0)}/s over ${b.seconds.toFixed(1)} s, p50 ${fmtMs(baseline.p50)}, p99 ${fmtMs(baseline.p99)}, CPU ${baseline.cpuMicros.toFixed(0)} µs per request, load generator ${baseline.generatorMicros.toFixed(0)} µs; ` +
      `service/bare = ${((heartbeats.perSecond / baseline.perSecond) * 100).toFixed(1)} % (by CPU per request: ${((baseline.cpuMicros / heartbeats.cpuMicros) * 100).toFixed(1)} %)` +
      (facade ? ` (REST facade, one statement each: ${((facade.perSecond / baseline.perSecond) * 100).toFixed(1)} %)` : ""));

    const queries: Figures["queries"] = QUERY_RUNS === 0 ? {} : {
      "op 12 selective {site, tier}": await timeQuery(client, "POST", "/api/v1/groups/query", { labelSelector: { site: "site-3", tier: "edge" } }),
      "op 12 broad {tier}": await timeQuery(client, "POST", "/api/v1/groups/query", { labelSelector: { tier: "edge" } }),
      "op 12 rare {maintenance}": await timeQuery(client, "POST", "/api/v1/groups/query", { labelSelector: { maintenance: "yes" } }),
      "op 12 all {}": await timeQuery(client, "POST", "/api/v1/groups/query", { labelSelector: {} }),
      "op 14 by-label site (20 groups)": await timeQuery(client, "GET", "/api/v1/groups/by-label/site"),
      "op 14 by-label maintenance (rare)": await timeQuery(client, "GET", "/api/v1/groups/by-label/maintenance"),
      "op 14 by-label unknown": await timeQuery(client, "GET", "/api/v1/groups/by-label/unknown"),
      "fleet stats": await timeQuery(client, "GET", "/api/v1/groups/stats"),
      "device list, selector, page of 50": await timeQuery(client, "GET", "/api/v1/devices?labels=site=site-3,tier=edge&limit=50"),
    };
    for (const [name, q] of Object.entries(queries)) {
      console.log(`${name.padEnd(36)} p50 ${fmtMs(q.p50).padStart(9)}  p90 ${fmtMs(q.p90).padStart(9)}  p99 ${fmtMs(q.p99).padStart(9)}  (n=${q.n}, sequential, over ${FLEET.toLocaleString("en")} devices)`);
    }
    return { database, enrollPerSecond, heartbeats, facade, baseline, queries };
  } finally {
    client.close();
    await service.stop();
  }
}

console.log(machineLine());
console.log(`settings: ${DEVICES} enrolled devices, ${SECONDS} s of heartbeats at ${CONCURRENCY} concurrent requests, ${FLEET.toLocaleString("en")} devices for ops 12/14`);
const results: Figures[] = [];
results.push(...(await onEachDatabase(run)));
console.log("\nsummary (JSON):");
console.log(JSON.stringify(results.map((r) => ({
  database: r.database,
  heartbeatsPerSecond: Math.round(r.heartbeats.perSecond),
  heartbeatP50Ms: +r.heartbeats.latency.p50.toFixed(2),
  heartbeatP99Ms: +r.heartbeats.latency.p99.toFixed(2),
  serviceCpuMicrosPerHeartbeat: Math.round(r.heartbeats.cpuMicros),
  bareCpuMicrosPerRequest: Math.round(r.baseline.cpuMicros),
  facadeCpuMicrosPerHeartbeat: r.facade ? Math.round(r.facade.cpuMicros) : null,
  facadePerSecond: r.facade ? Math.round(r.facade.perSecond) : null,
  facadeP50Ms: r.facade ? +r.facade.latency.p50.toFixed(2) : null,
  facadeP99Ms: r.facade ? +r.facade.latency.p99.toFixed(2) : null,
  bareNodeHttpPerSecond: Math.round(r.baseline.perSecond),
  ratioToBare: +(r.heartbeats.perSecond / r.baseline.perSecond).toFixed(3),
  enrollPerSecond: Math.round(r.enrollPerSecond),
  queriesP50Ms: Object.fromEntries(Object.entries(r.queries).map(([k, v]) => [k, +v.p50.toFixed(2)])),
})), null, 2));
process.exit(0);
