// What a staged rollout records is what happened, over HTTP and the agent protocol: the demo's
// canary (3 devices, one fails) pauses by itself; approve is refused saying which moves make
// progress; resume says what it waits for and that the failed device keeps the target out of
// reach; promote records the canary as promoted by that operator with its counts, and the
// completion reason says so. No stored reason or outcome summary carries a count of devices
// (the counts of a moment stay in the outcome's fields, with its time; the rollout's counts say
// how it is now). Retry-failed gives the failed devices their next attempt (audited),
// promote from a pause and abort record the batch in flight with its counts. Then, as a property
// (fast-check, a few dozen runs): for any sequence of device reports and operator moves, every
// batch's recorded outcome agrees with its counts at that moment and with the moves made.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { completionReason, type BatchOutcome } from "../../../src/modules/deployments/rollout-machine.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let fleet: EnrolledDevice[];
let operator: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Truth");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  fleet = await enrollFleet(h, acme.key, 5, { labels: { line: "truth" } });
  operator = `${acme.user.email} (API key test key)`;
}, 120_000);

afterAll(async () => {
  await h?.close();
});

interface Outcome extends BatchOutcome { summary: string }
interface Batch { index: number; size: number; state: string; successTarget: number; counts: Record<string, number>; outcome: Outcome | null }
interface Rollout { state: string; currentBatch: number | null; reason: string | null; batches: Batch[] }

async function createAndStart(devices: EnrolledDevice[], strategy: Record<string, unknown>): Promise<string> {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: {
      name: `truth-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main",
      target: { deviceIds: devices.map((d) => d.deviceId) }, strategy: { type: "staged", batchTimeoutSeconds: 3600, ...strategy },
    },
  });
  expect(res.status, res.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${res.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  return res.body.id as string;
}

const move = (id: string, name: string) => h.api("POST", `/api/v1/deployments/${id}/rollout/${name}`, { key: acme.key, body: {} });
const rollout = async (id: string): Promise<Rollout> => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
const entry = (id: string, device: EnrolledDevice) => h.services.prisma.deploymentDevice.findUniqueOrThrow({ where: { deploymentId_deviceId: { deploymentId: id, deviceId: device.deviceId } } });

/** The install `device` is told about for `id` (with its attempt), if any. */
async function installOf(device: EnrolledDevice, id: string): Promise<{ attempt: number } | undefined> {
  const desired = (await agentHeartbeat(h, device)) as unknown as Array<{ deploymentId: string; action: string; attempt: number }>;
  return desired.find((d) => d.deploymentId === id && d.action === "install");
}

/** `device` reports `state` for `id` on the attempt it was told (a device not told to install is ignored by the service). */
async function report(device: EnrolledDevice, id: string, state: "running" | "failed"): Promise<void> {
  const told = await installOf(device, id);
  await agentHeartbeat(h, device, [{ deploymentId: id, state, ...(told ? { attempt: told.attempt } : {}) }]);
}

async function batchDevices(id: string, index: number): Promise<EnrolledDevice[]> {
  const entries = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id, batchIndex: index }, select: { deviceId: true } });
  return fleet.filter((d) => entries.some((e) => e.deviceId === d.deviceId));
}

describe("the demo's canary: one of three fails", () => {
  let id: string;
  let canary: EnrolledDevice[];

  it("pauses by itself; approve is refused naming the moves that make progress", async () => {
    id = await createAndStart(fleet.slice(0, 4), { canary: { count: 3 }, batches: [], successThreshold: 90, failureThreshold: 20, autoAdvance: false });
    canary = await batchDevices(id, 0);
    expect(canary).toHaveLength(3);
    await report(canary[0], id, "running");
    await report(canary[1], id, "running");
    await report(canary[2], id, "failed");
    const paused = await rollout(id);
    expect(paused).toMatchObject({ state: "paused", reason: "canary paused: its failed devices reached the failure threshold (20%)" });
    expect(paused.batches[0]).toMatchObject({ state: "in_progress", outcome: null, successTarget: 3, counts: { running: 2, failed: 1 } });
    const approve = await move(id, "approve");
    expect(approve.status).toBe(409);
    expect(approve.body.message).toBe(
      "Cannot approve the rollout: it is paused (allowed from awaiting_approval). The paused batch is not at an approval gate: "
        + "resume it to wait for its success target, retry its failed devices, promote it as it is, or abort",
    );
  });

  it("resume says what the canary now waits for (its counts are the batch's to say)", async () => {
    const res = await move(id, "resume");
    expect(res.status, res.text).toBe(200);
    const deadline = res.body.batches[0].deadlineAt as string;
    expect(res.body.state).toBe("canary");
    expect(res.body.reason).toBe(
      `canary resumed by ${operator}: failures accepted; waiting for 3 of 3 running until ${deadline}`,
    );
    expect(res.body.batches[0].counts).toMatchObject({ running: 2, failed: 1 });
  });

  it("promote records the canary as promoted by the operator with its counts, not as succeeded", async () => {
    const res = await move(id, "promote");
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ state: "in_progress", currentBatch: 1 });
    expect(res.body.reason).toBe(`canary promoted below its success target (3 running needed) by ${operator}; batch 1 dispatched`);
    expect(res.body.batches[0]).toMatchObject({
      state: "promoted",
      outcome: {
        kind: "promoted", move: "promote", by: operator, running: 2, failed: 1, size: 3, successTarget: 3,
        summary: `promoted below its success target (3 running needed) by ${operator}`,
      },
    });
    expect(Date.parse(res.body.batches[0].outcome.at)).not.toBeNaN();
  });

  it("completes with a reason that says which batch reached the threshold and which was promoted", async () => {
    const [last] = await batchDevices(id, 1);
    await report(last, id, "running");
    const done = await rollout(id);
    expect(done.state).toBe("completed");
    expect(done.reason).toBe(`all 2 batches done: 1 reached the success threshold; the canary was promoted below its success target (3 running needed) by ${operator}`);
    expect(done.batches.map((b) => [b.state, b.outcome?.kind, b.outcome?.move ?? null])).toEqual([["promoted", "promoted", "promote"], ["succeeded", "succeeded", null]]);
    expect(done.batches[1].outcome).toMatchObject({ running: 1, failed: 0, size: 1, successTarget: 1, by: null });
  });
});

describe("moves that make progress after an automatic pause", () => {
  it("retry-failed gives the failed devices their next attempt, resumes, and is audited; with none failed it is a 409", async () => {
    const id = await createAndStart(fleet.slice(0, 3), { canary: { count: 3 }, batches: [], successThreshold: 100, failureThreshold: 20 });
    const canary = await batchDevices(id, 0);
    await report(canary[0], id, "running");
    await report(canary[1], id, "running");
    await report(canary[2], id, "failed");
    expect((await rollout(id)).state).toBe("paused");

    const res = await move(id, "retry-failed");
    expect(res.status, res.text).toBe(200);
    expect(res.body.state).toBe("canary");
    expect(res.body.reason).toBe(`canary: 1 failed device retried by ${operator}; waiting for 3 of 3 running until ${res.body.batches[0].deadlineAt}`);
    expect(res.body.batches[0].counts).toMatchObject({ running: 2, failed: 0, pending: 1 });
    expect(await entry(id, canary[2])).toMatchObject({ state: "pending", attempt: 2, desiredAction: "install", reason: `retried by ${operator}: attempt 2` });
    expect(await installOf(canary[2], id)).toMatchObject({ attempt: 2 });
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { organizationId: acme.org.id, action: "deployments.rollout.retry-failed", entityId: id } });
    expect(audit).toMatchObject({ outcome: "success" });

    // nothing failed now: nothing to retry
    const again = await move(id, "retry-failed");
    expect(again.status).toBe(409);
    expect(again.body.message).toBe("Cannot retry the failed devices of the canary: none of its devices failed");

    // the second attempt runs: the canary reached its target by itself
    await report(canary[2], id, "running");
    const done = await rollout(id);
    expect(done).toMatchObject({ state: "completed", reason: "all 1 batch reached the success threshold" });
    expect(done.batches[0]).toMatchObject({ state: "succeeded", outcome: { kind: "succeeded", running: 3, failed: 0, move: null } });
    const finished = await move(id, "retry-failed");
    expect(finished.status).toBe(409);
    expect(finished.body.message).toContain("Cannot retry the failed devices of the rollout: it is completed");
  });

  it("promote straight from the pause records the batch as promoted; abort records the batch in flight as cancelled, by whom", async () => {
    const id = await createAndStart(fleet.slice(0, 5), { canary: { count: 2 }, batches: [], successThreshold: 100, failureThreshold: 50 });
    const canary = await batchDevices(id, 0);
    await report(canary[0], id, "failed");
    expect((await rollout(id)).state).toBe("paused");
    const promoted = await move(id, "promote");
    expect(promoted.status, promoted.text).toBe(200);
    expect(promoted.body.batches[0]).toMatchObject({ state: "promoted", outcome: { kind: "promoted", move: "promote", by: operator, running: 0, failed: 1, size: 2, successTarget: 2 } });

    const batch1 = await batchDevices(id, 1);
    await report(batch1[0], id, "running");
    const aborted = await move(id, "abort");
    expect(aborted.status, aborted.text).toBe(200);
    expect(aborted.body).toMatchObject({ state: "aborted", reason: `aborted by ${operator}` });
    expect(aborted.body.batches[1]).toMatchObject({ state: "cancelled", outcome: { kind: "cancelled", move: "abort", by: operator, running: 1, failed: 0, size: 3, successTarget: 3 } });
  });
});

/** A count of devices in words ("2 of 3 running", "0 failed"): what no stored text may carry, since later reports change it. */
const DEVICE_COUNT = /\d+ of \d+ running|\d+ failed|\d+ devices? running/;

describe("no text the rollout keeps says a count that later reports make untrue", () => {
  it("after a canary promoted below its target and a later failure, the reasons and summaries name no count; the counts say 1 failed", async () => {
    const id = await createAndStart(fleet.slice(0, 4), { canary: { count: 3 }, batches: [], successThreshold: 100, failureThreshold: 100 });
    const canary = await batchDevices(id, 0);
    await report(canary[0], id, "running");
    await report(canary[1], id, "running");
    // promoted while the third is still installing: at that moment 2 running, 0 failed
    const promoted = await move(id, "promote");
    expect(promoted.status, promoted.text).toBe(200);
    expect(promoted.body.batches[0].outcome).toMatchObject({ kind: "promoted", running: 2, failed: 0, at: expect.any(String) });
    // then it fails
    await report(canary[2], id, "failed");

    const now = await rollout(id);
    expect(now.batches[0].counts).toMatchObject({ running: 2, failed: 1 });
    const deployment = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body as { rolloutReason: string | null };
    const texts = [now.reason, deployment.rolloutReason, ...now.batches.map((b) => b.outcome?.summary ?? null)].filter((t): t is string => t !== null);
    expect(texts).toContain(`canary promoted below its success target (3 running needed) by ${operator}; batch 1 dispatched`);
    for (const text of texts) expect(text).not.toMatch(DEVICE_COUNT);

    // the rollout completes on the last batch: its completion reason names no count either
    const [last] = await batchDevices(id, 1);
    await report(last, id, "running");
    const done = await rollout(id);
    expect(done.state).toBe("completed");
    expect(done.reason).not.toMatch(DEVICE_COUNT);
  });
});

describe("property: for any reports and moves, every recorded outcome agrees with its counts and the moves made", () => {
  type Action = { kind: "report"; device: number; state: "running" | "failed" } | { kind: "move"; move: "promote" | "approve" | "pause" | "resume" | "abort" | "retry-failed" };
  const action: fc.Arbitrary<Action> = fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("report" as const), device: fc.integer({ min: 0, max: 4 }), state: fc.constantFrom("running" as const, "failed" as const) }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("move" as const), move: fc.constantFrom("promote" as const, "approve" as const, "pause" as const, "resume" as const, "abort" as const, "retry-failed" as const) }) },
  );
  const strategy = fc.record({
    canary: fc.record({ count: fc.integer({ min: 1, max: 3 }) }),
    batches: fc.constantFrom([], [{ percent: 50 }]),
    successThreshold: fc.constantFrom(50, 67, 100),
    failureThreshold: fc.constantFrom(20, 50, 100),
    autoAdvance: fc.boolean(),
  });

  /** What must hold of a rollout's record after any step. `before`: the status before a move that passed (its batch in flight's counts then). */
  function check(now: Rollout, moved?: { move: string; before: Rollout }) {
    for (const b of now.batches) {
      if (b.state === "planned" || b.state === "in_progress") {
        expect(b.outcome, `batch ${b.index} ${b.state}`).toBeNull();
        continue;
      }
      if (b.state === "cancelled" && b.outcome === null) continue; // never started
      const o = b.outcome!;
      expect(o, `batch ${b.index} ${b.state}`).not.toBeNull();
      expect(o.kind).toBe(b.state);
      expect(o.successTarget).toBe(b.successTarget);
      if (o.kind === "succeeded") expect(o.running, o.summary).toBeGreaterThanOrEqual(o.successTarget);
      if (o.kind === "promoted") {
        expect(o.running, o.summary).toBeLessThan(o.successTarget);
        expect(["promote", "approve"]).toContain(o.move);
        expect(o.by).toBe(operator);
      }
      if (o.move === null) expect(o.by).toBeNull();
      else expect(o.by).toBe(operator);
    }
    if (now.state === "completed") {
      expect(now.reason).toBe(completionReason(now.batches.map((b) => ({ index: b.index, outcome: b.outcome }))));
      expect(now.reason!.startsWith(`all ${now.batches.length} batch`) && now.reason!.includes("reached the success threshold")).toBe(true);
      expect(now.reason!.includes(" done: ")).toBe(now.batches.some((b) => b.state !== "succeeded"));
    }
    if (!moved) return;
    // the batch in flight before a promote / approve / abort that passed: recorded with the counts of that moment, naming the move
    const inFlight = moved.before.batches.find((b) => b.index === moved.before.currentBatch && b.state === "in_progress");
    if (!inFlight || !["promote", "approve", "abort"].includes(moved.move)) return;
    const after = now.batches.find((b) => b.index === inFlight.index)!;
    expect(after.outcome).toMatchObject({ move: moved.move, by: operator, running: inFlight.counts.running, failed: inFlight.counts.failed, size: inFlight.size });
    expect(after.state).toBe(moved.move === "abort" ? "cancelled" : inFlight.counts.running >= inFlight.successTarget ? "succeeded" : "promoted");
  }

  it("holds over the service", async () => {
    await fc.assert(
      fc.asyncProperty(strategy, fc.array(action, { minLength: 3, maxLength: 9 }), async (s, actions) => {
        const id = await createAndStart(fleet, s);
        for (const a of actions) {
          if (a.kind === "report") {
            await report(fleet[a.device], id, a.state);
            check(await rollout(id));
            continue;
          }
          const before = await rollout(id);
          const res = await move(id, a.move);
          expect([200, 409], res.text).toContain(res.status);
          check(await rollout(id), res.status === 200 ? { move: a.move, before } : undefined);
        }
      }),
      { numRuns: 12 },
    );
  }, 600_000);
});
