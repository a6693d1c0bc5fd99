// Continuous targets over the agent protocol: devices enrolled after a continuous deployment
// started, and devices whose labels start matching, get it at their next heartbeat; a device
// whose labels stop matching is asked to remove it (onLeave remove) or keeps it (keep); the
// progress, the device table and the device's activity say so; a second continuous deployment
// of the same application over the same devices is a 409 naming the first and a device.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion } from "./support.js";

let h: Harness;
let acme: Tenant;
const apps: Record<string, string> = {};
let original: EnrolledDevice[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Continuous");
  for (const appKey of ["vision-gateway", "edge-agent"]) apps[appKey] = await importVersion(h, acme.org.id, { appKey, version: "1.0.0", parametersYaml: "  {}\n" });
  original = await enrollFleet(h, acme.key, 3, { labels: { site: "oslo", role: "cam" } });
}, 120_000);

afterAll(async () => {
  await h?.close();
});

async function create(appKey: string, body: Record<string, unknown>) {
  return h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: `cont-${Math.random().toString(36).slice(2, 8)}`, applicationId: apps[appKey], version: "1.0.0", profileId: "compose-main", continuous: true, ...body },
  });
}

const installs = async (device: EnrolledDevice, id: string) => (await agentHeartbeat(h, device)).find((d) => d.deploymentId === id);
const relabel = (device: EnrolledDevice, labels: Record<string, string>) => h.api("PATCH", `/api/v1/devices/${device.deviceId}`, { key: acme.key, body: { labels } });
const activity = async (device: EnrolledDevice) => (await h.api("GET", `/api/v1/devices/${device.deviceId}/activity`, { key: acme.key })).body.items as Array<{ type: string; message: string }>;

describe("continuous targets", () => {
  let id: string;
  let late: EnrolledDevice[];

  it("devices enrolled after the start get it at their first heartbeat, marked as joiners", async () => {
    const created = await create("vision-gateway", { target: { labelSelector: { site: "oslo" } } });
    expect(created.status, created.text).toBe(201);
    id = created.body.id;
    expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);
    late = await enrollFleet(h, acme.key, 2, { labels: { site: "oslo" } });
    for (const device of late) expect(await installs(device, id)).toMatchObject({ action: "install", attempt: 1 });
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(d.progress).toMatchObject({ total: 5, pending: 5, joined: 2, left: 0 });
    const joiners = (await h.api("GET", `/api/v1/deployments/${id}/devices?limit=50`, { key: acme.key })).body.items.filter((e: { lateJoiner: boolean }) => e.lateJoiner);
    expect(joiners.map((e: { deviceId: string }) => e.deviceId).sort()).toEqual(late.map((d) => d.deviceId).sort());
    expect(joiners[0].reason).toBe("joined: its labels match the selector now");
    expect((await activity(late[0])).some((e) => e.type === "deployment_joined" && e.message.includes(d.name))).toBe(true);
  });

  it("a device whose labels start matching joins; one whose labels stop matching is asked to remove it", async () => {
    const [outsider] = await enrollFleet(h, acme.key, 1, { labels: { site: "bergen" } });
    expect(await installs(outsider, id)).toBeUndefined();
    expect((await relabel(outsider, { site: "oslo" })).status).toBe(200);
    expect(await installs(outsider, id)).toMatchObject({ action: "install" });

    await agentHeartbeat(h, original[0], [{ deploymentId: id, state: "running" }]);
    expect((await relabel(original[0], { site: "bergen", role: "cam" })).status).toBe(200);
    expect(await installs(original[0], id)).toMatchObject({ action: "remove" });
    const events = await activity(original[0]);
    expect(events.find((e) => e.type === "deployment_left")?.message).toContain("asked to remove it");
    const d = (await h.api("GET", `/api/v1/deployments/${id}`, { key: acme.key })).body;
    expect(d.progress).toMatchObject({ joined: 3, left: 1 });
    await agentHeartbeat(h, original[0], [{ deploymentId: id, state: "removed" }]);
    expect(await installs(original[0], id)).toBeUndefined();
  });

  it("onLeave keep: a leaver keeps it, and the activity says so", async () => {
    const created = await create("edge-agent", { target: { labelSelector: { role: "cam" } }, onLeave: "keep" });
    const keepId = created.body.id;
    expect((await h.api("POST", `/api/v1/deployments/${keepId}/start`, { key: acme.key })).status).toBe(200);
    expect((await relabel(original[1], { site: "oslo" })).status).toBe(200);
    expect(await installs(original[1], keepId)).toMatchObject({ action: "install" });
    expect((await activity(original[1])).find((e) => e.type === "deployment_left")?.message).toContain("keeps it (onLeave keep)");
  });

  it("refuses a second continuous deployment of the application over the same devices, naming the first and a device", async () => {
    const created = await create("vision-gateway", { target: { labelSelector: { role: "cam" } } });
    const res = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key: acme.key });
    expect(res.status, res.text).toBe(409);
    expect(res.body.message).toContain(`(${id})`);
    expect(res.body.message).toMatch(/targets device \S+/);
    expect((await h.api("GET", `/api/v1/deployments/${created.body.id}`, { key: acme.key })).body.status).toBe("draft");
  });

  it("a label change of many devices at once is one statement: every joiner has its entry", async () => {
    const many = await enrollFleet(h, acme.key, 20, { labels: { site: "tromso" } });
    await h.services.prisma.$executeRaw`UPDATE "Device" SET "labels" = "labels" || '{"site":"oslo"}'::jsonb WHERE "labels" @> '{"site":"tromso"}'::jsonb`;
    const entries = await h.services.prisma.deploymentDevice.count({ where: { deploymentId: id, deviceId: { in: many.map((d) => d.deviceId) }, desiredAction: "install", lateJoiner: true } });
    expect(entries).toBe(20);
  });
});
