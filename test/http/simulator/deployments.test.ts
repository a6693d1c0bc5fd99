// The device simulator against a real service: ten virtual devices enroll over the agent
// protocol, obey the desired state of an all-at-once deployment started through REST (walking
// downloading -> installing -> running in their heartbeats), remove it when it is stopped
// until the service confirms the removal, take an upgrade delivered by a staged rollout, and
// report failures with a message. Delays are scaled down (timeScale) so that it runs in seconds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { importVersion } from "../deployments/support.js";
import { FleetSimulator, type SimulatorOptions } from "../../../src/simulator/engine.js";

let h: Harness;
let acme: Tenant;
let appId: string;
const simulators: FleetSimulator[] = [];
const DEVICES = 10;

async function startFleet(label: string, devices: number, options: Partial<SimulatorOptions> = {}): Promise<FleetSimulator> {
  const token = await createEnrollmentToken(h, acme.key, { labels: { fleet: label }, maxUses: devices });
  const simulator = new FleetSimulator({
    url: h.url,
    enrollmentToken: token.token,
    devices,
    heartbeatMs: 500,
    busyHeartbeatMs: 100,
    telemetryMs: 0,
    failureRate: 0,
    timeScale: 0.01, // download 20-80 ms, install 10-40 ms, remove 5-20 ms
    idPrefix: `sim-${label}`,
    enrollConcurrency: 5,
    maxSockets: 8,
    ...options,
  });
  simulators.push(simulator);
  await simulator.enrollAll();
  expect(simulator.stats(), simulator.stats().lastError ?? "").toMatchObject({ enrolled: devices, enrollFailed: 0 });
  simulator.startTraffic();
  return simulator;
}

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" });
  acme = await h.createTenant("Acme Simulated");
  await ensureCa(h, acme.key);
  appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  await importVersion(h, acme.org.id, { version: "1.1.0" });
});

afterAll(async () => {
  for (const simulator of simulators) await simulator.stop();
  await h?.close();
});

async function api(method: string, path: string, body?: unknown) {
  const res = await h.api(method, path, { key: acme.key, ...(body === undefined ? {} : { body }) });
  expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
  return res.body;
}

/** Polls GET /deployments/{id} until `done` holds (or fails with the last answer after `timeoutMs`). */
async function waitForDeployment(id: string, done: (d: any) => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  let last: any;
  for (;;) {
    last = await api("GET", `/api/v1/deployments/${id}`);
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for deployment ${id}: ${JSON.stringify({ status: last.status, rolloutState: last.rolloutState, progress: last.progress })}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function createAndStart(name: string, version: string, label: string, strategy: Record<string, unknown> = { type: "all-at-once" }) {
  const created = await api("POST", "/api/v1/deployments", {
    name, applicationId: appId, version, profileId: "compose-main",
    parameters: { apiToken: "tok-simulated", pollSeconds: 60 },
    target: { labelSelector: { fleet: label } },
    strategy,
  });
  const started = await api("POST", `/api/v1/deployments/${created.id}/start`);
  expect(started.status).toBe("running");
  return started.id as string;
}

describe("simulated devices obey the desired state", () => {
  let fleet: FleetSimulator;
  let v1: string;

  it("an all-at-once deployment started through REST reaches running on every device, step by step", async () => {
    fleet = await startFleet("main", DEVICES);
    v1 = await createAndStart("sim-gateway-1", "1.0.0", "main");
    const done = await waitForDeployment(v1, (d) => d.progress.running === DEVICES && d.rolloutState === "completed");
    expect(done.progress).toMatchObject({ total: DEVICES, running: DEVICES, failed: 0, pending: 0 });
    expect(done.rolloutReason).toBe("every device reported running or failed (no attempt left)");
    // every device walked the whole way, and the service recorded each one's version history
    for (const device of fleet.devices) {
      expect(device.deployments.get(v1)).toMatchObject({ version: "1.0.0", state: "running", history: ["downloading", "installing", "running"] });
    }
    expect(await h.services.prisma.deviceVersionHistory.count({ where: { deploymentId: v1, outcome: "running", succeeded: true } })).toBe(DEVICES);
    expect(fleet.stats()).toMatchObject({ heartbeatsFailed: 0, deployments: { running: DEVICES } });
    // downloading, installing and running reached the service (several steps may share a heartbeat)
    expect(fleet.stats().deploymentReports).toBeGreaterThanOrEqual(DEVICES);
  });

  it("stop: every device removes it, the service confirms the removal and the deployment is stopped", async () => {
    const stopping = await api("POST", `/api/v1/deployments/${v1}/stop`, {});
    expect(stopping.status).toBe("stopping");
    const stopped = await waitForDeployment(v1, (d) => d.status === "stopped");
    expect(stopped.progress).toMatchObject({ removed: DEVICES, running: 0 });
    const removal = await api("GET", `/api/v1/deployments/${v1}/removal-status`);
    expect(removal).toMatchObject({ status: "stopped", total: DEVICES, confirmed: DEVICES, awaiting: 0, complete: true });
    // confirmed removals leave the desired state, and the devices forget them
    await expect.poll(() => fleet.stats().deployments, { timeout: 5000 }).toMatchObject({ running: 0, removing: 0, removed: 0 });
    expect(fleet.devices.every((d) => d.deployments.list().length === 0)).toBe(true);
  });

  it("an upgrade by a staged rollout replaces the running version batch by batch", async () => {
    // v1 runs again (a stopped deployment starts afresh) ...
    await api("POST", `/api/v1/deployments/${v1}/start`);
    await waitForDeployment(v1, (d) => d.progress.running === DEVICES);
    // ... and v1.1 rolls out over it: canary of 1, then 50 %, then the rest, advancing by itself
    const v11 = await createAndStart("sim-gateway-1-1", "1.1.0", "main", {
      type: "staged", canary: { count: 1 }, batches: [{ percent: 50 }, { percent: 100 }], successThreshold: 90, autoAdvance: true,
    });
    const done = await waitForDeployment(v11, (d) => d.rolloutState === "completed");
    expect(done.progress).toMatchObject({ running: DEVICES, failed: 0 });
    const rollout = await api("GET", `/api/v1/deployments/${v11}/rollout`);
    expect(rollout.batches.map((b: any) => [b.kind, b.size, b.state])).toEqual([["canary", 1, "succeeded"], ["batch", 5, "succeeded"], ["batch", 4, "succeeded"]]);
    // the old deployment was superseded on every device, which now runs 1.1.0 only
    const old = await api("GET", `/api/v1/deployments/${v1}`);
    expect(old.progress).toMatchObject({ superseded: DEVICES, running: 0 });
    await expect.poll(() => fleet.devices.every((d) => d.deployments.list().map((x) => `${x.version}:${x.state}`).join() === "1.1.0:running"), { timeout: 5000 }).toBe(true);
  });

  it("devices that fail report failed with a message, which the service keeps", async () => {
    const failing = await startFleet("failing", 2, { deploymentFailureRate: 1 });
    const id = await createAndStart("sim-gateway-failing", "1.0.0", "failing");
    const done = await waitForDeployment(id, (d) => d.rolloutState === "completed");
    expect(done.progress).toMatchObject({ failed: 2, running: 0 });
    expect(done.rolloutReason).toBe("every device reported running or failed (no attempt left)");
    const rows = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id } });
    for (const row of rows) expect(row.message).toMatch(/^(download|install) failed: .*\(simulated\)$/);
    expect(failing.stats().deployments).toMatchObject({ failed: 2 });
  });
});
