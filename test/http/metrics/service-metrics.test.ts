// GET /metrics (docs/observability.md): the Prometheus text format, parsed with a real parser
// (prom2javascript), after known traffic. Each counter moves by exactly the traffic sent; every
// name and label is valid; label values stay bounded (a thousand device ids, procedure names
// and paths make no new series); the endpoint is refused without its token and off without
// one; METRICS_PORT listens on loopback only.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { Readable } from "node:stream";
import { getMetricsFromStream, type PromHistogramData, type PromData, type PromMetrics } from "prom2javascript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../support/oci-registry.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { enrolledDevices, type EnrolledDevice } from "../telemetry/support.js";
import { heartbeat } from "../agent/fleet-support.js";
import { JobRunner, PermanentJobError } from "../../../src/jobs/index.js";
import { serveProcessMetrics } from "../../../src/modules/metrics/serve.js";

const TOKEN = "metrics-token-" + "m".repeat(24);

let h: Harness;
let devices: EnrolledDevice[];

beforeAll(async () => {
  // One ingest turn and no queue: a second batch while one holds the turn is refused (503).
  h = await createHarness({ METRICS_TOKEN: TOKEN, INGEST_CONCURRENCY: "1", INGEST_QUEUE_LENGTH: "0", FLEET_METRICS_LABEL_KEYS: "site" });
  const tenant = await h.createTenant("Metrics");
  devices = await enrolledDevices(h, tenant, 2);
}, 60_000);
afterAll(() => h?.close());

async function scrapeText(url = `${h.url}/metrics`, token: string | null = TOKEN) {
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

/**
 * Parses with prom2javascript, which knows no NaN. The format allows it, and prom-client writes
 * "Nan" for the event-loop lag gauges when no sample was taken since the last scrape (two scrapes
 * within its 10 ms resolution): those samples, and only those, are left out here.
 */
function parseExposition(text: string): Promise<PromMetrics> {
  const kept = text.split("\n").filter((line) => {
    if (line.startsWith("#") || line.trim() === "") return true;
    const value = line.slice(line.lastIndexOf(" ") + 1);
    if (value.toLowerCase() !== "nan") return true;
    expect(line.startsWith("fleet_nodejs_eventloop_lag_"), line).toBe(true);
    return false;
  });
  return getMetricsFromStream(Readable.from([kept.join("\n")]));
}

async function scrape(url?: string): Promise<PromMetrics> {
  const { status, text } = await scrapeText(url);
  expect(status, text).toBe(200);
  return parseExposition(text);
}

function sample(metrics: PromMetrics, name: string, labels: Record<string, string>): number {
  const family = metrics[name];
  if (!family) return 0;
  const found = (family.data as PromData[]).find((d) => Object.entries(labels).every(([k, v]) => d.labels[k] === v));
  return found ? found.value : 0;
}

function histogram(metrics: PromMetrics, name: string, labels: Record<string, string>): PromHistogramData | undefined {
  return (metrics[name]?.data as PromHistogramData[] | undefined)?.find((d) => Object.entries(labels).every(([k, v]) => d.labels[k] === v));
}

const seriesOf = (metrics: PromMetrics, name: string) => metrics[name]?.data.length ?? 0;

/** A telemetry batch that sends half its body and stalls: once admitted it holds the ingest gate's one turn. */
async function stalledBatch(device: EnrolledDevice) {
  const payload = Buffer.from(JSON.stringify({ snapshots: [{ timestamp: new Date().toISOString(), cpuUsagePercent: 5 }] }));
  const req = http.request(`${h.url}/api/v1/agent/telemetry`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(payload.length), authorization: `Bearer ${await device.token()}` },
  });
  const status = new Promise<number>((resolve, reject) => {
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
  });
  req.write(payload.subarray(0, payload.length / 2));
  return { status, finish: () => req.end(payload.subarray(payload.length / 2)) };
}

async function until(check: () => boolean, what: string) {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe("GET /metrics", () => {
  it("counts known traffic exactly: heartbeats, a refused batch, a job run, a 404", async () => {
    const before = await scrape();
    const N = 7;
    for (let i = 0; i < N; i++) expect((await heartbeat(h, devices[i % 2], {})).status).toBe(200);

    // a batch holds the one turn; the next is refused at once (503), then the first is stored
    const held = await stalledBatch(devices[0]);
    await until(() => h.services.ingestGate.inFlight === 1, "the stalled batch's turn");
    const during = await scrape();
    expect(sample(during, "fleet_ingest_gate_in_flight", {})).toBe(1);
    const refused = await h.api("POST", "/api/v1/agent/telemetry", {
      key: null, token: await devices[1].token(), body: { snapshots: [{ timestamp: new Date().toISOString(), cpuUsagePercent: 1 }] },
    });
    expect(refused.status).toBe(503);
    held.finish();
    expect(await held.status).toBe(200);

    // one job that succeeds and one that fails, run by a runner of this service
    const runner = new JobRunner(h.services, {
      definitions: [
        { type: "metrics-test.ok", run: async () => undefined },
        { type: "metrics-test.broken", run: async () => { throw new PermanentJobError("broken on purpose"); }, maxAttempts: 1 },
      ],
    });
    await runner.enqueue({ type: "metrics-test.ok" });
    await runner.enqueue({ type: "metrics-test.broken" });
    expect(await runner.drain()).toBe(2);

    const missing = await h.api("GET", `/api/v1/devices/${crypto.randomUUID()}`);
    expect(missing.status).toBe(404);

    const after = await scrape();
    const moved = (name: string, labels: Record<string, string>) => sample(after, name, labels) - sample(before, name, labels);
    expect(moved("fleet_agent_ingest_requests_total", { kind: "heartbeat", outcome: "accepted" })).toBe(N);
    expect(moved("fleet_http_requests_total", { route: "agent.heartbeat", method: "POST", status_class: "2xx" })).toBe(N);
    expect(moved("fleet_agent_ingest_requests_total", { kind: "telemetry", outcome: "busy" })).toBe(1);
    expect(moved("fleet_agent_ingest_requests_total", { kind: "telemetry", outcome: "accepted" })).toBe(1);
    expect(moved("fleet_job_runs_total", { kind: "metrics-test.ok", outcome: "succeeded" })).toBe(1);
    expect(moved("fleet_job_runs_total", { kind: "metrics-test.broken", outcome: "failed" })).toBe(1);
    expect(histogram(after, "fleet_job_lag_seconds", { kind: "metrics-test.ok" })?.count).toBe(1);
    expect(moved("fleet_http_requests_total", { route: "devices.get", method: "GET", status_class: "4xx" })).toBe(1);

    // the heartbeats' group commits: N rows in total, in at least one statement
    const rowsBefore = histogram(before, "fleet_group_commit_statement_rows", { writer: "heartbeat" });
    const rowsAfter = histogram(after, "fleet_group_commit_statement_rows", { writer: "heartbeat" })!;
    expect(rowsAfter.sum! - (rowsBefore?.sum ?? 0)).toBe(N);
    expect(rowsAfter.count - (rowsBefore?.count ?? 0)).toBeGreaterThanOrEqual(1);
    expect(histogram(after, "fleet_group_commit_statement_duration_seconds", { writer: "heartbeat" })!.count).toBe(rowsAfter.count);
    // request latency: one observation per request, in the same label set
    const latency = histogram(after, "fleet_http_request_duration_seconds", { route: "agent.heartbeat", method: "POST" })!;
    expect(latency.count - (histogram(before, "fleet_http_request_duration_seconds", { route: "agent.heartbeat", method: "POST" })?.count ?? 0)).toBe(N);
    expect(latency.buckets["+Inf"]).toBe(latency.count);
    // the gate is free again; deployments by status come from one grouped query (none here)
    expect(sample(after, "fleet_ingest_gate_in_flight", {})).toBe(0);
    expect(sample(after, "fleet_ingest_gate_limit", { limit: "concurrency" })).toBe(1);
    expect(after.fleet_deployments?.type).toBe("gauge");
  });

  it("follows the format's rules: valid names and labels, a type and help for every family, default process metrics", async () => {
    const { text, contentType } = await scrapeText();
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const metrics = await parseExposition(text);
    const names = Object.keys(metrics);
    expect(names.length).toBeGreaterThan(30);
    for (const name of names) {
      expect(name).toMatch(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/);
      expect(name.startsWith("fleet_"), name).toBe(true);
      const family = metrics[name];
      expect(["counter", "gauge", "histogram", "summary"]).toContain(family.type);
      expect(family.help.length, name).toBeGreaterThan(0);
      if (family.type === "counter") expect(name.endsWith("_total"), name).toBe(true);
      for (const d of family.data) {
        for (const label of Object.keys(d.labels)) {
          expect(label).toMatch(/^[a-zA-Z_][a-zA-Z0-9_]*$/);
          expect(label.startsWith("__")).toBe(false);
        }
      }
    }
    // durations in seconds, sizes in bytes (the units in the names)
    for (const name of names.filter((n) => metrics[n].type === "histogram")) expect(name).toMatch(/_(seconds|rows)$/);
    for (const name of ["fleet_process_cpu_seconds_total", "fleet_process_resident_memory_bytes", "fleet_nodejs_eventloop_lag_seconds", "fleet_nodejs_gc_duration_seconds"]) {
      expect(names).toContain(name);
    }
    // PGlite has no pool: no pool series (on PostgreSQL they are there; docs/observability.md)
    if (!h.services.database.opened.pool) expect(names.some((n) => n.startsWith("fleet_db_pool_"))).toBe(false);
    else expect(sample(metrics, "fleet_db_pool_max_connections", {})).toBe(5);
  });

  it("keeps label values bounded: a thousand device ids, unknown procedures and paths add no series", async () => {
    // Each id in one of five ways in: REST paths with ids, an unknown path, unknown procedures, device tokens.
    let refusedHeartbeats = 0;
    const warmUp = async (n: number) => {
      for (let i = 0; i < n; i += 10) {
        await Promise.all(Array.from({ length: Math.min(10, n - i) }, (_, j) => {
          const id = crypto.randomUUID();
          switch ((i + j) % 5) {
            case 0: return h.api("GET", `/api/v1/devices/${id}`);
            case 1: return h.api("GET", `/api/v1/devices/${id}/telemetry/latest`);
            case 2: return h.api("GET", `/api/v1/no-such-thing/${id}`);
            case 3: return fetch(`${h.url}/trpc/devices.${id.slice(0, 8)}`);
            default:
              refusedHeartbeats++;
              return heartbeat(h, devices[0], {}, `not-a-token-${id}`);
          }
        }));
      }
    };
    await warmUp(10);
    const first = await scrape();
    await warmUp(1000);
    const second = await scrape();
    for (const name of ["fleet_http_requests_total", "fleet_http_request_duration_seconds", "fleet_agent_ingest_requests_total"]) {
      expect(seriesOf(second, name), name).toBe(seriesOf(first, name));
    }
    const labels = new Set((second.fleet_http_requests_total.data as PromData[]).map((d) => d.labels.route));
    expect([...labels].some((l) => /[0-9a-f]{8}-[0-9a-f]{4}/.test(l))).toBe(false);
    expect(labels).toContain("unmatched");
    expect(labels).toContain("devices.get");
    expect(sample(second, "fleet_agent_ingest_requests_total", { kind: "heartbeat", outcome: "rejected" })).toBe(refusedHeartbeats);
  }, 120_000);

  it("is refused without its token or with another, and shows nothing then", async () => {
    for (const token of [null, "wrong-token-" + "x".repeat(30), TOKEN.slice(0, -1)]) {
      const res = await scrapeText(undefined, token);
      expect(res.status).toBe(401);
      expect(res.text).not.toContain("fleet_");
    }
    const basic = await fetch(`${h.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from(`x:${TOKEN}`).toString("base64")}` } });
    expect(basic.status).toBe(401);
  });
});

describe("the Grafana dashboards (deploy/grafana/)", () => {
  it("query only metrics the service and the fleet endpoint expose", async () => {
    const service = await scrape();
    const fleet = await parseExposition((await h.api("GET", "/api/v1/fleet/metrics")).text);
    const exposed = new Set([...Object.keys(service), ...Object.keys(fleet)]);
    let checked = 0;
    for (const file of ["fleet-manager-service.json", "fleet-manager-fleet.json"]) {
      const dashboard = JSON.parse(fs.readFileSync(new URL(`../../../deploy/grafana/${file}`, import.meta.url), "utf8"));
      const exprs: string[] = dashboard.panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((t) => t.expr));
      expect(exprs.length, file).toBeGreaterThan(5);
      for (const expr of exprs) {
        for (const [name] of expr.matchAll(/\bfleet_[a-z0-9_]+/g)) {
          const family = exposed.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
          // the pool's gauges exist on PostgreSQL only (PGlite has no pool)
          if (family.startsWith("fleet_db_pool_") && !h.services.database.opened.pool) continue;
          expect(exposed.has(family), `${file}: ${name} in ${expr}`).toBe(true);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(40);
  });
});

describe("without METRICS_TOKEN and METRICS_PORT", () => {
  let off: Harness;
  beforeAll(async () => {
    off = await createHarness();
  }, 60_000);
  afterAll(() => off?.close());

  it("has no /metrics on the service port (404, not the console's page)", async () => {
    const res = await fetch(`${off.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/application\/json/);
    expect(await serveProcessMetrics(off.services)).toBeNull();
  });
});

describe("METRICS_PORT", () => {
  let onPort: Harness;
  let server: http.Server | null = null;
  let port: number;
  beforeAll(async () => {
    port = await freePort();
    onPort = await createHarness({ METRICS_PORT: String(port) });
    server = await serveProcessMetrics(onPort.services);
  }, 60_000);
  afterAll(async () => {
    server?.close();
    await onPort?.close();
  });

  it("serves /metrics without a token on loopback only, and nothing else there; PORT has none without a token", async () => {
    expect(server!.address()).toMatchObject({ address: "127.0.0.1", port });
    await onPort.api("GET", "/api/v1/devices");
    const metrics = await scrape(`http://127.0.0.1:${port}/metrics`);
    expect(sample(metrics, "fleet_http_requests_total", { route: "devices.list", method: "GET", status_class: "2xx" })).toBe(1);
    expect((await fetch(`http://127.0.0.1:${port}/api/v1/devices`)).status).toBe(404);
    expect((await fetch(`${onPort.url}/metrics`)).status).toBe(404);
  });
});
