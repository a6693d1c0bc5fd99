// GET /api/v1/fleet/health through HTTP: devices by status, resource pressure and failed
// containers from each device's latest snapshot (sent through the agent protocol),
// certificates expiring soon, tenant isolation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { insertDevices } from "../agent/fleet-support.js";
import { enrolledDevices, sendTelemetry, type EnrolledDevice } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let devices: EnrolledDevice[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Fleet");
  globex = await h.createTenant("Globex Fleet");
  devices = await enrolledDevices(h, acme, 4);
  await insertDevices(h, acme.org.id, [{ status: "offline" }, { status: "offline" }, { status: "error" }, { status: "pending" }]);
  const [calm, hotCpu, fullDisk, failing] = devices;
  const now = () => new Date().toISOString();
  const send = async (d: EnrolledDevice, snapshot: Record<string, number>) =>
    expect((await sendTelemetry(h, d, [{ timestamp: new Date(Date.now() - 60_000).toISOString(), cpuUsagePercent: 99 }, { timestamp: now(), ...snapshot }])).status).toBe(200);
  // only the latest snapshot counts: calm was hot a minute ago
  await send(calm, { cpuUsagePercent: 10, memoryUsedBytes: 1, memoryTotalBytes: 10, diskUsedBytes: 1, diskTotalBytes: 10 });
  await send(hotCpu, { cpuUsagePercent: 97, memoryUsedBytes: 95, memoryTotalBytes: 100 });
  await send(fullDisk, { cpuUsagePercent: 5, diskUsedBytes: 92, diskTotalBytes: 100, containersFailed: 1, containersRunning: 3 });
  await send(failing, { cpuUsagePercent: 5, containersFailed: 3, containersRunning: 0 });
  // another tenant's hot device never shows up
  const [theirs] = await enrolledDevices(h, globex, 1);
  await send(theirs, { cpuUsagePercent: 100, containersFailed: 9 });
});
afterAll(() => h?.close());

describe("GET /api/v1/fleet/health", () => {
  it("summarizes the organization's fleet", async () => {
    const res = await h.api("GET", "/api/v1/fleet/health", { key: acme.key });
    expect(res.status, res.text).toBe(200);
    const [, hotCpu, fullDisk, failing] = devices;
    expect(res.body.devices).toEqual({ total: 8, byStatus: { online: 0, offline: 2, pending: 1, error: 1, provisioned: 4 } });
    expect(res.body.resourcePressure.thresholds).toEqual({ cpuUsagePercent: 90, memoryUsagePercent: 90, diskUsagePercent: 90 });
    expect(res.body.resourcePressure.count).toBe(2);
    expect(res.body.resourcePressure.devices.map((d: any) => [d.deviceId, d.over])).toEqual([
      [hotCpu.deviceId, ["cpu", "memory"]], // worst first: 7 points over the CPU threshold
      [fullDisk.deviceId, ["disk"]],
    ]);
    expect(res.body.resourcePressure.devices[0]).toMatchObject({ cpuUsagePercent: 97, memoryUsagePercent: 95, diskUsagePercent: null });
    expect(res.body.failedContainers).toMatchObject({ devices: 2, containers: 4 });
    expect(res.body.failedContainers.items.map((i: any) => [i.deviceId, i.containersFailed])).toEqual([[failing.deviceId, 3], [fullDisk.deviceId, 1]]);
    // enrolled certificates are valid for far longer than 30 days
    expect(res.body.certificates).toEqual({ expiringWithinDays: 30, expiringSoon: 0, expired: 0 });
    expect(res.body.alerts).toEqual({ firing: 0, bySeverity: { info: 0, warning: 0, critical: 0 } });
  });

  it("takes thresholds and the certificate horizon as parameters", async () => {
    const res = await h.api("GET", "/api/v1/fleet/health?cpuThreshold=5&memoryThreshold=100&diskThreshold=100&certificateDays=3650", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.resourcePressure.count).toBe(2); // 10 and 97 are above 5; 5 is not
    expect(res.body.certificates.expiringSoon).toBe(4);
    expect((await h.api("GET", "/api/v1/fleet/health?cpuThreshold=101", { key: acme.key })).status).toBe(400);
  });

  it("counts only the caller's organization", async () => {
    const res = await h.api("GET", "/api/v1/fleet/health", { key: globex.key });
    expect(res.body.devices.total).toBe(1);
    expect(res.body.failedContainers).toMatchObject({ devices: 1, containers: 9 });
  });
});
