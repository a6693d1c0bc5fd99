// GET /api/v1/fleet/metrics (docs/observability.md): one organization's fleet in the Prometheus
// text format, parsed with prom2javascript. Counts and histograms match the stored devices and
// latest snapshots; label values are capped per key; per-device series only for a selector,
// within the limit; another organization's devices never appear; the API key decides.
import crypto from "node:crypto";
import { Readable } from "node:stream";
import { getMetricsFromStream, type PromData, type PromHistogramData, type PromMetrics } from "prom2javascript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { insertDevices } from "../agent/fleet-support.js";

let h: Harness;
let a: Tenant;
let b: Tenant;

/** A latest snapshot per device: cpu percent, memory and disk as used of 1000. */
async function latest(organizationId: string, rows: { id: string; cpu: number; memory: number; disk: number }[]) {
  for (const [i, r] of rows.entries()) {
    await h.services.database.opened.raw.query(
      `INSERT INTO "DeviceTelemetryLatest" ("deviceId", "organizationId", "snapshotId", "timestamp", "cpuUsagePercent", "memoryUsedBytes", "memoryTotalBytes", "diskUsedBytes", "diskTotalBytes")
       VALUES ($1::uuid, $2::uuid, $3, now(), $4, $5, 1000, $6, 1000)`,
      [r.id, organizationId, i + 1, r.cpu, r.memory * 10, r.disk * 10],
    );
  }
}

async function firingAlert(organizationId: string, deviceId: string, severity: string) {
  const ruleId = crypto.randomUUID();
  const raw = h.services.database.opened.raw;
  await raw.query(
    `INSERT INTO "AlertRule" ("id", "organizationId", "name", "conditionType", "condition", "severity", "cooldownSeconds", "updatedAt")
     VALUES ($1::uuid, $2::uuid, $3, 'offline', '{}'::jsonb, $4, 60, now())`,
    [ruleId, organizationId, `rule-${ruleId.slice(0, 6)}`, severity],
  );
  await raw.query(
    `INSERT INTO "AlertState" ("ruleId", "subjectId", "organizationId", "state", "firingSince", "updatedAt") VALUES ($1::uuid, $2::uuid, $3::uuid, 'firing', now(), now())`,
    [ruleId, deviceId, organizationId],
  );
}

beforeAll(async () => {
  h = await createHarness({ FLEET_METRICS_LABEL_KEYS: "site,env", FLEET_METRICS_MAX_LABEL_VALUES: "2", FLEET_METRICS_MAX_DEVICES: "3" });
  a = await h.createTenant("Fleet Metrics A");
  b = await h.createTenant("Fleet Metrics B");
  const ids = await insertDevices(h, a.org.id, [
    { name: "a-berlin-1", status: "online", labels: { site: "berlin", env: "prod" } },
    { name: "a-berlin-2", status: "online", labels: { site: "berlin", env: "prod" } },
    { name: "a-berlin-3", status: "offline", labels: { site: "berlin", env: "prod" } },
    { name: "a-paris-1", status: "online", labels: { site: "paris", env: "prod" } },
    { name: "a-paris-2", status: "offline", labels: { site: "paris" } },
    { name: "a-rome-1", status: "online", labels: { site: "rome", "team": "x" } },
  ]);
  await latest(a.org.id, [
    { id: ids[0], cpu: 5, memory: 50, disk: 95 },
    { id: ids[1], cpu: 15, memory: 50, disk: 15 },
    { id: ids[3], cpu: 55, memory: 81, disk: 40 },
    { id: ids[4], cpu: 95, memory: 99, disk: 40 },
  ]);
  await firingAlert(a.org.id, ids[2], "critical");
  const bIds = await insertDevices(h, b.org.id, [
    { name: "b-berlin-1", status: "online", labels: { site: "berlin" } },
    { name: "b-berlin-2", status: "error", labels: { site: "berlin" } },
  ]);
  await latest(b.org.id, [{ id: bIds[0], cpu: 99, memory: 99, disk: 99 }]);
}, 60_000);
afterAll(() => h?.close());

async function scrape(key: string, query = ""): Promise<PromMetrics> {
  const res = await fetch(`${h.url}/api/v1/fleet/metrics${query}`, { headers: { "x-api-key": key } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return getMetricsFromStream(Readable.from([text]));
}

const values = (m: PromMetrics, name: string) =>
  Object.fromEntries((m[name]?.data as PromData[] ?? []).map((d) => [Object.values(d.labels).join("/"), d.value]));
const histogram = (m: PromMetrics, name: string) => (m[name].data as PromHistogramData[])[0];

describe("GET /api/v1/fleet/metrics", () => {
  it("counts the organization's devices by status and label, its usage as histograms and its firing alerts", async () => {
    const m = await scrape(a.key);
    expect(values(m, "fleet_devices")).toEqual({ pending: 0, provisioned: 0, online: 4, offline: 2, error: 0 });
    // two values per key at most: the third most common site is summed as __other__
    expect(values(m, "fleet_devices_by_label")).toEqual({ "site/berlin": 3, "site/paris": 2, "site/__other__": 1, "env/prod": 4 });
    const cpu = histogram(m, "fleet_device_cpu_usage_percent");
    expect(cpu.count).toBe(4);
    expect(cpu.sum).toBe(170);
    expect(cpu.buckets).toMatchObject({ "10": 1, "20": 2, "50": 2, "60": 3, "90": 3, "95": 4, "100": 4, "+Inf": 4 });
    expect(histogram(m, "fleet_device_memory_usage_percent").buckets).toMatchObject({ "50": 2, "80": 2, "90": 3, "100": 4 });
    expect(histogram(m, "fleet_device_disk_usage_percent").buckets).toMatchObject({ "10": 0, "20": 1, "40": 3, "90": 3, "95": 4 });
    expect(values(m, "fleet_alerts_firing")).toEqual({ info: 0, warning: 0, critical: 1 });
    // no per-device series unless asked for
    expect(Object.keys(m).some((n) => n.startsWith("fleet_device_online") || n.startsWith("fleet_device_latest"))).toBe(false);
    for (const name of Object.keys(m)) expect(name).toMatch(/^fleet_[a-z_]+$/);
  });

  it("shows another organization only its own devices", async () => {
    const m = await scrape(b.key);
    expect(values(m, "fleet_devices")).toMatchObject({ online: 1, error: 1, offline: 0 });
    expect(values(m, "fleet_devices_by_label")).toEqual({ "site/berlin": 2 });
    expect(histogram(m, "fleet_device_cpu_usage_percent")).toMatchObject({ count: 1, sum: 99 });
    expect(values(m, "fleet_alerts_firing")).toEqual({ info: 0, warning: 0, critical: 0 });
    const perDevice = await scrape(b.key, "?devices=site%3Dparis");
    expect(values(perDevice, "fleet_device_online")).toEqual({});
  });

  it("exposes devices one by one only for a selector, within FLEET_METRICS_MAX_DEVICES", async () => {
    const m = await scrape(a.key, "?devices=site%3Dparis");
    const online = m.fleet_device_online.data as PromData[];
    expect(online.map((d) => [d.labels.device, d.value])).toEqual([["a-paris-1", 1], ["a-paris-2", 0]]);
    expect(online.every((d) => /^[0-9a-f-]{36}$/.test(d.labels.device_id))).toBe(true);
    expect((m.fleet_device_latest_cpu_usage_percent.data as PromData[]).map((d) => d.value).sort()).toEqual([55, 95]);
    // four devices run in production: more than the limit of three
    const tooMany = await h.api("GET", "/api/v1/fleet/metrics?devices=env%3Dprod", { key: a.key });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toMatch(/^devices: the selector matches 4 devices, more than 3/);
    const bad = await h.api("GET", "/api/v1/fleet/metrics?devices=%3D%3D", { key: a.key });
    expect(bad.status).toBe(400);
  });

  it("keeps the series count bounded as the fleet grows", async () => {
    const before = await scrape(a.key);
    await insertDevices(h, a.org.id, Array.from({ length: 200 }, (_, i) => ({ name: `grown-${i}`, labels: { site: `site-${i}`, env: i % 2 ? "prod" : "dev" } })));
    const after = await scrape(a.key);
    const seriesCount = (m: PromMetrics) => Object.values(m).reduce((n, f) => n + f.data.length, 0);
    expect(seriesCount(after)).toBe(seriesCount(before) + 1); // env=dev joins env=prod; sites stay at two plus __other__
    expect(values(after, "fleet_devices_by_label")).toMatchObject({ "site/berlin": 3, "site/paris": 2, "site/__other__": 201, "env/prod": 104, "env/dev": 100 });
  });

  it("needs an API key with telemetry:read, which may come as a bearer token", async () => {
    expect((await fetch(`${h.url}/api/v1/fleet/metrics`)).status).toBe(401);
    const noTelemetry = await h.createKey(a.org.id, ["devices:read"]);
    const denied = await h.api("GET", "/api/v1/fleet/metrics", { key: noTelemetry });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain("telemetry:read");
    const bearer = await fetch(`${h.url}/api/v1/fleet/metrics`, { headers: { authorization: `Bearer ${a.key}` } });
    expect(bearer.status).toBe(200);
    expect(await bearer.text()).toContain('fleet_devices{status="online"}');
  });
});
