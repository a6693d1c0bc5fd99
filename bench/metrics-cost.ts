// Benchmark: what the service's Prometheus metrics (docs/observability.md) cost the busiest
// operation. Two services in the same run, one with METRICS_TOKEN (every request counted, and
// scraped once a second, far more often than a Prometheus would) and one without (nothing
// counted), each on its own PGlite with its own enrolled devices; heartbeats are measured on
// each in turn, off/on/off/on..., so that the load of a shared machine falls on both alike.
// Prints figures; asserts nothing.
//
// BENCH_SIDES adds OpenTelemetry traces to the comparison (docs/observability.md, "Traces"):
// `trace-0.1` and `trace-1` are services exporting every span over OTLP/HTTP to a receiver in
// this process that reads and drops them, sampling with parentbased_traceidratio 0.1 and 1.0.
//
//   npm run bench -- metrics-cost
//   BENCH_DEVICES=300 BENCH_SECONDS=10 BENCH_CONCURRENCY=32 BENCH_ROUNDS=3
//   BENCH_SIDES=off,metrics,trace-0.1,trace-1 (default off,metrics)
import http from "node:http";
import type { AddressInfo } from "node:net";
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

const SIDES = (process.env.BENCH_SIDES ?? "off,metrics").split(",").map((s) => s.trim());
const RATIOS: Record<string, string> = { "trace-0.1": "0.1", "trace-1": "1.0" };
for (const side of SIDES) if (side !== "off" && side !== "metrics" && !RATIOS[side]) throw new Error(`BENCH_SIDES: unknown side ${side}`);

/** The OTLP/HTTP receiver of the traced sides: reads each export, answers "accepted", keeps a count. */
const otlp = { exports: 0, bytes: 0, url: "" };
if (SIDES.some((s) => RATIOS[s])) {
  const receiver = http.createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (otlp.bytes += chunk.length));
    req.on("end", () => {
      otlp.exports++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  receiver.unref();
  otlp.url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}

function serviceEnv(label: string): Record<string, string> {
  const env: Record<string, string> = { BENCH_ADMIN_KEY: ADMIN_KEY, BENCH_FLEET: "0", BENCH_METRICS_TOKEN: label === "metrics" ? METRICS_TOKEN : "" };
  if (RATIOS[label]) Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_TRACES_SAMPLER_ARG: RATIOS[label] });
  return env;
}

interface Side {
  label: string;
  service: Child;
  client: JsonClient;
  simulator: FleetSimulator;
  runs: { perSecond: number; p50: number; p99: number }[];
}

async function prepare(label: Side["label"]): Promise<Side> {
  const service = await startChild("serve.ts", serviceEnv(label));
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
  const scraper = side.label === "metrics"
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
  console.log(`${side.label.padEnd(9)}: ${result.perSecond.toFixed(0)} heartbeats/s, p50 ${fmtMs(result.latency.p50)}, p99 ${fmtMs(result.latency.p99)}, failed ${result.failed}` +
    (scraper ? `; ${scrapes} scrapes of ~${Math.round(scrapeBytes / 1024)} KiB` : "") + `; load average ${os.loadavg()[0].toFixed(1)}`);
}

console.log(machineLine());
console.log(`settings: ${DEVICES} devices per service, ${SECONDS} s per measurement, ${CONCURRENCY} concurrent, ${ROUNDS} rounds of ${SIDES.join("/")} (PGlite)`);
const sides: Side[] = [];
for (const label of SIDES) sides.push(await prepare(label));
const [off] = sides;
try {
  for (let round = 0; round < ROUNDS; round++) {
    // alternate the order, so that none always follows another's warm-up
    for (const side of round % 2 === 0 ? sides : [...sides].reverse()) await measure(side);
  }
  const mean = (s: Side) => s.runs.reduce((n, r) => n + r.perSecond, 0) / s.runs.length;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log("");
  for (const side of sides) {
    console.log(`${side.label.padEnd(9)}: mean ${mean(side).toFixed(0)} heartbeats/s (${((mean(side) / mean(off)) * 100).toFixed(1)} % of ${off.label}), ` +
      `median p50 ${fmtMs(median(side.runs.map((r) => r.p50)))}, median p99 ${fmtMs(median(side.runs.map((r) => r.p99)))}`);
  }
  if (otlp.url) console.log(`OTLP receiver: ${otlp.exports} exports, ${(otlp.bytes / 1024 / 1024).toFixed(1)} MiB`);
} finally {
  for (const side of sides) {
    await side.simulator.stop();
    side.client.close();
    await side.service.stop();
  }
}
process.exit(0);
