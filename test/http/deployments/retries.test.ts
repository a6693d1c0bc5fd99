// Automatic retries over the agent protocol: a device that reports failed is given the
// install again (attempt + 1) after its back-off, by its own heartbeat or by the rollout job,
// exactly once per attempt; each attempt is in its version history with the agent's message;
// a device waiting to retry is not failed for the thresholds, its last failed attempt is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { judgeDeploymentsInFlight } from "../../../src/modules/deployments/jobs.js";
import { dispatchDueRetries } from "../../../src/modules/deployments/dispatch.js";
import { evaluateRulesOnce } from "../../../src/modules/alerts/evaluate.js";
import { agentHeartbeat, enrollFleet, importVersion, until, type DesiredEntry } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let fleet: EnrolledDevice[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Retries");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  fleet = await enrollFleet(h, acme.key, 5, { labels: { ring: "retry" } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const RETRY = { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 1 };

async function createAndStart(devices: EnrolledDevice[], extra: Record<string, unknown>) {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `retry-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", target: { deviceIds: devices.map((d) => d.deviceId) }, ...extra },
  });
  expect(res.status, res.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${res.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  return res.body.id as string;
}

const entry = (id: string, device: EnrolledDevice) => h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: id, deviceId: device.deviceId } } });
const deployment = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;

const installOf = (desired: DesiredEntry[], id: string) => desired.find((d) => d.deploymentId === id && d.action === "install") as (DesiredEntry & { attempt: number }) | undefined;

/** The devices the deployment_failed rule fires for, after one evaluation. */
async function firingFor(ruleId: string): Promise<string[]> {
  await evaluateRulesOnce(h.services, { organizationId: acme.org.id });
  return (await h.services.prisma.alertState.findMany({ where: { ruleId, state: "firing" } })).map((s) => s.subjectId);
}

describe("retries with back-off", () => {
  let id: string;
  let ruleId: string;
  const [flaky, ok1, ok2] = [0, 1, 2];

  it("a failed device waits to retry: not failed in the progress, the rollout not completed", async () => {
    id = await createAndStart(fleet.slice(0, 3), { retry: RETRY });
    const desired = await agentHeartbeat(h, fleet[flaky]);
    expect(installOf(desired, id)).toMatchObject({ attempt: 1 });
    for (const i of [ok1, ok2]) await agentHeartbeat(h, fleet[i], [{ deploymentId: id, state: "running" }]);
    const before = Date.now();
    await agentHeartbeat(h, fleet[flaky], [{ deploymentId: id, state: "failed", message: "pull failed: mirror down", attempt: 1 }]);
    const row = await entry(id, fleet[flaky]);
    expect(row).toMatchObject({ state: "failed", attempt: 1 });
    // equal jitter: between half the ceiling (0.5 s) and the ceiling (1 s) after the report
    expect(row.retryAt!.getTime()).toBeGreaterThanOrEqual(before + 400);
    expect(row.retryAt!.getTime()).toBeLessThanOrEqual(Date.now() + 1100);
    await judgeDeploymentsInFlight(h.services);
    const d = await deployment(id);
    expect(d).toMatchObject({ rolloutState: "in_progress", progress: { running: 2, failed: 0, waiting_to_retry: 1 } });
    const devices = await h.api("GET", `/api/v1/deployments/${id}/devices?state=failed`, { key: acme.key });
    expect(devices.body.items).toEqual([expect.objectContaining({ deviceId: fleet[flaky].deviceId, attempt: 1, retryAt: row.retryAt!.toISOString(), message: "pull failed: mirror down" })]);
    // nor does the deployment_failed alert fire for it while it waits to retry
    const rule = await h.api("POST", "/api/v1/alert-rules", { key: acme.key, body: { name: "deploy failures", condition: { type: "deployment_failed" } } });
    expect(rule.status, rule.text).toBe(201);
    ruleId = rule.body.id;
    expect(await firingFor(ruleId)).toEqual([]);
  });

  it("the device's own heartbeat hands out attempt 2 once it is due; a late report about attempt 1 changes nothing", async () => {
    const second = await until(async () => {
      const e = installOf(await agentHeartbeat(h, fleet[flaky]), id);
      return e && e.attempt === 2 ? e : undefined;
    }, "attempt 2 in the desired state");
    expect(second.action).toBe("install");
    expect(await entry(id, fleet[flaky])).toMatchObject({ state: "pending", attempt: 2, retryAt: null, reason: "automatic retry: attempt 2 of 3" });
    await agentHeartbeat(h, fleet[flaky], [{ deploymentId: id, state: "running", attempt: 1 }]);
    expect(await entry(id, fleet[flaky])).toMatchObject({ state: "pending", attempt: 2 });
  });

  it("the rollout job hands out attempt 3, exactly once even when two dispatchers race", async () => {
    await agentHeartbeat(h, fleet[flaky], [{ deploymentId: id, state: "failed", message: "attempt 2: disk full", attempt: 2 }]);
    await until(async () => ((await entry(id, fleet[flaky])).retryAt! <= new Date() ? true : undefined), "retry 3 due");
    const raced = await Promise.all([dispatchDueRetries(h.services.prisma), dispatchDueRetries(h.services.prisma), judgeDeploymentsInFlight(h.services)]);
    expect(raced[0].length + raced[1].length).toBeLessThanOrEqual(1);
    expect(await entry(id, fleet[flaky])).toMatchObject({ state: "pending", attempt: 3 });
    expect(installOf(await agentHeartbeat(h, fleet[flaky]), id)).toMatchObject({ attempt: 3 });
  });

  it("the last attempt failing is final: failed in the counts, the rollout completes, every attempt is in the history", async () => {
    await agentHeartbeat(h, fleet[flaky], [{ deploymentId: id, state: "failed", message: "attempt 3: still broken", attempt: 3 }]);
    expect(await entry(id, fleet[flaky])).toMatchObject({ state: "failed", attempt: 3, retryAt: null });
    const d = await deployment(id);
    expect(d).toMatchObject({ rolloutState: "completed", rolloutReason: "every device reported running or failed (no attempt left)", progress: { running: 2, failed: 1, waiting_to_retry: 0 } });
    // the last attempt failed: now the alert fires for it
    expect(await firingFor(ruleId)).toEqual([fleet[flaky].deviceId]);
    await h.api("DELETE", `/api/v1/alert-rules/${ruleId}`, { key: acme.key });
    const history = await h.api("GET", `/api/v1/devices/${fleet[flaky].deviceId}/deployment-history`, { key: acme.key });
    expect(history.status, history.text).toBe(200);
    const attempts = history.body.items.filter((e: { deploymentId: string }) => e.deploymentId === id);
    expect(attempts.map((e: { attempt: number; outcome: string; message: string }) => [e.attempt, e.outcome, e.message]).sort()).toEqual([
      [1, "failed", "pull failed: mirror down"],
      [2, "failed", "attempt 2: disk full"],
      [3, "failed", "attempt 3: still broken"],
    ]);
  });
});

describe("retries in a staged rollout", () => {
  it("a canary device waiting to retry does not cross the failure threshold; succeeding on retry lets the canary succeed", async () => {
    const devices = fleet.slice(3, 5);
    const id = await createAndStart(devices, {
      retry: { maxAttempts: 2, initialDelaySeconds: 1, maxDelaySeconds: 1 },
      strategy: { type: "staged", canary: { count: 2 }, batches: [], successThreshold: 100, failureThreshold: 50 },
    });
    await agentHeartbeat(h, devices[0], [{ deploymentId: id, state: "running" }]);
    await agentHeartbeat(h, devices[1], [{ deploymentId: id, state: "failed", message: "flaky", attempt: 1 }]);
    await judgeDeploymentsInFlight(h.services);
    const waiting = (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
    expect(waiting).toMatchObject({ state: "canary", retries: { waiting: 1 }, batches: [{ counts: { running: 1, failed: 0, waitingToRetry: 1 } }] });
    expect(Date.parse(waiting.retries.nextRetryAt)).toBeGreaterThan(Date.now() - 2000);
    await until(async () => (installOf(await agentHeartbeat(h, devices[1]), id)?.attempt === 2 ? true : undefined), "attempt 2");
    await agentHeartbeat(h, devices[1], [{ deploymentId: id, state: "running", attempt: 2 }]);
    const done = (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
    expect(done).toMatchObject({ state: "completed", retries: { waiting: 0, nextRetryAt: null }, batches: [{ counts: { running: 2, failed: 0, waitingToRetry: 0 } }] });
  });

  it("without a retry policy a failure is final at once and pauses at the failure threshold", async () => {
    const devices = fleet.slice(3, 5);
    const id = await createAndStart(devices, { strategy: { type: "staged", canary: { count: 2 }, batches: [], successThreshold: 100, failureThreshold: 50 } });
    await agentHeartbeat(h, devices[1], [{ deploymentId: id, state: "failed", message: "broken" }]);
    expect(await entry(id, devices[1])).toMatchObject({ state: "failed", retryAt: null });
    expect((await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body).toMatchObject({ state: "paused" });
  });
});
