// The rollout's counts agree with themselves, and a rollout does not wait on a device that is
// offline: over HTTP and the agent protocol, with devices marked offline by the service's own
// offline detection (last seen long ago).
// * The canary is drawn from devices seen recently while there are enough of them; the offline
//   members of a later batch are counted apart (`offline`, not `pending`), the device table says
//   each device's status, and the eligibility read the deployment form previews counts them.
// * A batch's recorded outcome counts what its counts say at that moment: a device waiting to
//   retry when the rollout is aborted or times out gets no retry, and is failed in both.
// * A cancelled batch's devices are counted as cancelled, not as skipped.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { markOfflineDevices } from "../../../src/modules/devices/offline.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let online: EnrolledDevice[];
let offline: EnrolledDevice[];

interface Counts { pending: number; running: number; failed: number; waitingToRetry: number; offline: number; cancelled: number; skipped: number }
interface Batch { index: number; size: number; state: string; counts: Counts; outcome: { running: number; failed: number; summary: string } | null }
interface Rollout { state: string; currentBatch: number | null; batches: Batch[] }

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Counts");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  online = await enrollFleet(h, acme.key, 2, { labels: { line: "counts", seen: "recently" } });
  offline = await enrollFleet(h, acme.key, 8, { labels: { line: "counts", seen: "long-ago" } });
  // Every device checked in once; the eight were last seen two days ago, and offline detection marked them.
  for (const d of [...online, ...offline]) await agentHeartbeat(h, d);
  await h.services.prisma.device.updateMany({ where: { id: { in: offline.map((d) => d.deviceId) } }, data: { lastSeenAt: new Date(Date.now() - 2 * 86_400_000) } });
  const marked = await markOfflineDevices(h.services.prisma, new Date(), h.services.config.HEARTBEAT_INTERVAL_SECONDS);
  expect(marked.filter((m) => m.organizationId === acme.org.id).map((m) => m.deviceId).sort()).toEqual(offline.map((d) => d.deviceId).sort());
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function createAndStart(body: Record<string, unknown>): Promise<string> {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `counts-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", ...body },
  });
  expect(res.status, res.text).toBe(201);
  const started = await h.api("POST", `/api/v1/deployments/${res.body.id}/start`, { key: acme.key });
  expect(started.status, started.text).toBe(200);
  return res.body.id as string;
}

const rollout = async (id: string): Promise<Rollout> => (await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body;
const move = (id: string, name: string) => h.api("POST", `/api/v1/deployments/${id}/rollout/${name}`, { key: acme.key, body: {} });

async function batchOf(id: string, index: number): Promise<string[]> {
  const entries = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id, batchIndex: index }, select: { deviceId: true } });
  return entries.map((e) => e.deviceId).sort();
}

describe("a rollout never waits on a device that is offline", () => {
  it("draws the canary from the devices seen recently, whatever the order the plan would put them in", async () => {
    // three deployments: three pseudo-random orders (each a hash of device and deployment ids)
    for (let i = 0; i < 3; i++) {
      const id = await createAndStart({ target: { labelSelector: { line: "counts" } }, strategy: { type: "staged", canary: { count: 2 }, batches: [] } });
      expect(await batchOf(id, 0)).toEqual(online.map((d) => d.deviceId).sort());
      expect(await batchOf(id, 1)).toEqual(offline.map((d) => d.deviceId).sort());
      await move(id, "abort");
    }
  });

  it("counts a batch's offline members apart, says each device's status, and the eligibility read counts them", async () => {
    const id = await createAndStart({ target: { labelSelector: { line: "counts" } }, strategy: { type: "staged", canary: { count: 2 }, batches: [], successThreshold: 100 } });
    for (const d of online) await agentHeartbeat(h, d, [{ deploymentId: id, state: "running" }]);
    expect((await rollout(id)).state).toBe("awaiting_approval");
    expect((await move(id, "approve")).status).toBe(200);
    const r = await rollout(id);
    expect(r.batches[0].counts).toMatchObject({ running: 2, offline: 0 });
    // told to install, never seen since: offline, not pending
    expect(r.batches[1]).toMatchObject({ size: 8, state: "in_progress", counts: { pending: 0, offline: 8, running: 0 } });

    const table = await h.api("GET", `/api/v1/deployments/${id}/devices?batch=1&limit=50`, { key: acme.key });
    expect(table.status, table.text).toBe(200);
    expect(table.body.items.map((e: { deviceStatus: string; state: string }) => [e.deviceStatus, e.state])).toEqual(offline.map(() => ["offline", "pending"]));

    // one comes back: it is pending again (its heartbeat also takes the install)
    await agentHeartbeat(h, offline[0]);
    expect((await rollout(id)).batches[1].counts).toMatchObject({ pending: 1, offline: 7 });
    await h.services.prisma.device.update({ where: { id: offline[0].deviceId }, data: { status: "offline" } });

    const fit = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: { line: "counts" } } });
    expect(fit.status, fit.text).toBe(200);
    expect(fit.body).toMatchObject({ matched: 10, eligible: 10, offline: 8 });
    const armOnly = await h.api("POST", "/api/v1/groups/eligibility", { key: acme.key, body: { labelSelector: { line: "counts" }, architectures: ["amd64"] } });
    expect(armOnly.body).toMatchObject({ eligible: 0, skipped: 10, offline: 0 });
    await move(id, "abort");
  });
});

describe("the counts agree with themselves", () => {
  const retry = { maxAttempts: 3, initialDelaySeconds: 3600, maxDelaySeconds: 3600 };

  it("an abort: a device waiting to retry is failed in the batch's record and in its counts; the planned batch's devices are cancelled, not skipped", async () => {
    const id = await createAndStart({
      target: { deviceIds: online.map((d) => d.deviceId) }, retry,
      strategy: { type: "staged", canary: { count: 1 }, batches: [], failureThreshold: 100 },
    });
    const [canary] = await batchOf(id, 0);
    const device = online.find((d) => d.deviceId === canary)!;
    await agentHeartbeat(h, device, [{ deploymentId: id, state: "failed", message: "pull failed" }]);
    expect((await rollout(id)).batches[0].counts).toMatchObject({ failed: 0, waitingToRetry: 1 });

    const aborted = await move(id, "abort");
    expect(aborted.status, aborted.text).toBe(200);
    const r = await rollout(id);
    expect(r.batches[0].counts).toMatchObject({ failed: 1, waitingToRetry: 0 });
    expect(r.batches[0].outcome).toMatchObject({ failed: 1, running: 0 });
    // the words name no count (they would go stale: issue 46); the counts of that moment are the outcome's fields above
    expect(r.batches[0].outcome!.summary).toContain("aborted");
    expect(r.batches[1]).toMatchObject({ state: "cancelled", counts: { cancelled: 1, skipped: 0, pending: 0 } });
  });

  it("a timeout: the same", async () => {
    const id = await createAndStart({
      target: { deviceIds: online.map((d) => d.deviceId) }, retry,
      strategy: { type: "staged", canary: { count: 2 }, batches: [], failureThreshold: 100, successThreshold: 100 },
    });
    const [first, second] = online;
    await agentHeartbeat(h, first, [{ deploymentId: id, state: "failed", message: "pull failed" }]);
    await h.services.prisma.deploymentBatch.update({ where: { deploymentId_index: { deploymentId: id, index: 0 } }, data: { deadlineAt: new Date(Date.now() - 1000) } });
    // the other's report has the batch judged: below its success target after its deadline
    await agentHeartbeat(h, second, [{ deploymentId: id, state: "running" }]);
    const r = await rollout(id);
    expect(r.state).toBe("failed");
    expect(r.batches[0].counts).toMatchObject({ running: 1, failed: 1, waitingToRetry: 0 });
    expect(r.batches[0].outcome).toMatchObject({ running: 1, failed: 1 });
  });
});
