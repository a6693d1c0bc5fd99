// Late joiners of a staged continuous deployment, over the agent protocol: a device enrolled
// while a batch is in flight joins that batch (told at once, the batch grows by it); one
// enrolled while the rollout awaits approval waits for the next batch; those enrolled after
// the rollout completed wait for a late-joiner batch that the rollout job opens exactly once
// and judges by the same thresholds (a failure pauses it, a resume and a success complete it).
// And a completed rollout under a disruption budget still admits its held devices and hands
// out its due retries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { judgeDeploymentsInFlight } from "../../../src/modules/deployments/jobs.js";
import { agentHeartbeat, enrollFleet, importVersion, until } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Late Joiners");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function createAndStart(body: Record<string, unknown>) {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `late-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", ...body },
  });
  expect(res.status, res.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${res.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  return res.body.id as string;
}

const rollout = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
const installOf = async (device: EnrolledDevice, id: string) => (await agentHeartbeat(h, device)).find((d) => d.deploymentId === id && d.action === "install") as { attempt: number } | undefined;
const report = (device: EnrolledDevice, id: string, state: string, extra: Record<string, unknown> = {}) => agentHeartbeat(h, device, [{ deploymentId: id, state, ...extra }]);
const entry = (id: string, device: EnrolledDevice) => h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: id, deviceId: device.deviceId } } });

describe("late joiners of a staged continuous deployment", () => {
  let id: string;
  let first: EnrolledDevice[];

  it("a joiner during the canary joins it (told at once, the canary grows); one while awaiting approval waits for the next batch", async () => {
    first = await enrollFleet(h, acme.key, 2, { labels: { line: "press" } });
    id = await createAndStart({
      target: { labelSelector: { line: "press" } }, continuous: true,
      strategy: { type: "staged", canary: { count: 1 }, batches: [], successThreshold: 100, failureThreshold: 50, autoAdvance: false },
    });
    const [inCanary] = await enrollFleet(h, acme.key, 1, { labels: { line: "press" } });
    expect(await installOf(inCanary, id)).toBeDefined();
    expect((await rollout(id)).batches[0]).toMatchObject({ kind: "canary", size: 2, successTarget: 2 });
    const canaryEntries = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id, batchIndex: 0 } });
    expect(canaryEntries).toHaveLength(2);
    for (const device of [...first, inCanary]) if (canaryEntries.some((e) => e.deviceId === device.deviceId)) await report(device, id, "running");
    expect(await rollout(id)).toMatchObject({ state: "awaiting_approval" });

    const [waiting] = await enrollFleet(h, acme.key, 1, { labels: { line: "press" } });
    expect(await installOf(waiting, id)).toBeUndefined();
    expect(await entry(id, waiting)).toMatchObject({ batchIndex: 1, state: "pending", desiredAction: null, reason: "joined: its labels match the selector now; waits for batch 1" });
    expect((await rollout(id)).batches[1]).toMatchObject({ size: 2, state: "planned" });
    expect((await h.api("POST", `/api/v1/deployments/${id}/rollout/approve`, { key: acme.key })).status).toBe(200);
    expect(await installOf(waiting, id)).toBeDefined();
    for (const device of [...first, waiting]) if ((await entry(id, device)).batchIndex === 1) await report(device, id, "running");
    expect(await rollout(id)).toMatchObject({ state: "completed", membership: { joined: 2 } });
  });

  it("joiners after completion wait for a late-joiner batch, which the job opens exactly once, judged by the same thresholds", async () => {
    const late = await enrollFleet(h, acme.key, 2, { labels: { line: "press" } });
    for (const device of late) {
      expect(await installOf(device, id)).toBeUndefined();
      expect(await entry(id, device)).toMatchObject({ batchIndex: null, state: "pending", reason: "joined: its labels match the selector now; waits for a late-joiner batch" });
    }
    const activity = (await h.api("GET", `/api/v1/devices/${late[0].deviceId}/activity`, { key: acme.key })).body.items as Array<{ type: string; message: string }>;
    expect(activity.find((e) => e.type === "deployment_joined")?.message).toContain("waits for a late-joiner batch");

    // two processes' ticks race: one batch
    await Promise.all([judgeDeploymentsInFlight(h.services), judgeDeploymentsInFlight(h.services)]);
    const opened = await rollout(id);
    expect(opened).toMatchObject({ state: "in_progress", currentBatch: 2, reason: "late-joiner batch 2: 2 devices joined after the rollout completed", completedAt: null });
    expect(opened.batches).toHaveLength(3);
    expect(opened.batches[2]).toMatchObject({ index: 2, kind: "late_joiners", size: 2, state: "in_progress", successTarget: 2, counts: { pending: 2 } });
    for (const device of late) expect(await installOf(device, id)).toBeDefined();

    // the failure threshold (50%) pauses it, as it would any batch
    await report(late[0], id, "failed", { message: "pull failed" });
    expect(await rollout(id)).toMatchObject({ state: "paused", reason: expect.stringContaining("batch 2 paused: its failed devices reached the failure threshold") });
    // a joiner while paused joins the batch in flight, but is told only on resume
    const [whilePaused] = await enrollFleet(h, acme.key, 1, { labels: { line: "press" } });
    expect(await installOf(whilePaused, id)).toBeUndefined();
    expect(await entry(id, whilePaused)).toMatchObject({ batchIndex: 2, state: "pending", desiredAction: null });
    expect((await h.api("POST", `/api/v1/deployments/${id}/rollout/resume`, { key: acme.key })).status).toBe(200);
    expect(await installOf(whilePaused, id)).toBeDefined();
    await report(late[1], id, "running");
    await report(whilePaused, id, "running");
    // the resume accepted the failure, but the success threshold (100% of 3) still holds
    expect(await rollout(id)).toMatchObject({ state: "in_progress", batches: [{}, {}, { size: 3, successTarget: 3, counts: { running: 2, failed: 1 } }] });
    await report(late[0], id, "running");
    const done = await rollout(id);
    expect(done).toMatchObject({ state: "completed", batches: [{}, {}, { kind: "late_joiners", size: 3, state: "succeeded", counts: { running: 3, failed: 0 } }] });
    expect(done.completedAt).not.toBeNull();
  });
});

describe("leavers of a staged continuous deployment", () => {
  it("a device that leaves the batch in flight leaves its size too: the others still reach the threshold", async () => {
    const fleet = await enrollFleet(h, acme.key, 3, { labels: { line: "lathe" } });
    const id = await createAndStart({
      target: { labelSelector: { line: "lathe" } }, continuous: true,
      strategy: { type: "staged", canary: { count: 2 }, batches: [], successThreshold: 100, autoAdvance: false },
    });
    expect((await rollout(id)).batches).toMatchObject([{ kind: "canary", size: 2 }, { size: 1, state: "planned" }]);
    const inCanary: EnrolledDevice[] = [];
    for (const device of fleet) if ((await entry(id, device)).batchIndex === 0) inCanary.push(device);
    const [stays, leaves] = inCanary;
    const [planned] = fleet.filter((d) => !inCanary.includes(d));
    await report(stays, id, "running");
    expect(await rollout(id)).toMatchObject({ state: "canary", batches: [{ size: 2, counts: { running: 1 } }, {}] });

    expect((await h.api("PATCH", `/api/v1/devices/${leaves.deviceId}`, { key: acme.key, body: { labels: { line: "mill" } } })).status).toBe(200);
    expect(await entry(id, leaves)).toMatchObject({ state: "cancelled", desiredAction: null });
    expect((await rollout(id)).batches[0]).toMatchObject({ size: 1, successTarget: 1 });
    // the job judges it (no report came): one of one ran, the canary succeeded
    await until(async () => {
      await judgeDeploymentsInFlight(h.services);
      const r = await rollout(id);
      return r.state === "awaiting_approval" ? r : undefined;
    }, "the canary judged without its leaver");
    // a leaver of a planned batch leaves it too
    expect((await h.api("PATCH", `/api/v1/devices/${planned.deviceId}`, { key: acme.key, body: { labels: { line: "mill" } } })).status).toBe(200);
    expect((await rollout(id)).batches[1]).toMatchObject({ size: 0, state: "planned" });
    expect(await entry(id, planned)).toMatchObject({ state: "cancelled", desiredAction: null });
  });
});

describe("a leaver's counts", () => {
  it("a device that ran and then leaves no longer counts in its batch: not running there while it removes it, nor after", async () => {
    const fleet = await enrollFleet(h, acme.key, 2, { labels: { line: "drill" } });
    const id = await createAndStart({
      target: { labelSelector: { line: "drill" } }, continuous: true,
      strategy: { type: "staged", canary: { count: 2 }, batches: [], successThreshold: 100, failureThreshold: 100, autoAdvance: false },
    });
    const [runs, fails] = fleet;
    await report(runs, id, "running");
    await report(fails, id, "failed");
    expect((await rollout(id)).batches[0]).toMatchObject({ size: 2, state: "in_progress", counts: { running: 1, failed: 1 } });

    expect((await h.api("PATCH", `/api/v1/devices/${runs.deviceId}`, { key: acme.key, body: { labels: { line: "press-2" } } })).status).toBe(200);
    expect(await entry(id, runs)).toMatchObject({ state: "running", desiredAction: "remove" });
    // the canary shrank by it, and its counts no longer hold it (the rollout status and the judgement agree)
    const shrunk = await rollout(id);
    expect(shrunk.batches[0]).toMatchObject({ size: 1, successTarget: 1, counts: { running: 0, failed: 1, skipped: 0 } });
    expect(shrunk.membership).toMatchObject({ left: 1 });
    await report(runs, id, "removed");
    expect((await rollout(id)).batches[0]).toMatchObject({ size: 1, counts: { running: 0, failed: 1, skipped: 0 } });
    // judged the same way: the one device left in the canary failed, and that is all of it
    await judgeDeploymentsInFlight(h.services);
    expect(await rollout(id)).toMatchObject({ state: "paused", reason: "canary paused: its failed devices reached the failure threshold (100%)" });
  });
});

describe("a completed rollout under a disruption budget", () => {
  it("still admits the devices the budget held and hands out the retries that fall due", async () => {
    const fleet = await enrollFleet(h, acme.key, 4, { labels: { line: "paint" } });
    const id = await createAndStart({
      target: { labelSelector: { line: "paint" } },
      strategy: { type: "staged", canary: { count: 4 }, batches: [], successThreshold: 50 },
      disruptionBudget: { maxUnavailable: { count: 1 } },
      // long enough that the three reports below end before the retry falls due, even on a loaded machine
      retry: { maxAttempts: 2, initialDelaySeconds: 8, maxDelaySeconds: 8 },
    });
    /** The device told to install that has not reported yet (its heartbeat carries the install). */
    const told = async () => {
      for (const device of fleet) if ((await installOf(device, id)) && (await entry(id, device)).state === "pending") return device;
      return undefined;
    };
    const flaky = (await told())!;
    await report(flaky, id, "failed", { message: "disk busy", attempt: 1 });
    // two more in turn reach the threshold (2 of 4): completed, the freed place went to the last
    // held device, and the flaky one waits to retry
    for (let i = 0; i < 2; i++) await report((await told())!, id, "running");
    const completed = await rollout(id);
    expect(completed).toMatchObject({ state: "completed", retries: { waiting: 1 }, batches: [{ counts: { running: 2, pending: 1, waitingToRetry: 1, waitingForBudget: 0 } }] });

    // the last one runs; the rollout job hands out the retry once it is due and a place is free
    for (let round = 0; round < 2; round++) {
      const next = await until(async () => {
        await judgeDeploymentsInFlight(h.services);
        return told();
      }, "an admission after completion", 30_000);
      const unavailable = await h.services.prisma.deploymentDevice.count({ where: { deploymentId: id, desiredAction: "install", state: { in: ["pending", "downloading", "installing"] } } });
      expect(unavailable).toBe(1);
      await report(next, id, "running", next === flaky ? { attempt: 2 } : {});
    }
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(d).toMatchObject({ rolloutState: "completed", progress: { running: 4, waiting_to_retry: 0, waiting_for_budget: 0, failed: 0 } });
    expect(await entry(id, flaky)).toMatchObject({ state: "running", attempt: 2 });
  });
});
