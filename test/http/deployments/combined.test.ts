// The rollout options together, over simulated devices (the simulator's agent against a real
// service): a continuous, staged deployment with maintenance windows read in each device's
// own time zone (a `tz` label) and automatic retries. The UTC devices are inside their window:
// they install, fail a share of their attempts (one hand-driven device fails its first attempt
// for sure) and succeed on a retry, and the rollout completes. Devices enrolled afterwards are
// late joiners: the rollout job gathers them into a late-joiner batch; the UTC one runs it, the
// Asia/Kolkata ones (5:30 ahead, outside their window) only download and wait for their window,
// counted as waiting_for_window with the next window's start. The rollout job's tick is called
// by the test while it polls (no schedule runs in the harness).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";
import { judgeDeploymentsInFlight } from "../../../src/modules/deployments/jobs.js";
import { agentHeartbeat, enrollFleet, importVersion, until } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
const simulators: FleetSimulator[] = [];

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" });
  acme = await h.createTenant("Acme Combined");
  await ensureCa(h, acme.key);
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
}, 120_000);

afterAll(async () => {
  for (const simulator of simulators) await simulator.stop();
  await h?.close();
});

/**
 * Simulated devices, failing `failureRate` of their install attempts, enrolled round robin with
 * one token per entry of `labels` (the simulator's several tokens: devices in several time zones).
 */
async function simulatedFleet(name: string, devices: number, labels: Array<Record<string, string>>, failureRate: number): Promise<FleetSimulator> {
  const tokens = await Promise.all(labels.map((l) => createEnrollmentToken(h, acme.key, { labels: l, maxUses: devices })));
  const simulator = new FleetSimulator({
    url: h.url, enrollmentToken: tokens[0].token, enrollmentTokens: tokens.map((t) => t.token), devices, heartbeatMs: 300, busyHeartbeatMs: 100, telemetryMs: 0,
    failureRate: 0, deploymentFailureRate: failureRate, timeScale: 0.01, idPrefix: `combo-${name}`, enrollConcurrency: 4, maxSockets: 4,
  });
  simulators.push(simulator);
  await simulator.enrollAll();
  expect(simulator.stats(), simulator.stats().lastError ?? "").toMatchObject({ enrolled: devices, enrollFailed: 0 });
  simulator.startTraffic();
  return simulator;
}

const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const EVERY_DAY = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const rollout = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;

/** Polls the rollout status, ticking the rollout job, until `done` holds. */
function tickUntil(id: string, done: (status: any) => boolean, what: string) {
  return until(async () => {
    await judgeDeploymentsInFlight(h.services);
    const status = await rollout(id);
    return done(status) ? status : undefined;
  }, what, 60_000);
}

describe("continuous + staged + maintenance windows + retries", () => {
  // opened five minutes ago (UTC clock), closes in three hours: open in UTC, closed 5:30 ahead
  const opened = Math.floor((Date.now() - 5 * 60_000) / 60_000) * 60_000;
  const closes = clock(opened + 3 * 3600_000);
  const windows = [{ days: EVERY_DAY, start: clock(opened), end: closes === "00:00" ? "24:00" : closes }];
  let id: string;

  it("the UTC devices install inside their window, succeed on retries, and the staged rollout completes", async () => {
    await simulatedFleet("utc", 4, [{ combo: "yes", tz: "UTC" }], 0.3);
    const [handDriven] = await enrollFleet(h, acme.key, 1, { labels: { combo: "yes", tz: "UTC" } });
    const created = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: {
        name: "combined", applicationId: appId, version: "1.0.0", profileId: "compose-main",
        target: { labelSelector: { combo: "yes" } }, continuous: true,
        strategy: { type: "staged", canary: { count: 1 }, batches: [], successThreshold: 100, failureThreshold: 100, autoAdvance: true },
        maintenanceWindows: { timeZone: "UTC", timeZoneLabel: "tz", windows },
        retry: { maxAttempts: 10, initialDelaySeconds: 1, maxDelaySeconds: 1 },
      },
    });
    expect(created.status, created.text).toBe(201);
    id = created.body.id;
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);

    // the hand-driven device fails its first attempt whenever its batch reaches it, and runs the retry
    const attemptOf = async (n: number) => {
      const entry = (await agentHeartbeat(h, handDriven)).find((d) => d.deploymentId === id) as { attempt: number; window: string } | undefined;
      return entry?.attempt === n ? entry : undefined;
    };
    expect(await until(() => attemptOf(1), "attempt 1 for the hand-driven device", 60_000)).toMatchObject({ window: "open" });
    await agentHeartbeat(h, handDriven, [{ deploymentId: id, state: "failed", message: "image pull timed out", attempt: 1 }]);
    await until(() => attemptOf(2), "attempt 2 for the hand-driven device");
    await agentHeartbeat(h, handDriven, [{ deploymentId: id, state: "running", attempt: 2 }]);

    const done = await tickUntil(id, (s) => s.state === "completed", "the rollout to complete");
    expect(done.batches.map((b: { kind: string; state: string }) => [b.kind, b.state])).toEqual([["canary", "succeeded"], ["batch", "succeeded"]]);
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(d.progress).toMatchObject({ total: 5, running: 5, failed: 0, waiting_to_retry: 0 });
    const history = await h.api("GET", `/api/v1/devices/${handDriven.deviceId}/deployment-history`, { key: acme.key });
    const attempts = history.body.items.filter((e: { deploymentId: string }) => e.deploymentId === id);
    expect(attempts.map((e: { attempt: number; outcome: string }) => [e.attempt, e.outcome]).sort()).toEqual([[1, "failed"], [2, "running"]]);
    // every device that failed an attempt ran a later one: the final attempt of each is running
    const entries = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id } });
    const histories = await h.services.prisma.deviceVersionHistory.findMany({ where: { deploymentId: id } });
    for (const entry of entries) {
      const own = histories.filter((x) => x.deviceId === entry.deviceId);
      expect(own.find((x) => x.attempt === entry.attempt)?.outcome).toBe("running");
      expect(own.filter((x) => x.outcome === "failed").map((x) => x.attempt).every((a) => a < entry.attempt)).toBe(true);
    }
  });

  it("late joiners get a late-joiner batch: the UTC one runs it, the Kolkata ones download and wait for their window", async () => {
    // one simulator, two time zones: devices 1 and 3 in Asia/Kolkata, device 2 in UTC
    await simulatedFleet("late", 3, [{ combo: "yes", tz: "Asia/Kolkata" }, { combo: "yes", tz: "UTC" }], 0);
    const nextWindowAt = new Date(opened - 5.5 * 3600_000 + 86_400_000).toISOString();
    const status = await tickUntil(
      id,
      (s) => s.batches[2]?.counts.running === 1 && s.batches[2]?.counts.waitingForWindow === 2,
      "the late-joiner batch: one running, two waiting for their window",
    );
    expect(status).toMatchObject({
      state: "in_progress", currentBatch: 2, membership: { joined: 3 },
      windows: { waiting: 2, nextWindowAt },
      batches: [{}, {}, { kind: "late_joiners", size: 3, state: "in_progress", successTarget: 3 }],
    });
    // the Kolkata devices download only: nothing installed, nothing failed (the rollout may count
    // a device as waiting for its window before its heartbeat reports the download: wait for it)
    const states = async () => ((await h.api("GET", `/api/v1/deployments/${id}/devices?batch=2&limit=10`, { key: acme.key })).body.items as { state: string }[])
      .map((e) => e.state).sort();
    const settled = await until(async () => {
      const now = await states();
      return now.includes("pending") ? undefined : now;
    }, "the late joiners' downloads");
    expect(settled).toEqual(["downloading", "downloading", "running"]);
  });
});
