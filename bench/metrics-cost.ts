// Benchmark: what the service's Prometheus metrics (docs/observability.md) cost the busiest
// operation. Two services in the same run, one with METRICS_TOKEN (every request counted, and
// scraped once a second, far more often than a Prometheus would) and one without (nothing
// counted), each on its own PGlite with its own enrolled devices; heartbeats are measured on
// each in turn, off/on/off/on..., so that the load of a shared machine falls on both alike.
// Prints figures; asserts nothing.
//
//   npm run bench -- metrics-cost
//   BENCH_DEVICES=300 BENCH_SECONDS=10 BENCH_CONCURRENCY=32 BENCH_ROUNDS=3
import os from "node:os";
import { FleetSimulator } from "../src/simulator/engine.js";
import { JsonClient } from "../agent/src/core/json-client.js";
import { fmtMs, machineLine } from "./support/machine.js";
import { startChild, type Child } from "./support/child.js";

const DEVICES = Number(process.env.BENCH_DEVICES ?? 300);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const ADMIN_KEY = "fm_bench" + "M".repeat(36);
const METRICS_TOKEN = "bench-metrics-token-" + "t".repeat(20);

interface Side {
  label: "off" | "on";
  service: Child;
  client: JsonClient;
  simulator: FleetSimulator;
  runs: { perSecond: number; p50: number; p99: number }[];
}

async function prepare(label: Side["label"]): Promise<Side> {
  const service = await startChild("serve.ts", { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: "0", ...(label === "on" ? { BENCH_METRICS_TOKEN: METRICS_TOKEN } : { BENCH_METRICS_TOKEN: "" }) });
  const url = service.info.url as string;
  const client = new JsonClient(url, 4);
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await client.request<any>(method, p, body, { "x-api-key": ADMIN_KEY });
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  await api("POST", "/api/v1/ca-certificates/generate", { name: "bench-ca", commonName: "Bench CA" });
  const token = await api("POST", "/api/v1/enrollment-tokens", { name: "bench" });
  const simulator = new FleetSimulator({
    url, enrollmentToken: token.token, devices: DEVICES, heartbeatMs: 30_000, telemetryMs: 0, failureRate: 0, enrollConcurrency: 16, maxSockets: CONCURRENCY,
  });
  await simulator.enrollAll();
  if (simulator.stats().enrolled !== DEVICES) throw new Error(`enrolled ${simulator.stats().enrolled} of ${DEVICES}: ${simulator.stats().lastError}`);
  await simulator.heartbeatLoad(3000, CONCURRENCY); // warm-up: JIT, connections, certificate cache
  return { label, service, client, simulator, runs: [] };
}

/** Heartbeats for SECONDS; with metrics on, /metrics is scraped every second meanwhile. */
async function measure(side: Side): Promise<void> {
  let scrapes = 0;
  let scrapeBytes = 0;
  const scraper = side.label === "on"
    ? setInterval(() => {
      void side.client.request<string>("GET", "/metrics", undefined, { authorization: `Bearer ${METRICS_TOKEN}` }).then((res) => {
        if (res.status !== 200) throw new Error(`/metrics: ${res.status}`);
        scrapes++;
        scrapeBytes = String(res.body).length;
      });
    }, 1000)
    : null;
  const result = await side.simulator.heartbeatLoad(SECONDS * 1000, CONCURRENCY);
  if (scraper) clearInterval(scraper);
  side.runs.push({ perSecond: result.perSecond, p50: result.latency.p50, p99: result.latency.p99 });
  console.log(`metrics ${side.label.padEnd(3)}: ${result.perSecond.toFixed(0)} heartbeats/s, p50 ${fmtMs(result.latency.p50)}, p99 ${fmtMs(result.latency.p99)}, failed ${result.failed}` +
    (scraper ? `; ${scrapes} scrapes of ~${Math.round(scrapeBytes / 1024)} KiB` : "") + `; load average ${os.loadavg()[0].toFixed(1)}`);
}

console.log(machineLine());
console.log(`settings: ${DEVICES} devices per service, ${SECONDS} s per measurement, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of off/on (PGlite)`);
const off = await prepare("off");
const on = await prepare("on");
try {
  for (let round = 0; round < ROUNDS; round++) {
    // alternate which goes first, so neither always follows the other's warm-up
    for (const side of round % 2 === 0 ? [off, on] : [on, off]) await measure(side);
  }
  const mean = (s: Side) => s.runs.reduce((n, r) => n + r.perSecond, 0) / s.runs.length;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`\nmean heartbeats/s: off ${mean(off).toFixed(0)}, on ${mean(on).toFixed(0)}: on/off = ${((mean(on) / mean(off)) * 100).toFixed(1)} %`);
  console.log(`median p50: off ${fmtMs(median(off.runs.map((r) => r.p50)))}, on ${fmtMs(median(on.runs.map((r) => r.p50)))}; median p99: off ${fmtMs(median(off.runs.map((r) => r.p99)))}, on ${fmtMs(median(on.runs.map((r) => r.p99)))}`);
} finally {
  for (const side of [off, on]) {
    await side.simulator.stop();
    side.client.close();
    await side.service.stop();
  }
}
process.exit(0);
