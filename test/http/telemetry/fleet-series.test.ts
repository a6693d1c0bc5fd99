// GET /api/v1/fleet/telemetry through HTTP: per bucket, devices reporting, average and 95th
// percentile over devices of each device's average CPU, failed containers; the whole fleet or a
// label selector; another organization's devices never count; bad input is a 400 naming it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertSnapshots } from "../../../src/modules/telemetry/ingest.js";
import { refreshFleetRollups } from "../../../src/modules/fleet/fleet-rollups.js";
import { DAY_MS } from "../../../src/modules/telemetry/partitions.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { insertDevices } from "../agent/fleet-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

/** Yesterday 10:00 to 12:00 UTC: two hourly buckets. */
const HOUR = 3600_000;
const START = (Math.floor(Date.now() / DAY_MS) - 1) * DAY_MS + 10 * HOUR;
const CPU = [10, 20, 30, 40, 90]; // the five acme devices' CPU in the first hour (per device, two snapshots averaging this)
const raw = () => h.services.database.opened.raw;
const retention = { get retentionDays() { return h.services.config.TELEMETRY_RETENTION_DAYS; } };

/** percentile_cont: linear interpolation between the closest ranks */
function percentile(values: number[], p: number) {
  const sorted = [...values].sort((a, b) => a - b);
  const pos = p * (sorted.length - 1);
  const lo = Math.floor(pos);
  return sorted[lo] + (sorted[Math.min(lo + 1, sorted.length - 1)] - sorted[lo]) * (pos - lo);
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Fleet Series");
  globex = await h.createTenant("Globex Fleet Series");
  const ids = await insertDevices(h, acme.org.id, CPU.map((_, i) => ({ labels: { site: i < 3 ? "north" : "south" } })));
  for (const [i, id] of ids.entries()) {
    const device = { id, organizationId: acme.org.id };
    // first hour: two snapshots averaging CPU[i]; the last device has 2 failed containers at one point
    await insertSnapshots(raw(), device, [
      { timestamp: new Date(START + 60_000).toISOString(), cpuUsagePercent: CPU[i] - 5, containersFailed: i === 4 ? 2 : 0 },
      { timestamp: new Date(START + 30 * 60_000).toISOString(), cpuUsagePercent: CPU[i] + 5, containersFailed: 0 },
    ], retention);
    // second hour: only the first two devices report
    if (i < 2) await insertSnapshots(raw(), device, [{ timestamp: new Date(START + HOUR + 60_000).toISOString(), cpuUsagePercent: 50 }], retention);
  }
  // another organization's device, same hours, would change every figure
  const [theirs] = await insertDevices(h, globex.org.id, [{ labels: { site: "north" } }]);
  await insertSnapshots(raw(), { id: theirs, organizationId: globex.org.id }, [{ timestamp: new Date(START + 60_000).toISOString(), cpuUsagePercent: 100, containersFailed: 7 }], retention);
  // the whole-fleet series reads what the telemetry.fleet-rollups job computes (fleet-rollups.test.ts)
  await refreshFleetRollups(h.services.prisma);
});
afterAll(() => h?.close());

const range = `from=${new Date(START).toISOString()}&to=${new Date(START + 2 * HOUR - 1).toISOString()}`;

describe("GET /api/v1/fleet/telemetry", () => {
  it("answers the organization's fleet per bucket from the hourly rollups", async () => {
    const res = await h.api("GET", `/api/v1/fleet/telemetry?${range}&interval=1h`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ interval: "1h", source: "rollup-1h" });
    expect(res.body.data).toHaveLength(2);
    const [first, second] = res.body.data;
    expect(first).toMatchObject({ timestamp: new Date(START).toISOString(), devicesReporting: 5, containersFailed: 2, devicesWithFailedContainers: 1 });
    expect(first.cpuUsagePercentAvg).toBeCloseTo(CPU.reduce((a, b) => a + b) / CPU.length, 9);
    expect(first.cpuUsagePercentP95).toBeCloseTo(percentile(CPU, 0.95), 9);
    expect(second).toMatchObject({ timestamp: new Date(START + HOUR).toISOString(), devicesReporting: 2, containersFailed: 0, devicesWithFailedContainers: 0 });
    expect(second.cpuUsagePercentAvg).toBeCloseTo(50, 9);
  });

  it("merges the hours of a day at 1d, each device counting once", async () => {
    const res = await h.api("GET", `/api/v1/fleet/telemetry?${range}&interval=1d`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(1);
    // the first two devices' day average includes their second-hour snapshot
    const perDevice = CPU.map((c, i) => (i < 2 ? (c - 5 + c + 5 + 50) / 3 : c));
    expect(res.body.data[0].devicesReporting).toBe(5);
    expect(res.body.data[0].cpuUsagePercentAvg).toBeCloseTo(perDevice.reduce((a, b) => a + b) / perDevice.length, 9);
    expect(res.body.data[0].cpuUsagePercentP95).toBeCloseTo(percentile(perDevice, 0.95), 9);
  });

  it("narrows to the devices a label selector matches", async () => {
    const res = await h.api("GET", `/api/v1/fleet/telemetry?${range}&interval=1h&labels=site=south`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toHaveLength(1);
    expect(res.body.data[0]).toMatchObject({ devicesReporting: 2, containersFailed: 2 });
    expect(res.body.data[0].cpuUsagePercentAvg).toBeCloseTo((40 + 90) / 2, 9);
  });

  it("keeps organizations apart: each sees only its own devices", async () => {
    const res = await h.api("GET", `/api/v1/fleet/telemetry?${range}&interval=1h`, { key: globex.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual([
      { timestamp: new Date(START).toISOString(), devicesReporting: 1, cpuUsagePercentAvg: 100, cpuUsagePercentP95: 100, containersFailed: 7, devicesWithFailedContainers: 1, computedAt: expect.any(String) },
    ]);
  });

  it("needs telemetry:read and refuses bad input naming it", async () => {
    expect((await h.api("GET", `/api/v1/fleet/telemetry?${range}`, { key: null })).status).toBe(401);
    const reader = await h.createKey(acme.org.id, ["devices:read"]);
    expect((await h.api("GET", `/api/v1/fleet/telemetry?${range}`, { key: reader })).status).toBe(403);
    for (const [query, field] of [["interval=1m", "interval"], ["from=yesterday", "from"]] as const) {
      const res = await h.api("GET", `/api/v1/fleet/telemetry?${query}`, { key: acme.key });
      expect(res.status, query).toBe(400);
      expect(res.body.issues.map((i: { path: string[] }) => i.path[0])).toContain(field);
    }
    const selector = await h.api("GET", `/api/v1/fleet/telemetry?labels=site`, { key: acme.key });
    expect(selector.status).toBe(400);
    expect(selector.body.message).toContain("site");
    const tooMany = await h.api("GET", `/api/v1/fleet/telemetry?from=2000-01-01&interval=5m`, { key: acme.key });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toContain("buckets");
  });
});
