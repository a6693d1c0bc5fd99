// A configuration layer's revision rolled out like software (docs/configuration.md, "Rollout"):
// simulated devices speaking the real agent protocol (src/simulator) over HTTP. PATCH with
// `rollout` writes the revision without releasing it and starts an apply-configuration job: the
// canary's heartbeat hands it the new revision while the others keep the released one; batches
// follow as devices report it applied; a device failing to apply it pauses the job at its
// failure threshold; resume; cancel hands every device the released revision again; a second
// rollout completes and releases its revision, which a device offline during it gets when it
// returns. Bad input: 400 naming the field, nothing stored; a second live rollout: 409.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";
import type { VirtualDevice } from "../../../src/simulator/virtual-device.js";

let h: Harness;
let acme: Tenant;
let simulator: FleetSimulator;
let online: VirtualDevice[];
let sleeper: VirtualDevice;
let layerId: string;

const FAILURE = "activation of layer defaults (systemctl reload mosquitto) exited with 1: unit not found";

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Rollout");
  await ensureCa(h, acme.key);
  const token = await createEnrollmentToken(h, acme.key, { maxUses: 11 });
  simulator = new FleetSimulator({ url: h.url, enrollmentToken: token.token, devices: 11, heartbeatMs: 3_600_000, telemetryMs: 3_600_000, logsMs: 3_600_000, failureRate: 0, idPrefix: "rollout", enrollConcurrency: 4 });
  await simulator.enrollAll();
  [sleeper, ...online] = simulator.devices;
}, 120_000);

afterAll(async () => {
  await simulator?.stop();
  await h?.close();
});

/** Two heartbeats of each device (the first takes what it is answered, the second reports it): the revision each was answered last. */
async function beatTwice(devices: VirtualDevice[]): Promise<Array<string | undefined>> {
  const answered = new Map<VirtualDevice, string | undefined>();
  for (let round = 0; round < 2; round++) {
    for (const d of devices) {
      const res = await d.heartbeat();
      expect(res.status).toBe(200);
      const body = res.body as { actions?: unknown[]; configuration?: { revision: string } };
      // the agent never sees a rollout's action
      expect(body.actions ?? []).toEqual([]);
      answered.set(d, body.configuration?.revision);
    }
  }
  return devices.map((d) => answered.get(d));
}

const effective = async (d: VirtualDevice) =>
  (await h.api("GET", `/api/v1/config-layers/effective?deviceId=${d.deviceId}`, { key: acme.key })).body as { revision: string; inSync: boolean; reported: { state: string; message: string | null } | null };
const getJob = async (id: string) => (await h.api("GET", `/api/v1/jobs/${id}`, { key: acme.key })).body;
const actionsOf = async (jobId: string) =>
  (await h.services.prisma.deviceAction.findMany({ where: { jobId }, orderBy: { batchIndex: "asc" } }));
const devicesIn = (actions: Awaited<ReturnType<typeof actionsOf>>, pick: (a: Awaited<ReturnType<typeof actionsOf>>[number]) => boolean) =>
  online.filter((d) => actions.some((a) => a.deviceId === d.deviceId && pick(a)));

describe("a layer revision rolled out like software", () => {
  let h1: string;

  it("release at once is today's behaviour: every device applies revision 1", async () => {
    const created = await h.api("POST", "/api/v1/config-layers", { key: acme.key, body: { name: "defaults", kind: "organization", variables: { LEVEL: "info" }, files: [{ path: "/etc/fleet/log.conf", content: "level={{ vars.LEVEL }}\n" }] } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ revision: 1, releasedRevision: 1, rollout: null });
    layerId = created.body.id;
    await beatTwice(simulator.devices);
    h1 = (await effective(online[0])).revision;
    expect(simulator.devices.map((d) => d.configuration.applied)).toEqual(simulator.devices.map(() => h1));
    // the sleeper goes offline: drawn last by the rollouts, it heartbeats again only at the end
    await h.services.prisma.device.update({ where: { id: sleeper.deviceId! }, data: { status: "offline" } });
  });

  it("refuses bad input naming the field, storing nothing", async () => {
    const jobsBefore = await h.services.prisma.actionJob.count();
    const badThreshold = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "debug" }, rollout: { strategy: { failureThreshold: 101 } } } });
    expect(badThreshold.status).toBe(400);
    expect(badThreshold.text).toContain("rollout.strategy.failureThreshold");
    const unknownField = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "debug" }, rollout: { canary: 1 } } });
    expect(unknownField.status).toBe(400);
    expect(unknownField.text).toContain("rollout");
    const nothingToRollOut = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { description: "defaults", rollout: {} } });
    expect(nothingToRollOut.status).toBe(400);
    expect(nothingToRollOut.body.message).toContain("rollout: only a change of content");
    const budget = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "debug" }, rollout: { disruptionBudget: { groupBy: ["site"], maxUnavailable: { count: 0 } } } } });
    expect(budget.status).toBe(400);
    expect(budget.text).toContain("rollout.disruptionBudget");
    // a rollout's job is a layer's: never created directly
    const direct = await h.api("POST", "/api/v1/jobs", { key: acme.key, body: { kind: "apply-configuration", target: { labelSelector: {} } } });
    expect(direct.status).toBe(400);
    expect(direct.text).toContain("kind");
    expect(direct.body.message).toContain("PATCH /config-layers/{id}");
    const action = await h.api("POST", "/api/v1/device-actions", { key: acme.key, body: { kind: "apply-configuration", deviceId: online[0].deviceId } });
    expect(action.status).toBe(400);
    expect(action.text).toContain("kind");
    const layer = await h.services.prisma.configLayer.findUniqueOrThrow({ where: { id: layerId } });
    expect([layer.currentRevision, layer.releasedRevision, layer.description]).toEqual([1, 1, null]);
    expect(await h.services.prisma.actionJob.count()).toBe(jobsBefore);
    expect(await h.services.prisma.deviceAction.count({ where: { kind: "apply-configuration" } })).toBe(0);
  });

  it("canary first, batches as devices apply it, paused at the failure threshold, resumed, cancelled: devices get the released revision again", async () => {
    const patched = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, {
      key: acme.key,
      body: {
        variables: { LEVEL: "debug" }, comment: "debug logs for the outage",
        rollout: { reason: "debug logs", strategy: { canary: { count: 1 }, batches: [{ percent: 50 }, { percent: 100 }], successThreshold: 75, failureThreshold: 20 } },
      },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ revision: 2, releasedRevision: 1, rollout: { revision: 2, state: "in_progress" } });
    const jobId = patched.body.rollout.jobId as string;
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "config-layers.update", entityId: layerId }, orderBy: { createdAt: "desc" } });
    expect(audit?.message).toBe(`layer defaults: variables changed, revision 2; rolled out by job ${jobId} over 11 devices`);

    const job = await getJob(jobId);
    expect(job).toMatchObject({ kind: "apply-configuration", configLayerId: layerId, configRevision: 2, state: "in_progress", currentBatch: 0, eligible: 11, reason: "debug logs" });
    expect(job.batches.map((b: { size: number }) => b.size)).toEqual([1, 5, 5]);
    expect(job.counts).toMatchObject({ pending: 1, queued: 10 });
    // a second rollout while this one lives: 409 naming the field, nothing stored
    const second = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "trace" }, rollout: {} } });
    expect(second.status).toBe(409);
    expect(second.body.message).toContain(`rollout: layer "defaults" has a rollout in progress (job ${jobId}, revision 2, in_progress)`);
    expect((await h.services.prisma.configLayer.findUniqueOrThrow({ where: { id: layerId } })).currentRevision).toBe(2);

    // the canary gets revision 2, every other device keeps revision 1 (what their heartbeats answer, and what they apply)
    const [canary] = devicesIn(await actionsOf(jobId), (a) => a.batchIndex === 0);
    const others = online.filter((d) => d !== canary);
    expect(await beatTwice(others)).toEqual(others.map(() => h1));
    expect(others.map((d) => d.configuration.applied)).toEqual(others.map(() => h1));
    const [answered] = await beatTwice([canary]);
    const h2 = canary.configuration.applied!;
    expect(answered).toBe(h2);
    expect(h2).not.toBe(h1);
    expect(await effective(canary)).toMatchObject({ revision: h2, inSync: true });
    expect(await effective(online.find((d) => d !== canary)!)).toMatchObject({ revision: h1, inSync: true });
    const canaryAction = (await actionsOf(jobId)).find((a) => a.deviceId === canary.deviceId)!;
    expect(canaryAction).toMatchObject({ state: "succeeded", configLayerId: layerId, configRevision: 2, result: { revision: h2 } });
    expect(await getJob(jobId)).toMatchObject({ state: "in_progress", currentBatch: 1, stateReason: "canary reached its success target; batch 1 dispatched" });

    // batch 1: one device fails applying it; at 20% of 5 the job pauses
    const batch1 = devicesIn(await actionsOf(jobId), (a) => a.batchIndex === 1);
    expect(batch1).toHaveLength(5);
    const [failing] = batch1;
    failing.configuration.failing = FAILURE;
    await beatTwice(online);
    const paused = await getJob(jobId);
    expect(paused.state).toBe("paused");
    expect(paused.stateReason).toContain("failure threshold (20%)");
    expect(paused.batches[1].counts).toMatchObject({ failed: 1, succeeded: 4 });
    const failedAction = (await actionsOf(jobId)).find((a) => a.deviceId === failing.deviceId)!;
    expect(failedAction).toMatchObject({ state: "failed", message: FAILURE, result: { revision: h2 } });
    // it keeps revision 1 (the service answers it the released one again), and says why it failed
    expect(failing.configuration.applied).toBe(h1);
    expect(await effective(failing)).toMatchObject({ revision: h1 });
    expect(batch1.slice(1).map((d) => d.configuration.applied)).toEqual([h2, h2, h2, h2]);
    // devices of batch 2 are still queued and on revision 1
    const batch2 = devicesIn(await actionsOf(jobId), (a) => a.batchIndex === 2);
    expect(batch2.map((d) => d.configuration.applied)).toEqual(batch2.map(() => h1));

    // resume: batch 1 is accepted with its failure (4 of 5 reach the target of 4), batch 2 dispatched
    const resumed = await h.api("POST", `/api/v1/jobs/${jobId}/resume`, { key: acme.key });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ state: "in_progress", currentBatch: 2 });

    // cancel: nothing released; every device that took revision 2 gets revision 1 again
    const cancelled = await h.api("POST", `/api/v1/jobs/${jobId}/cancel`, { key: acme.key, body: { reason: "debug logs fill the disk" } });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ state: "cancelled", stateReason: "debug logs fill the disk" });
    failing.configuration.failing = null;
    await beatTwice(online);
    expect(online.map((d) => d.configuration.applied)).toEqual(online.map(() => h1));
    expect(await effective(canary)).toMatchObject({ revision: h1, inSync: true });
    const layer = await h.api("GET", `/api/v1/config-layers/${layerId}`, { key: acme.key });
    expect(layer.body).toMatchObject({ revision: 2, releasedRevision: 1, rollout: null });
    expect(await h.services.prisma.deviceAction.count({ where: { jobId, state: { in: ["pending", "delivered", "queued"] } } })).toBe(0);
  });

  it("a rollout that completes releases its revision; a device offline during it gets the newest when it returns", async () => {
    const patched = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, {
      key: acme.key,
      body: { variables: { LEVEL: "warn" }, rollout: { strategy: { canary: { count: 1 }, batches: [{ percent: 50 }, { percent: 100 }], successThreshold: 75, failureThreshold: 20 } } },
    });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ revision: 3, releasedRevision: 1 });
    const jobId = patched.body.rollout.jobId as string;
    // the offline device is drawn last
    expect((await actionsOf(jobId)).find((a) => a.deviceId === sleeper.deviceId)?.batchIndex).toBe(2);
    for (let i = 0; i < 6 && (await getJob(jobId)).state === "in_progress"; i++) await beatTwice(online);
    const done = await getJob(jobId);
    expect(done.state).toBe("completed");
    expect(done.stateReason).toBe("batch 2 reached its success target; revision 3 released (1 devices not done yet get it with their next heartbeat)");
    expect(done.counts).toMatchObject({ succeeded: 10, cancelled: 1 });
    const h3 = online[0].configuration.applied!;
    expect([h1]).not.toContain(h3);
    expect(online.map((d) => d.configuration.applied)).toEqual(online.map(() => h3));
    expect((await h.services.prisma.configLayer.findUniqueOrThrow({ where: { id: layerId } })).releasedRevision).toBe(3);
    expect((await actionsOf(jobId)).find((a) => a.deviceId === sleeper.deviceId)).toMatchObject({ state: "cancelled" });

    // the offline device returns: the newest revision, never an older one
    expect(sleeper.configuration.applied).toBe(h1);
    await h.services.prisma.device.update({ where: { id: sleeper.deviceId! }, data: { status: "online" } });
    await beatTwice([sleeper]);
    expect(sleeper.configuration.applied).toBe(h3);
    expect(await effective(sleeper)).toMatchObject({ revision: h3, inSync: true });
  });

  it("a release at once while a rollout lives cancels it first, and says so", async () => {
    const rolling = await h.api("POST", `/api/v1/config-layers/${layerId}/rollback`, { key: acme.key, body: { revision: 1, rollout: { reason: "back to info" } } });
    expect(rolling.status, rolling.text).toBe(200);
    expect(rolling.body).toMatchObject({ revision: 4, releasedRevision: 3, rollout: { revision: 4, state: "in_progress" } });
    const jobId = rolling.body.rollout.jobId as string;
    const atOnce = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "error" } } });
    expect(atOnce.status, atOnce.text).toBe(200);
    expect(atOnce.body).toMatchObject({ revision: 5, releasedRevision: 5, rollout: null });
    const job = await getJob(jobId);
    expect(job.state).toBe("cancelled");
    expect(job.stateReason).toMatch(/^cancelled: revision 5 of layer defaults was released at once by /);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "config-layers.update", entityId: layerId }, orderBy: { createdAt: "desc" } });
    expect(audit?.message).toBe(`layer defaults: variables changed, revision 5; released at once, cancelling the rollout job ${jobId}`);
    await beatTwice(simulator.devices);
    const h5 = (await effective(online[0])).revision;
    expect(simulator.devices.map((d) => d.configuration.applied)).toEqual(simulator.devices.map(() => h5));
  });

  it("moving a rollout's job takes config:write besides actions:write (403, audited); PATCH with rollout takes config:write", async () => {
    const rolling = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: acme.key, body: { variables: { LEVEL: "info" }, rollout: {} } });
    expect(rolling.status, rolling.text).toBe(200);
    const jobId = rolling.body.rollout.jobId as string;
    const actionsOnly = await h.createKey(acme.org.id, ["actions:read", "actions:write", "config:read"]);
    const denied = await h.api("POST", `/api/v1/jobs/${jobId}/cancel`, { key: actionsOnly });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain("config:write");
    expect(await h.services.prisma.auditEntry.count({ where: { action: "permission.denied", message: { contains: "config:write" } } })).toBe(1);
    const noRollout = await h.api("PATCH", `/api/v1/config-layers/${layerId}`, { key: actionsOnly, body: { variables: { LEVEL: "debug" }, rollout: {} } });
    expect(noRollout.status).toBe(403);
    // the job and the layer are as they were
    expect(await getJob(jobId)).toMatchObject({ state: "in_progress" });
    expect((await h.services.prisma.configLayer.findUniqueOrThrow({ where: { id: layerId } })).currentRevision).toBe(6);
    const cancelled = await h.api("POST", `/api/v1/jobs/${jobId}/cancel`, { key: acme.key });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ state: "cancelled", kind: "apply-configuration", configRevision: 6 });
  });
});
