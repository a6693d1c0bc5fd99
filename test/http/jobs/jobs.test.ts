// /api/v1/jobs over HTTP against the service and enrolled devices speaking the real heartbeat:
// a job over a label selector or a device list is previewed (counts and batches, nothing
// stored), created (one action per device, skipped ones with the reason, audited), dispatched
// batch by batch as devices report (the canary first, the next batch once the one before
// reached its success threshold), paused at its failure threshold, resumed, paused, cancelled,
// expired; run at most once per device; tenants (404), permissions (actions:disruptive) and bad
// input (400 naming the field, nothing stored). A job over 1,000 simulated devices (inserted
// rows; their reports go through the heartbeat's own report statement) pauses at its failure
// threshold and resumes.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { insertDevices, type EnrolledDevice } from "../agent/fleet-support.js";
import { beat as jobBeat, beatAll as beatAllOf, type Handed } from "./support.js";
import { enrollFleet, importVersion } from "../deployments/support.js";
import { recordActionReports } from "../../../src/modules/device-actions/service.js";
import { judgeLiveJobs } from "../../../src/modules/jobs/tick.js";
import { strategySchema } from "../../../src/modules/deployments/strategy.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let north: EnrolledDevice[];
let south: EnrolledDevice[];
let deploymentId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Jobs");
  globex = await h.createTenant("Globex Jobs");
  const appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  north = await enrollFleet(h, acme.key, 10, { labels: { site: "north" } });
  south = await enrollFleet(h, acme.key, 2, { labels: { site: "south" } });
  const created = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: "web", applicationId: appId, version: "1.0.0", profileId: "compose-main", parameters: { apiToken: "tok-jobs" }, target: { deviceIds: [south[0].deviceId] }, strategy: { type: "all-at-once" } },
  });
  expect(created.status, created.text).toBe(201);
  deploymentId = created.body.id;
  expect((await h.api("POST", `/api/v1/deployments/${deploymentId}/start`, { key: acme.key })).status).toBe(200);
}, 300_000);
afterAll(() => h?.close());

const beat = (device: EnrolledDevice, actions?: unknown[]) => jobBeat(h, device, actions);
const beatAll = (devices: EnrolledDevice[]) => beatAllOf(h, devices);

async function report(handed: Map<EnrolledDevice, Handed>, state: string, message?: string) {
  for (const [device, actions] of handed) await beat(device, actions.map((a) => ({ id: a.id, state, ...(message ? { message } : {}) })));
}

const createJob = (body: Record<string, unknown>, key = acme.key) => h.api("POST", "/api/v1/jobs", { key, body });
const getJob = (id: string, key = acme.key) => h.api("GET", `/api/v1/jobs/${id}`, { key });

describe("preview", () => {
  it("counts the devices and plans the batches with the rollout engine, storing nothing", async () => {
    const before = await h.services.prisma.deviceAction.count();
    const res = await h.api("POST", "/api/v1/jobs/preview", {
      key: acme.key,
      body: { kind: "check-health", target: { labelSelector: { site: "north" } }, strategy: { canary: { count: 2 }, batches: [{ percent: 50 }, { percent: 50 }] } },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      matched: 10, eligible: 10, skipped: 0, offline: 0,
      batches: [{ index: 0, kind: "canary", size: 2 }, { index: 1, kind: "batch", size: 4 }, { index: 2, kind: "batch", size: 4 }],
    });
    const app = await h.api("POST", "/api/v1/jobs/preview", { key: acme.key, body: { kind: "restart-app", deploymentId, target: { labelSelector: { site: "south" } } } });
    expect(app.body).toMatchObject({ matched: 2, eligible: 1, skipped: 1 });
    expect(await h.services.prisma.deviceAction.count()).toBe(before);
    expect(await h.services.prisma.actionJob.count()).toBe(0);
  });
});

describe("a job's life", () => {
  it("dispatches the canary, then each batch once the one before reached its success threshold, and completes", async () => {
    const res = await createJob({
      kind: "check-health", reason: "slow pages at the north site", target: { labelSelector: { site: "north" } },
      strategy: { canary: { count: 2 }, batches: [{ percent: 50 }, { percent: 50 }], successThreshold: 100, failureThreshold: 50 },
    });
    expect(res.status, res.text).toBe(201);
    const job = res.body;
    expect(job).toMatchObject({ kind: "check-health", state: "in_progress", currentBatch: 0, eligible: 10, skipped: 0, reason: "slow pages at the north site" });
    expect(job.counts).toMatchObject({ pending: 2, queued: 8, succeeded: 0 });
    expect(job.batches.map((b: { size: number; successTarget: number }) => [b.size, b.successTarget])).toEqual([[2, 2], [4, 4], [4, 4]]);
    expect(await h.services.prisma.deviceAction.count({ where: { jobId: job.id } })).toBe(10);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "jobs.create", entityId: job.id } });
    expect(audit?.message).toBe("check-health job over 10 devices (0 skipped): slow pages at the north site");

    // only the canary's devices are handed it
    const canary = await beatAll(north);
    expect(canary.size).toBe(2);
    expect([...canary.values()].flat().map((a) => a.kind)).toEqual(["check-health", "check-health"]);
    await report(canary, "succeeded", "all healthy");
    const afterCanary = await getJob(job.id);
    expect(afterCanary.body).toMatchObject({ state: "in_progress", currentBatch: 1, stateReason: "canary reached its success target; batch 1 dispatched" });
    expect(afterCanary.body.counts).toMatchObject({ succeeded: 2, pending: 4, queued: 4 });
    expect(afterCanary.body.batches[0].counts).toMatchObject({ succeeded: 2 });

    const batch1 = await beatAll(north);
    expect(batch1.size).toBe(4);
    expect([...batch1.keys()].some((d) => canary.has(d))).toBe(false);
    await report(batch1, "succeeded");
    const batch2 = await beatAll(north);
    expect(batch2.size).toBe(4);
    await report(batch2, "succeeded");
    const done = await getJob(job.id);
    expect(done.body).toMatchObject({ state: "completed", currentBatch: 2, stateReason: "every device ran it or was skipped" });
    expect(done.body.counts).toMatchObject({ succeeded: 10, pending: 0, queued: 0 });
    expect(done.body.completedAt).not.toBeNull();
    // at most once: a device that reconnects and repeats its report is handed nothing again
    const [device, actions] = [...canary][0];
    expect(await beat(device, [{ id: actions[0].id, state: "succeeded" }])).toEqual([]);
    expect(await beat(device)).toEqual([]);
    // each device's result
    const results = await h.api("GET", `/api/v1/device-actions?jobId=${job.id}&limit=100`, { key: acme.key });
    expect(results.body.total).toBe(10);
    expect(results.body.items.every((a: { state: string; jobId: string }) => a.state === "succeeded" && a.jobId === job.id)).toBe(true);
    expect(results.body.items.filter((a: { batchIndex: number }) => a.batchIndex === 0)).toHaveLength(2);
  });

  it("pauses at its failure threshold; resume accepts the failures; pause and cancel are operator moves (409 naming the state otherwise)", async () => {
    const res = await createJob({ kind: "diagnostics", target: { labelSelector: { site: "north" } }, strategy: { canary: { count: 4 }, batches: [], failureThreshold: 50 } });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    const canary = [...(await beatAll(north))];
    expect(canary).toHaveLength(4);
    await report(new Map(canary.slice(0, 2)), "failed", "disk full");
    const paused = await getJob(id);
    expect(paused.body).toMatchObject({ state: "paused", currentBatch: 0, stateReason: "canary: job paused, its failed devices reached the failure threshold (50%)" });
    expect(paused.body.counts).toMatchObject({ failed: 2, delivered: 2, queued: 6 });
    // the rest of a paused job is not handed out
    expect((await beatAll(north)).size).toBe(2);

    expect((await h.api("POST", `/api/v1/jobs/${id}/pause`, { key: acme.key })).body.message).toBe("Cannot pause the job: it is paused (allowed while in_progress)");
    const resumed = await h.api("POST", `/api/v1/jobs/${id}/resume`, { key: acme.key });
    expect(resumed.status, resumed.text).toBe(200);
    expect(resumed.body).toMatchObject({ state: "in_progress", currentBatch: 0 });
    expect(resumed.body.stateReason).toMatch(/^resumed by /);
    // the canary's other devices end: the batch is accepted as it is, the next one follows
    await report(new Map(canary.slice(2)), "succeeded");
    const next = await getJob(id);
    expect(next.body).toMatchObject({ state: "in_progress", currentBatch: 1 });
    expect(next.body.counts).toMatchObject({ failed: 2, succeeded: 2, pending: 6 });

    const pausedByHand = await h.api("POST", `/api/v1/jobs/${id}/pause`, { key: acme.key, body: { reason: "lunch rush" } });
    expect(pausedByHand.body).toMatchObject({ state: "paused", stateReason: "lunch rush" });
    const cancelled = await h.api("POST", `/api/v1/jobs/${id}/cancel`, { key: acme.key });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.state).toBe("cancelled");
    expect(cancelled.body.stateReason).toMatch(/^cancelled by /);
    expect(cancelled.body.counts).toMatchObject({ cancelled: 6, pending: 0, queued: 0 });
    expect((await beatAll(north)).size).toBe(0);
    expect((await h.api("POST", `/api/v1/jobs/${id}/cancel`, { key: acme.key })).status).toBe(409);
    expect((await h.api("POST", `/api/v1/jobs/${id}/resume`, { key: acme.key })).body.message).toBe("Cannot resume the job: it is cancelled (allowed while paused)");
    for (const action of ["jobs.pause", "jobs.resume", "jobs.cancel"]) {
      expect(await h.services.prisma.auditEntry.count({ where: { action, entityId: id, outcome: "success" } }), action).toBeGreaterThan(0);
    }
  });

  it("skips the devices that cannot run it, each with the reason", async () => {
    const res = await createJob({ kind: "restart-app", deploymentId, target: { labelSelector: { site: "south" } } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ eligible: 1, skipped: 1, counts: { pending: 1, skipped: 1 } });
    const skipped = await h.services.prisma.deviceAction.findFirstOrThrow({ where: { jobId: res.body.id, state: "skipped" } });
    expect(skipped).toMatchObject({ deviceId: south[1].deviceId, message: "the device is not told to run this deployment", batchIndex: null });
    await h.api("POST", `/api/v1/jobs/${res.body.id}/cancel`, { key: acme.key });
  });

  it("expires: devices that have not run it by then never do, and the job ends expired", async () => {
    const res = await createJob({ kind: "renew-certificate", target: { deviceIds: north.slice(0, 3).map((d) => d.deviceId) }, strategy: { canary: { count: 1 } }, expiresInSeconds: 60 });
    expect(res.status, res.text).toBe(201);
    await h.services.prisma.actionJob.update({ where: { id: res.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    await h.services.prisma.deviceAction.updateMany({ where: { jobId: res.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await judgeLiveJobs(h.services)).toBeGreaterThanOrEqual(1);
    const expired = await getJob(res.body.id);
    expect(expired.body).toMatchObject({ state: "expired", counts: { expired: 3, pending: 0, queued: 0 } });
    expect((await beatAll(north.slice(0, 3))).size).toBe(0);
  });
});

describe("a job over 1,000 simulated devices", () => {
  it("pauses its batch at the failure threshold and resumes", async () => {
    const ids = await insertDevices(h, acme.org.id, Array.from({ length: 1000 }, (_, i) => ({ name: `sim-${i}`, labels: { fleet: "sim" }, status: i % 10 === 0 ? "offline" : "online" })));
    const res = await createJob({ kind: "check-health", target: { labelSelector: { fleet: "sim" } }, strategy: { canary: { percent: 5 }, batches: [{ percent: 20 }, { percent: 100 }], failureThreshold: 10 } });
    expect(res.status, res.text).toBe(201);
    const id = res.body.id;
    expect(res.body.batches.map((b: { size: number }) => b.size)).toEqual([50, 190, 760]);
    // the offline devices come last: none is in the canary or the first batch
    const early = await h.services.prisma.deviceAction.findMany({ where: { jobId: id, batchIndex: { in: [0, 1] } }, select: { device: { select: { status: true } } } });
    expect(early.filter((a) => a.device.status === "offline")).toHaveLength(0);
    const raw = h.services.database.opened.raw;
    const reportBatch = async (index: number, failing: number) => {
      const actions = await h.services.prisma.deviceAction.findMany({ where: { jobId: id, batchIndex: index }, select: { id: true, deviceId: true }, orderBy: { id: "asc" } });
      for (const [i, a] of actions.entries()) await recordActionReports(raw, a.deviceId, [{ id: a.id, state: i < failing ? "failed" : "succeeded" }]);
      await judgeLiveJobs(h.services);
    };
    await reportBatch(0, 0);
    expect((await getJob(id)).body).toMatchObject({ state: "in_progress", currentBatch: 1 });
    await reportBatch(1, 19);
    const paused = await getJob(id);
    expect(paused.body).toMatchObject({ state: "paused", currentBatch: 1, stateReason: "batch 1: job paused, its failed devices reached the failure threshold (10%)" });
    expect(paused.body.batches[1].counts).toMatchObject({ failed: 19, succeeded: 171 });
    expect(paused.body.counts.queued).toBe(760);
    expect((await h.api("POST", `/api/v1/jobs/${id}/resume`, { key: acme.key })).body).toMatchObject({ state: "in_progress", currentBatch: 2, counts: { pending: 760, queued: 0 } });
    await reportBatch(2, 0);
    expect((await getJob(id)).body).toMatchObject({ state: "completed", counts: { succeeded: 981, failed: 19 } });
    expect(ids).toHaveLength(1000);
  }, 300_000);
});

describe("refusals", () => {
  it("400 naming the field, nothing stored", async () => {
    const before = [await h.services.prisma.actionJob.count(), await h.services.prisma.deviceAction.count()];
    const target = { labelSelector: { site: "north" } };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ kind: "format-disk", target }, "kind"],
      [{ kind: "reboot" }, "target"],
      [{ kind: "reboot", target: { labelSelector: { site: "north" }, deviceIds: [north[0].deviceId] } }, "give exactly one of labelSelector or deviceIds"],
      [{ kind: "reboot", target: { labelSelector: {} } }, "an empty selector would match every device"],
      [{ kind: "restart-app", target }, "deploymentId: restart-app names the deployment"],
      [{ kind: "reboot", target, deploymentId }, "deploymentId: reboot acts on the whole device"],
      [{ kind: "stop-app", target, deploymentId: crypto.randomUUID() }, "deploymentId: no such deployment in your organization"],
      [{ kind: "reboot", target, strategy: { failureThreshold: 0 } }, "failureThreshold"],
      [{ kind: "reboot", target, strategy: { canary: { count: 0 } } }, "canary"],
      [{ kind: "reboot", target, expiresInSeconds: 10 }, "expiresInSeconds"],
    ];
    for (const [body, message] of cases) {
      const res = await createJob(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.stringify(res.body), JSON.stringify(body)).toContain(message);
    }
    const none = await createJob({ kind: "reboot", target: { labelSelector: { site: "nowhere" } } });
    expect(none.status).toBe(409);
    expect(none.body.message).toBe("The target matches no device that can run it (0 skipped); nothing to do");
    expect([await h.services.prisma.actionJob.count(), await h.services.prisma.deviceAction.count()]).toEqual(before);
    // The REST layer made the job input's numbers coercing in place (trpc-to-openapi): the
    // deployment's strategy, whose thresholds jobs take after, still refuses a text threshold.
    expect(strategySchema.safeParse({ type: "staged", canary: { count: 1 }, successThreshold: "90" }).success).toBe(false);
  });

  it("another tenant's job is a 404, and its devices are not the caller's", async () => {
    const { body } = await createJob({ kind: "check-health", target: { deviceIds: [north[0].deviceId] } });
    for (const [method, path] of [["GET", ""], ["POST", "/pause"], ["POST", "/resume"], ["POST", "/cancel"]]) {
      expect((await h.api(method, `/api/v1/jobs/${body.id}${path}`, { key: globex.key })).status, path).toBe(404);
    }
    expect((await h.api("GET", "/api/v1/jobs", { key: globex.key })).body.total).toBe(0);
    const foreign = await createJob({ kind: "check-health", target: { deviceIds: [north[0].deviceId] } }, globex.key);
    expect(foreign.status).toBe(409);
    const mine = await h.api("GET", "/api/v1/jobs?state=in_progress", { key: acme.key });
    expect(mine.body.items.map((j: { id: string }) => j.id)).toContain(body.id);
    await h.api("POST", `/api/v1/jobs/${body.id}/cancel`, { key: acme.key });
  });

  it("disruptive kinds need actions:disruptive; reading implies no job", async () => {
    const writer = await h.createKey(acme.org.id, ["actions:write", "actions:read", "devices:read"]);
    const reboot = await createJob({ kind: "reboot", target: { labelSelector: { site: "north" } } }, writer);
    expect(reboot.status).toBe(403);
    expect(reboot.body.message).toContain("actions:disruptive");
    const reader = await h.createKey(acme.org.id, ["actions:read", "devices:read"]);
    expect((await createJob({ kind: "check-health", target: { labelSelector: { site: "north" } } }, reader)).status).toBe(403);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "permission.denied", message: { startsWith: "jobs.create: Missing permission actions:disruptive" } } })).toBe(1);
  });

  it("the security suite on every operation", async () => {
    const { body } = await createJob({ kind: "check-health", target: { deviceIds: [north[1].deviceId] } });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/jobs", permission: "actions:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/jobs/${body.id}`, permission: "actions:read", foreignPath: `/api/v1/jobs/${body.id}` });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/jobs/preview", body: { kind: "check-health", target: { labelSelector: { site: "north" } } }, permission: "actions:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/jobs/${body.id}/pause`, permission: "actions:write", foreignPath: `/api/v1/jobs/${body.id}/pause` });
  });
});
