// Scheduled start: a draft with startAt is listed as scheduled and shows its time in the
// rollout status, can be moved or cancelled until then, and is started by the rollout job
// exactly once (several ticks racing) once its time has come. The job is driven with an
// explicit clock: no waiting for the wall clock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { startScheduledDeployments } from "../../../src/modules/deployments/jobs.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
let appId: string;
let fleet: EnrolledDevice[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Schedules");
  appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });
  fleet = await enrollFleet(h, acme.key, 3, { labels: { ring: "night" } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const hoursAhead = (n: number) => new Date(Date.now() + n * 3600_000);

async function createScheduled(startAt: Date, strategy: Record<string, unknown> = { type: "staged", canary: { count: 1 }, batches: [], autoAdvance: true }, target: Record<string, unknown> = { labelSelector: { ring: "night" } }) {
  const res = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `night-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", target, strategy, startAt: startAt.toISOString() },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const get = async (id: string) => (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;

describe("scheduled start", () => {
  it("is listed as scheduled, shows its time in the rollout status, and nothing reaches a device before it", async () => {
    const at = hoursAhead(1);
    const id = await createScheduled(at);
    const scheduled = await h.api("GET", "/api/v1/deployments?scheduled=true", { key: acme.key });
    expect(scheduled.body.items.map((d: { id: string }) => d.id)).toContain(id);
    expect(scheduled.body.items.find((d: { id: string }) => d.id === id)).toMatchObject({ status: "draft", startAt: at.toISOString() });
    const others = await h.api("GET", "/api/v1/deployments?scheduled=false", { key: acme.key });
    expect(others.body.items.map((d: { id: string }) => d.id)).not.toContain(id);
    expect((await h.api("GET", `/api/v1/deployments/${id}/rollout`, { key: acme.key })).body).toMatchObject({ state: "draft", startAt: at.toISOString() });
    expect(await startScheduledDeployments(h.services, new Date(at.getTime() - 1000))).not.toContain(id);
    expect((await agentHeartbeat(h, fleet[0])).some((d) => d.deploymentId === id)).toBe(false);
    await h.api("DELETE", `/api/v1/deployments/${id}`, { key: acme.key });
  });

  it("starts once its time has come, exactly once when ticks race, and the devices get it", async () => {
    const at = hoursAhead(2);
    const id = await createScheduled(at);
    const later = new Date(at.getTime() + 1000);
    const runs = await Promise.all([startScheduledDeployments(h.services, later), startScheduledDeployments(h.services, later), startScheduledDeployments(h.services, later)]);
    expect(runs.flat().filter((x) => x === id)).toHaveLength(1);
    expect(await get(id)).toMatchObject({ status: "running", rolloutState: "canary", startAt: at.toISOString(), progress: { total: 3 } });
    const canary = await h.services.prisma.deploymentDevice.count({ where: { deploymentId: id, desiredAction: "install" } });
    expect(canary).toBe(1);
    const batches = await h.services.prisma.deploymentBatch.findMany({ where: { deploymentId: id } });
    expect(batches).toHaveLength(2);
    // a later tick changes nothing
    expect(await startScheduledDeployments(h.services, later)).not.toContain(id);
    // the start is in the audit trail once, by the system
    const audit = await h.api("GET", `/api/v1/audit?entityType=deployment&action=deployments.start`, { key: acme.key });
    expect(audit.status, audit.text).toBe(200);
    const entries = audit.body.items.filter((e: { entityId: string }) => e.entityId === id);
    expect(entries).toEqual([expect.objectContaining({ actorType: "system", actorId: null, outcome: "success", message: expect.stringContaining("scheduled start") })]);
    await h.api("POST", `/api/v1/deployments/${id}/stop`, { key: acme.key, body: { force: true } });
  });

  it("can be moved and cancelled until then; a cancelled one never starts", async () => {
    const id = await createScheduled(hoursAhead(3));
    const moved = hoursAhead(4);
    const patch = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: moved.toISOString() } });
    expect(patch.status, patch.text).toBe(200);
    expect(patch.body.startAt).toBe(moved.toISOString());
    // at the old time nothing happens
    expect(await startScheduledDeployments(h.services, hoursAhead(3.5))).not.toContain(id);
    const cancel = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: null } });
    expect(cancel.body.startAt).toBeNull();
    expect(await startScheduledDeployments(h.services, hoursAhead(10))).not.toContain(id);
    expect(await get(id)).toMatchObject({ status: "draft", startAt: null });
  });

  it("an operator may start it early; the schedule then does nothing, and a running deployment cannot be scheduled", async () => {
    const at = hoursAhead(5);
    const id = await createScheduled(at, { type: "all-at-once" });
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);
    expect(await startScheduledDeployments(h.services, hoursAhead(6))).not.toContain(id);
    const moving = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: hoursAhead(7).toISOString() } });
    expect(moving.status).toBe(409);
    await h.api("POST", `/api/v1/deployments/${id}/stop`, { key: acme.key, body: { force: true } });
    const stopped = await h.api("PATCH", `/api/v1/deployments/${id}`, { key: acme.key, body: { startAt: hoursAhead(7).toISOString() } });
    expect(stopped.status).toBe(409);
    expect(stopped.body.message).toContain("only a draft starts at startAt");
  });

  it("a start that is refused (no eligible device) clears the schedule and says why, instead of failing every tick", async () => {
    const at = hoursAhead(8);
    const id = await createScheduled(at, { type: "all-at-once" }, { labelSelector: { ring: "nobody" } });
    expect(await startScheduledDeployments(h.services, hoursAhead(9))).not.toContain(id);
    expect(await get(id)).toMatchObject({ status: "draft", startAt: null, rolloutReason: expect.stringContaining("scheduled start failed: The target matches no eligible device") });
    const audit = await h.api("GET", `/api/v1/audit?entityType=deployment&action=deployments.start&outcome=failure`, { key: acme.key });
    expect(audit.body.items.filter((e: { entityId: string }) => e.entityId === id)).toEqual([
      expect.objectContaining({ actorType: "system", message: expect.stringContaining("scheduled start failed") }),
    ]);
  });
});
