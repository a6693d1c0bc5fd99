// /api/v1/device-actions over HTTP against the service and enrolled devices speaking the real
// heartbeat: an action is created (stored, audited with its reason), handed to the device in
// the heartbeat's answer until it reports, at most once whatever the heartbeats repeat,
// reported back (running, deferred by a lease, succeeded, failed), expired when the device
// comes back too late, cancelled; a diagnostics bundle uploaded by the device and downloaded;
// permissions (actions:write, actions:disruptive), tenants (404) and bad input (400 naming
// the field, nothing stored).
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { heartbeat, type EnrolledDevice } from "../agent/fleet-support.js";
import { enrollFleet, importVersion } from "../deployments/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let devices: EnrolledDevice[];
let deploymentId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Actions");
  globex = await h.createTenant("Globex Actions");
  const appId = await importVersion(h, acme.org.id, { version: "1.0.0" });
  devices = await enrollFleet(h, acme.key, 3, { labels: { site: "actions" } });
  const created = await h.api("POST", "/api/v1/deployments", {
    key: acme.key,
    body: { name: "web", applicationId: appId, version: "1.0.0", profileId: "compose-main", parameters: { apiToken: "tok-actions" }, target: { deviceIds: [devices[0].deviceId] }, strategy: { type: "all-at-once" } },
  });
  expect(created.status, created.text).toBe(201);
  deploymentId = created.body.id;
  expect((await h.api("POST", `/api/v1/deployments/${deploymentId}/start`, { key: acme.key })).status).toBe(200);
});
afterAll(() => h?.close());

async function create(body: Record<string, unknown>, key = acme.key) {
  return h.api("POST", "/api/v1/device-actions", { key, body });
}

async function beat(device: EnrolledDevice, actions?: unknown[]) {
  const res = await heartbeat(h, device, actions ? { actions } : {});
  expect(res.status, res.text).toBe(200);
  return (res.body.actions ?? []) as Array<{ id: string; kind: string; deploymentId: string | null; applicationId: string | null; expiresAt: string }>;
}

describe("one action's life", () => {
  it("is stored pending, handed over with the heartbeat until reported, and ends with the device's report", async () => {
    const res = await create({ deviceId: devices[1].deviceId, kind: "check-health", reason: "customer reports slowness" });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ deviceId: devices[1].deviceId, kind: "check-health", state: "pending", reason: "customer reports slowness", deliveredAt: null, bundle: null });
    const id = res.body.id;
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "device-actions.create", entityId: id } });
    expect(audit?.message).toBe(`check-health on device ${res.body.deviceName}: customer reports slowness`);

    // a device without actions hears no `actions` field
    expect((await heartbeat(h, devices[2])).body).not.toHaveProperty("actions");

    const first = await beat(devices[1]);
    expect(first).toEqual([{ id, kind: "check-health", deploymentId: null, applicationId: null, expiresAt: res.body.expiresAt }]);
    expect((await h.api("GET", `/api/v1/device-actions/${id}`, { key: acme.key })).body).toMatchObject({ state: "delivered" });
    // handed again until the device reports (its answer may have been lost): the agent keeps the id
    expect((await beat(devices[1])).map((a) => a.id)).toEqual([id]);

    expect(await beat(devices[1], [{ id, state: "running" }])).toEqual([]);
    const done = await beat(devices[1], [{ id, state: "succeeded", message: "2 of 2 containers healthy", result: { projects: 1 } }]);
    expect(done).toEqual([]);
    const got = await h.api("GET", `/api/v1/device-actions/${id}`, { key: acme.key });
    expect(got.body).toMatchObject({ state: "succeeded", message: "2 of 2 containers healthy", result: { projects: 1 } });
    expect(got.body.startedAt).not.toBeNull();
    expect(got.body.finishedAt).not.toBeNull();

    // a final state never changes again: a report repeated after a reconnection changes nothing
    await beat(devices[1], [{ id, state: "failed", message: "late duplicate" }]);
    expect((await h.api("GET", `/api/v1/device-actions/${id}`, { key: acme.key })).body).toMatchObject({ state: "succeeded", message: "2 of 2 containers healthy" });
  });

  it("a device's report about another device's action changes nothing", async () => {
    const { body } = await create({ deviceId: devices[1].deviceId, kind: "renew-certificate" });
    await beat(devices[2], [{ id: body.id, state: "failed", message: "not mine" }]);
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key })).body.state).toBe("pending");
    await beat(devices[1], [{ id: body.id, state: "succeeded" }]);
  });

  it("restart-app names the deployment the device runs, and is handed over with its application", async () => {
    const res = await create({ deviceId: devices[0].deviceId, kind: "restart-app", deploymentId, reason: "memory leak" });
    expect(res.status, res.text).toBe(201);
    const handed = await beat(devices[0]);
    expect(handed).toEqual([expect.objectContaining({ id: res.body.id, kind: "restart-app", deploymentId, applicationId: res.body.applicationId })]);
    expect(res.body.applicationId).toMatch(/^[0-9a-f-]{36}$/);
    await beat(devices[0], [{ id: res.body.id, state: "succeeded" }]);
  });

  it("a lease on the device defers it: the service shows until when and by whom, then it runs", async () => {
    const { body } = await create({ deviceId: devices[0].deviceId, kind: "reboot", reason: "kernel update" });
    await beat(devices[0]);
    const until = new Date(Date.now() + 600_000).toISOString();
    // deferred actions stay in the answer: an operator's cancel must reach the device
    expect((await beat(devices[0], [{ id: body.id, state: "deferred", deferredUntil: until, deferredBy: "forklift-controller", message: "carrying a load" }])).map((a) => a.id)).toEqual([body.id]);
    const deferred = await h.api("GET", `/api/v1/device-actions?state=deferred&deviceId=${devices[0].deviceId}`, { key: acme.key });
    expect(deferred.body.items).toEqual([expect.objectContaining({ id: body.id, state: "deferred", deferredUntil: until, deferredBy: "forklift-controller", message: "carrying a load" })]);
    await beat(devices[0], [{ id: body.id, state: "running", message: "rebooting" }]);
    // running is not deferred again
    await beat(devices[0], [{ id: body.id, state: "deferred", deferredUntil: until }]);
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key })).body.state).toBe("running");
    await beat(devices[0], [{ id: body.id, state: "succeeded", message: "rebooted", result: { bootIdBefore: "a", bootIdAfter: "b" } }]);
  });

  it("cancel: a pending or deferred action, 409 naming the state otherwise", async () => {
    const { body } = await create({ deviceId: devices[2].deviceId, kind: "diagnostics" });
    const cancelled = await h.api("POST", `/api/v1/device-actions/${body.id}/cancel`, { key: acme.key });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body).toMatchObject({ state: "cancelled", message: "cancelled by an operator" });
    expect(await beat(devices[2])).toEqual([]);
    const again = await h.api("POST", `/api/v1/device-actions/${body.id}/cancel`, { key: acme.key });
    expect(again.status).toBe(409);
    expect(again.body.message).toBe("Cannot cancel the action: it is cancelled (allowed while pending or deferred)");
  });

  it("expires for a device that returns after its time, and is never handed to it", async () => {
    const { body } = await create({ deviceId: devices[2].deviceId, kind: "restart-agent", expiresInSeconds: 60 });
    // the device was offline past the expiry
    await h.services.prisma.deviceAction.update({ where: { id: body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect(await beat(devices[2])).toEqual([]);
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key })).body).toMatchObject({ state: "expired", message: "expired before the device ran it", deliveredAt: null });
  });
});

describe("diagnostics bundle", () => {
  it("the device uploads it, an operator downloads it, another device or tenant cannot", async () => {
    const { body } = await create({ deviceId: devices[1].deviceId, kind: "diagnostics" });
    await beat(devices[1]);
    const bundle = gzipSync(Buffer.from("agent state\n".repeat(100)));
    const upload = (device: EnrolledDevice, data: Buffer) => device.token().then((token) => fetch(`${h.url}/api/v1/agent/actions/${body.id}/bundle`, {
      method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/gzip" }, body: data,
    }));
    expect((await upload(devices[2], bundle)).status).toBe(404);
    const notGzip = await upload(devices[1], Buffer.from("plain text"));
    expect(notGzip.status).toBe(400);
    expect(((await notGzip.json()) as { message: string }).message).toContain("body: not a gzip-compressed archive");
    const stored = await upload(devices[1], bundle);
    expect(stored.status).toBe(201);
    const answer = (await stored.json()) as { sizeBytes: number; sha256: string };
    expect(answer.sizeBytes).toBe(bundle.length);
    await beat(devices[1], [{ id: body.id, state: "succeeded", message: "bundle uploaded" }]);

    const got = await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key });
    expect(got.body.bundle).toMatchObject({ sizeBytes: bundle.length, sha256: answer.sha256 });
    const download = await fetch(`${h.url}/api/v1/device-actions/${body.id}/bundle`, { headers: { "x-api-key": acme.key } });
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("application/gzip");
    expect(download.headers.get("content-disposition")).toMatch(/^attachment; filename="diagnostics-.+\.tar\.gz"$/);
    expect(Buffer.from(await download.arrayBuffer()).equals(bundle)).toBe(true);
    expect((await fetch(`${h.url}/api/v1/device-actions/${body.id}/bundle`, { headers: { "x-api-key": globex.key } })).status).toBe(404);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "deviceActions.bundle", entityId: body.id } })).toBe(1);
    // once the action ended, no upload replaces the bundle
    expect((await upload(devices[1], bundle)).status).toBe(409);
    // past its time, no download
    await h.services.prisma.deviceActionBundle.update({ where: { actionId: body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await fetch(`${h.url}/api/v1/device-actions/${body.id}/bundle`, { headers: { "x-api-key": acme.key } })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key })).body.bundle).toBeNull();
  });
});

describe("refusals", () => {
  it("400 naming the field, nothing stored", async () => {
    const before = await h.services.prisma.deviceAction.count();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ deviceId: devices[0].deviceId, kind: "format-disk" }, "kind"],
      [{ deviceId: devices[0].deviceId, kind: "restart-app" }, "deploymentId: restart-app names the deployment"],
      [{ deviceId: devices[1].deviceId, kind: "stop-app", deploymentId }, "deploymentId: the device is not told to run this deployment"],
      [{ deviceId: devices[0].deviceId, kind: "reboot", deploymentId }, "deploymentId: reboot acts on the whole device"],
      [{ deviceId: devices[0].deviceId, kind: "reboot", expiresInSeconds: 10 }, "expiresInSeconds"],
      [{ deviceId: "not-a-uuid", kind: "reboot" }, "deviceId"],
    ];
    for (const [body, message] of cases) {
      const res = await create(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message).toContain(message);
    }
    expect(await h.services.prisma.deviceAction.count()).toBe(before);
  });

  it("another tenant's device or action is a 404", async () => {
    expect((await create({ deviceId: devices[0].deviceId, kind: "reboot" }, globex.key)).status).toBe(404);
    const { body } = await create({ deviceId: devices[0].deviceId, kind: "check-health" });
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/device-actions/${body.id}/cancel`, { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", "/api/v1/device-actions", { key: globex.key })).body.total).toBe(0);
  });

  it("disruptive kinds need actions:disruptive; a read permission implies no action", async () => {
    const writer = await h.createKey(acme.org.id, ["actions:write", "actions:read", "devices:read"]);
    const reboot = await create({ deviceId: devices[0].deviceId, kind: "reboot" }, writer);
    expect(reboot.status).toBe(403);
    expect(reboot.body.message).toContain("actions:disruptive");
    expect((await create({ deviceId: devices[0].deviceId, kind: "diagnostics" }, writer)).status).toBe(201);
    const reader = await h.createKey(acme.org.id, ["actions:read", "devices:read", "deployments:read"]);
    expect((await create({ deviceId: devices[0].deviceId, kind: "check-health" }, reader)).status).toBe(403);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "permission.denied", message: { startsWith: "deviceActions.create: Missing permission actions:disruptive" } } })).toBe(1);
  });

  it("the security suite on every operation", async () => {
    const { body } = await create({ deviceId: devices[0].deviceId, kind: "check-health" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/device-actions", permission: "actions:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/device-actions/${body.id}`, permission: "actions:read", foreignPath: `/api/v1/device-actions/${body.id}` });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/device-actions", body: { deviceId: devices[0].deviceId, kind: "check-health" }, permission: "actions:write" });
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/device-actions/${body.id}/cancel`, permission: "actions:write", foreignPath: `/api/v1/device-actions/${body.id}/cancel` });
  });
});

describe("the expiry sweep", () => {
  it("closes open actions of devices that never came back", async () => {
    const { expireActions } = await import("../../../src/modules/device-actions/service.js");
    const { body } = await create({ deviceId: devices[2].deviceId, kind: "diagnostics" });
    await h.services.prisma.deviceAction.update({ where: { id: body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await expireActions(h.services.prisma)).expired).toBeGreaterThanOrEqual(1);
    expect((await h.api("GET", `/api/v1/device-actions/${body.id}`, { key: acme.key })).body.state).toBe("expired");
  });
});
