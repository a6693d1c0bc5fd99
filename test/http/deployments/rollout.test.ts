// A staged rollout over 50 agents enrolled over the real protocol, driven only by their
// heartbeats and by operator moves over HTTP: plan, canary, promotion, the failure threshold
// pausing by itself, resume, approval gates, automatic advance, abort, a batch timeout found
// by the rollout job, wrong moves answered 409 naming the state, a concurrent second move
// refused, and the events operators watch.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { eventBusOf } from "../../../src/lib/events.js";
import { judgeDeploymentsInFlight } from "../../../src/modules/deployments/jobs.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let fleet: EnrolledDevice[];
const apps: Record<string, string> = {};
const rolloutEvents: Array<{ deploymentId: string; from: string; to: string; reason: string | null }> = [];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Rollouts");
  for (const appKey of ["vision-gateway", "edge-agent", "slow-app"]) {
    apps[appKey] = await importVersion(h, acme.org.id, { appKey, version: "2.0.0", parametersYaml: "  {}\n" });
  }
  fleet = await enrollFleet(h, acme.key, 50, { arch: "arm64", labels: { ring: "all" } });
  eventBusOf(h.services).subscribe("rollout.state_changed", (e) => void rolloutEvents.push(e));
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function createStaged(appKey: string, strategy: Record<string, unknown>, target: Record<string, unknown> = { labelSelector: { ring: "all" } }) {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `${appKey}-${Date.now()}`, applicationId: apps[appKey], version: "2.0.0", profileId: "compose-main", target, strategy: { type: "staged", ...strategy } },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const move = (id: string, name: string, body: Record<string, unknown> = {}) => h.api("POST", `/api/v1/deployments/${id}/rollout/${name}`, { key: acme.key, body });
const status = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;

/** Heartbeats every device; returns those told to install `id`. */
async function holders(id: string, devices = fleet): Promise<EnrolledDevice[]> {
  const out: EnrolledDevice[] = [];
  for (const device of devices) {
    if ((await agentHeartbeat(h, device)).some((d) => d.deploymentId === id && d.action === "install")) out.push(device);
  }
  return out;
}

async function report(devices: EnrolledDevice[], id: string, state: string) {
  for (const device of devices) await agentHeartbeat(h, device, [{ deploymentId: id, state }]);
}

async function expectRefused(id: string, name: string, state: string) {
  const res = await move(id, name);
  expect(res.status, `${name} from ${state}: ${res.text}`).toBe(409);
  expect(res.body.message).toContain(`it is ${state}`);
}

describe("canary, failure threshold, approvals, completion", () => {
  let id: string;
  let canary: EnrolledDevice[];
  let batch1: EnrolledDevice[];

  it("plans the canary and batches from counts and percents when initialized", async () => {
    id = await createStaged("vision-gateway", {
      canary: { count: 5 }, batches: [{ percent: 50 }, { percent: 100 }], successThreshold: 80, failureThreshold: 30, autoAdvance: false, batchTimeoutSeconds: 600,
    });
    expect(await status(id)).toMatchObject({ state: "draft", batches: [], currentBatch: null });
    await expectRefused(id, "start", "draft");
    await expectRefused(id, "approve", "draft");

    const init = await move(id, "initialize");
    expect(init.status, init.text).toBe(200);
    expect(init.body).toMatchObject({ state: "initialized", successThreshold: 80, failureThreshold: 30, autoAdvance: false, skippedDevices: 0 });
    expect(init.body.batches.map((b: { kind: string; size: number; state: string }) => [b.kind, b.size, b.state])).toEqual([
      ["canary", 5, "planned"], ["batch", 23, "planned"], ["batch", 22, "planned"],
    ]);
    expect(init.body.batches[0].successTarget).toBe(4);
    // planned, nothing dispatched
    expect(await holders(id, fleet.slice(0, 10))).toEqual([]);
  });

  it("starts once: of two concurrent starts one wins and the other is told the state", async () => {
    const [a, b] = await Promise.all([move(id, "start"), move(id, "start")]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    expect((a.status === 409 ? a : b).body.message).toContain("it is canary");
    canary = await holders(id);
    expect(canary).toHaveLength(5);
    const s = await status(id);
    expect(s).toMatchObject({ state: "canary", currentBatch: 0 });
    expect(s.batches[0]).toMatchObject({ state: "in_progress", counts: { pending: 5, running: 0 } });
    expect(s.startedAt).not.toBeNull();
  });

  it("waits for the canary's success threshold, then for approval", async () => {
    await report(canary.slice(0, 3), id, "running");
    expect((await status(id)).state).toBe("canary");
    await report(canary.slice(3, 4), id, "running");
    const s = await status(id);
    expect(s).toMatchObject({ state: "awaiting_approval", currentBatch: 0, reason: "canary succeeded; waiting for approval" });
    expect(s.batches[0]).toMatchObject({ state: "succeeded", counts: { running: 4, pending: 1 } });
    // nothing more dispatched without approval
    expect(await holders(id)).toHaveLength(5);
  });

  it("promotes the canary: the first batch is dispatched", async () => {
    const res = await move(id, "promote");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ state: "in_progress", currentBatch: 1 });
    await expectRefused(id, "promote", "in_progress");
    batch1 = (await holders(id)).filter((d) => !canary.includes(d));
    expect(batch1).toHaveLength(23);
  });

  it("pauses by itself when the batch crosses the failure threshold, and says why", async () => {
    await report(batch1.slice(0, 6), id, "failed");
    expect((await status(id)).state).toBe("in_progress");
    await report(batch1.slice(6, 7), id, "failed");
    const s = await status(id);
    expect(s.state).toBe("paused");
    expect(s.reason).toBe("batch 1 paused: its failed devices reached the failure threshold (30%)");
    expect(s.batches[1].counts).toMatchObject({ failed: 7, pending: 16 });
    await expectRefused(id, "approve", "paused");
    await expectRefused(id, "pause", "paused");
  });

  it("resumes: the accepted failures do not pause it again; the batch succeeds at its threshold", async () => {
    const res = await move(id, "resume");
    expect(res.status, res.text).toBe(200);
    // it says what it waits for now (the counts are the batch's: 7 failed keep its target out of reach)
    expect(res.body).toMatchObject({
      state: "in_progress",
      reason: expect.stringMatching(/^batch 1 resumed by owner@acme-rollouts\.example\.test \(API key test key\): failures accepted; waiting for 19 of 23 running until \S+Z$/),
    });
    expect(res.body.batches[1].counts).toMatchObject({ running: 0, failed: 7 });
    await report(batch1.slice(7), id, "running"); // 16 running: target is 19
    expect((await status(id)).state).toBe("in_progress");
    await report(batch1.slice(0, 3), id, "running"); // three failed devices recovered: 19
    const s = await status(id);
    expect(s).toMatchObject({ state: "awaiting_approval", currentBatch: 1 });
    expect(s.batches[1]).toMatchObject({ state: "succeeded", counts: { running: 19, failed: 4 } });
  });

  it("pause and resume keep the approval gate; approve dispatches the last batch; running devices complete it", async () => {
    expect((await move(id, "pause", { reason: "change freeze" })).body).toMatchObject({ state: "paused", reason: "change freeze" });
    expect((await move(id, "resume")).body.state).toBe("awaiting_approval");
    const approved = await move(id, "approve");
    expect(approved.body).toMatchObject({ state: "in_progress", currentBatch: 2 });
    const batch2 = (await holders(id)).filter((d) => !canary.includes(d) && !batch1.includes(d));
    expect(batch2).toHaveLength(22);
    await report(batch2, id, "running");
    const s = await status(id);
    expect(s).toMatchObject({ state: "completed", reason: "all 3 batches reached the success threshold" });
    expect(s.completedAt).not.toBeNull();
    expect(s.batches.map((b: { state: string }) => b.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
    await expectRefused(id, "abort", "completed");
    await expectRefused(id, "resume", "completed");
  });

  it("published every state change on the event bus", () => {
    const mine = rolloutEvents.filter((e) => e.deploymentId === id).map((e) => e.to);
    expect(mine).toEqual(["initialized", "canary", "awaiting_approval", "in_progress", "paused", "in_progress", "awaiting_approval", "paused", "awaiting_approval", "in_progress", "completed"]);
  });
});

describe("automatic advance and abort", () => {
  it("advances by itself after the canary; abort cancels devices that had not started", async () => {
    const devices = fleet.slice(0, 20);
    const id = await createStaged("edge-agent", { canary: { percent: 10 }, batches: [{ count: 8 }], successThreshold: 100, autoAdvance: true }, { deviceIds: devices.map((d) => d.deviceId) });
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);
    const canary = await holders(id, devices);
    expect(canary).toHaveLength(2);
    await report(canary, id, "running");
    const s = await status(id);
    expect(s).toMatchObject({ state: "in_progress", currentBatch: 1 });
    expect(s.batches.map((b: { size: number }) => b.size)).toEqual([2, 18]); // the last batch takes the rest
    const batch = (await holders(id, devices)).filter((d) => !canary.includes(d));
    expect(batch).toHaveLength(18);
    await report(batch.slice(0, 3), id, "downloading");

    const aborted = await move(id, "abort", { reason: "bad build" });
    expect(aborted.status, aborted.text).toBe(200);
    expect(aborted.body).toMatchObject({ state: "aborted", reason: "bad build" });
    expect(aborted.body.batches[1]).toMatchObject({ state: "cancelled", counts: { downloading: 3, cancelled: 15, skipped: 0, pending: 0 } });
    // in-flight devices keep it, the others no longer get it
    expect(await holders(id, devices)).toHaveLength(5);
    await expectRefused(id, "resume", "aborted");
    const deployment = await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key });
    expect(deployment.body).toMatchObject({ status: "running", rolloutState: "aborted", progress: { running: 2, downloading: 3, cancelled: 15 } });
  });
});

describe("batch timeout", () => {
  it("fails the rollout when a batch stays below its threshold past its timeout (found by the rollout job)", async () => {
    const devices = fleet.slice(20, 25);
    const id = await createStaged("slow-app", { canary: { count: 2 }, successThreshold: 100, batchTimeoutSeconds: 60 }, { deviceIds: devices.map((d) => d.deviceId) });
    await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key });
    const canary = await holders(id, devices);
    await report(canary.slice(0, 1), id, "running");
    await judgeDeploymentsInFlight(h.services);
    expect((await status(id)).state).toBe("canary"); // deadline not reached
    // the clock moves on: the batch's deadline passes
    await h.services.prisma.deploymentBatch.updateMany({ where: { deploymentId: id, index: 0 }, data: { deadlineAt: new Date(Date.now() - 1000) } });
    await judgeDeploymentsInFlight(h.services);
    const s = await status(id);
    expect(s.state).toBe("failed");
    expect(s.reason).toBe("canary timed out below its success target (2 of 2 running needed, success threshold 100%)");
    expect(s.batches.map((b: { state: string }) => b.state)).toEqual(["failed", "cancelled"]);
    expect(await holders(id, devices)).toHaveLength(1); // the pending canary device was cancelled
  });

  it("answers 409 for rollout operations of an all-at-once deployment", async () => {
    const res = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: "flat", applicationId: apps["slow-app"], version: "2.0.0", profileId: "compose-main", target: { labelSelector: { ring: "all" } } },
    });
    const rollout = await h.api("GET", `/api/v1/deployments/${res.body.id}/rollout`, { key: acme.key });
    expect(rollout.status).toBe(409);
    expect(rollout.body.message).toContain("all-at-once");
    expect((await move(res.body.id, "initialize")).status).toBe(409);
  });
});
