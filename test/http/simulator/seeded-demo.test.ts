// The demo's tour ends the same way at every run (scripts/demo-plan.ts): the sample
// applications are served as a Git registry (scripts/sample-apps.ts, what `npm run samples` and
// `npm run demo` serve) and synced; 13 simulated devices on the demo's plan enroll; an
// operator (role operator, as in the demo) rolls out vision-gateway 2.4.1 canary first, approves
// and completes it, then rolls out the broken build mqtt-broker 5.0.2, which pauses by itself,
// and aborts it; a seeded fleet (--seed, --deployment-failure-rate) takes an all-at-once
// deployment. Three runs, each in an organization of its own with the same device names, end
// alike: the same devices failed, the same rollout states and counts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator, type SimulatorOptions } from "../../../src/simulator/engine.js";
import { BROKEN_BUILD, DEMO_SIMULATION, FAILING_DEVICE } from "../../../scripts/demo-plan.js";
import { addSampleRegistry, apiCaller, serveSampleApps, type SampleAppsServer } from "../../../scripts/sample-apps.js";

const RUNS = 3;
let h: Harness;
let samples: SampleAppsServer;
const simulators: FleetSimulator[] = [];

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0", RATE_LIMIT_PER_DEVICE: "0" });
  samples = await serveSampleApps();
}, 120_000);

afterAll(async () => {
  for (const simulator of simulators) await simulator.stop();
  await samples?.close();
  await h?.close();
});

/** One run of the tour in a fresh organization; what it ended with. */
async function tour(run: number) {
  const tenant = await h.createTenant(`Demo run ${run}`);
  // the demo's operator: role operator, and a key bounded by it
  const key = await h.createKey(tenant.org.id, ["*"], { role: "operator" });
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await h.api(method, path, { key, ...(body === undefined ? {} : { body }) });
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300);
    return res.body;
  };
  await ensureCa(h, key);

  // the samples, as `npm run samples -- --key` adds them
  const { synced } = await addSampleRegistry(apiCaller(h.url), key, samples.url);
  expect(synced).toMatchObject({ applicationsFound: 5, applicationsImported: 5, errors: [], rejectedManifests: [] });
  const apps = (await api("GET", "/api/v1/applications?limit=100")).items as Array<{ id: string; key: string }>;
  const appId = (k: string) => apps.find((a) => a.key === k)!.id;

  const fleet = async (labels: Record<string, string>, options: Partial<SimulatorOptions> & { devices: number }) => {
    const token = await createEnrollmentToken(h, key, { labels });
    const simulator = new FleetSimulator({
      url: h.url, enrollmentToken: token.token, heartbeatMs: 500, busyHeartbeatMs: 100, telemetryMs: 0, timeScale: 0.01,
      failureRate: 0, enrollConcurrency: 4, maxSockets: 8, ...options,
    });
    simulators.push(simulator);
    await simulator.enrollAll();
    expect(simulator.stats(), simulator.stats().lastError ?? "").toMatchObject({ enrolled: options.devices, enrollFailed: 0 });
    simulator.startTraffic();
    return simulator;
  };
  const demo = await fleet({ site: "demo-plant" }, { ...DEMO_SIMULATION, devices: 13 });
  const seeded = await fleet({ fleet: "seeded" }, { devices: 8, idPrefix: "seeded", seed: 7, deploymentFailureRate: 0.4 });

  const waitFor = async (id: string, done: (d: any) => boolean, what: string) => {
    const deadline = Date.now() + 90_000;
    for (;;) {
      const d = await api("GET", `/api/v1/deployments/${id}`);
      if (done(d)) return d;
      if (Date.now() > deadline) throw new Error(`run ${run}: timed out waiting for ${what}: ${JSON.stringify({ status: d.status, rolloutState: d.rolloutState, rolloutReason: d.rolloutReason, progress: d.progress })}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  };
  const start = async (body: Record<string, unknown>) => {
    const created = await api("POST", "/api/v1/deployments", body);
    await api("POST", `/api/v1/deployments/${created.id}/start`);
    return created.id as string;
  };
  const failedDevices = async (id: string) =>
    ((await api("GET", `/api/v1/deployments/${id}/devices?state=failed&limit=100`)).items as Array<{ deviceName: string; message: string | null }>)
      .map((d) => `${d.deviceName}: ${d.message}`).sort();
  const staged = { type: "staged", canary: { count: 3 }, batches: [{ percent: 100 }] };

  // one device reports errors on purpose, the others are online
  const health = await (async () => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const h2 = (await api("GET", "/api/v1/fleet/health")).devices;
      if (h2.total === 21 && h2.byStatus.error === 1 && h2.byStatus.online === 20) return h2.byStatus;
      if (Date.now() > deadline) throw new Error(`run ${run}: fleet health ${JSON.stringify(h2)}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  })();
  const erring = (await api("GET", "/api/v1/devices?status=error&limit=10")).items.map((d: { name: string }) => d.name);

  // vision-gateway 2.4.1, canary first: it succeeds, the operator approves, it completes
  const vision = await start({
    name: "vision 2.4.1", applicationId: appId("vision-gateway"), version: "2.4.1", profileId: "compose-default",
    parameters: { pollSeconds: 60, cloudToken: "tok-demo-123" }, target: { labelSelector: { site: "demo-plant" } }, strategy: staged,
  });
  const awaiting = await waitFor(vision, (d) => d.rolloutState === "awaiting_approval", "the canary to succeed");
  await api("POST", `/api/v1/deployments/${vision}/rollout/approve`, {});
  const visionDone = await waitFor(vision, (d) => d.rolloutState === "completed" && d.progress.running + d.progress.failed + d.progress.skipped === d.progress.total, "vision to complete");
  const visionRollout = await api("GET", `/api/v1/deployments/${vision}/rollout`);

  // the broken build: its canary fails, the rollout pauses by itself; the operator aborts it
  const broken = await start({
    name: "broken", applicationId: appId(BROKEN_BUILD.application), version: BROKEN_BUILD.version, profileId: BROKEN_BUILD.profileId,
    target: { labelSelector: { site: "demo-plant" } }, strategy: staged,
  });
  const paused = await waitFor(broken, (d) => d.rolloutState === "paused" && d.progress.failed === 3, "the broken build's canary to fail and pause");
  const brokenFailures = (await failedDevices(broken)).map((line) => line.replace(/^demo-\d+: /, "")); // which 3 devices: the canary, drawn by the service
  await api("POST", `/api/v1/deployments/${broken}/rollout/abort`, {});
  const aborted = await api("GET", `/api/v1/deployments/${broken}`);

  // a seeded fleet: the same devices fail at every run
  const forwarder = await start({
    name: "forwarder", applicationId: appId("telemetry-forwarder"), version: "0.9.0", profileId: "compose-default",
    target: { labelSelector: { fleet: "seeded" } }, strategy: { type: "all-at-once" },
  });
  const forwarded = await waitFor(forwarder, (d) => d.rolloutState === "completed", "the seeded all-at-once deployment");

  await demo.stop();
  await seeded.stop();
  return {
    health, erring,
    vision: {
      awaiting: awaiting.rolloutReason,
      state: visionDone.rolloutState, reason: visionDone.rolloutReason,
      progress: { running: visionDone.progress.running, failed: visionDone.progress.failed, skipped: visionDone.progress.skipped },
      batches: visionRollout.batches.map((b: { kind: string; size: number; state: string }) => [b.kind, b.size, b.state]),
    },
    broken: { paused: paused.rolloutState, failed: paused.progress.failed, failures: brokenFailures, afterAbort: aborted.rolloutState },
    seeded: { reason: forwarded.rolloutReason, failed: await failedDevices(forwarder) },
  };
}

describe("the demo's plan, run three times", () => {
  it("ends the same way each time: the same devices failed, the same rollout states", async () => {
    const runs = [];
    for (let run = 1; run <= RUNS; run++) runs.push(await tour(run));
    const [first] = runs;
    // what the README's tour shows
    expect(first.erring).toEqual([FAILING_DEVICE]);
    expect(first.vision.state).toBe("completed");
    expect(first.vision.progress.failed).toBe(0);
    expect(first.vision.batches.map((b: unknown[]) => b[2])).toEqual(["succeeded", "succeeded"]);
    expect(first.broken).toMatchObject({ paused: "paused", failed: 3, afterAbort: "aborted" });
    expect(new Set(first.broken.failures)).toEqual(new Set([
      `install failed: ${BROKEN_BUILD.application}@${BROKEN_BUILD.version} does not start on this device (simulated on purpose: --fail-install ${BROKEN_BUILD.application}@${BROKEN_BUILD.version})`,
    ]));
    // the seeded fleet: some devices failed, not all
    expect(first.seeded.failed.length).toBeGreaterThan(0);
    expect(first.seeded.failed.length).toBeLessThan(8);
    for (const later of runs.slice(1)) expect(later).toEqual(first);
  }, 900_000);
});
