// /api/v1/devices: list (filters, sorting, paging), get, update, delete, activity log,
// release claim, add/remove label, and the security suite on every operation.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, insertDevices } from "../agent/fleet-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let ids: string[];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Devices");
  globex = await h.createTenant("Globex Devices");
  const t0 = Date.now();
  ids = await insertDevices(h, acme.org.id, [
    { name: "alpha", status: "online", labels: { site: "berlin", tier: "core" }, lastSeenAt: new Date(t0 - 1000) },
    { name: "bravo", status: "offline", labels: { site: "berlin", tier: "edge" }, lastSeenAt: new Date(t0 - 500_000) },
    { name: "charlie 50%", status: "error", labels: { site: "paris", tier: "edge" }, lastSeenAt: new Date(t0 - 2000) },
    { name: "delta", status: "pending", labels: {}, lastSeenAt: null, reportedDeviceId: null },
    { name: "echo", status: "provisioned", labels: { site: "berlin" }, lastSeenAt: null },
  ]);
  // Distinct creation times so that the default order (newest first) is defined.
  for (const [i, id] of ids.entries()) {
    await h.services.prisma.device.update({ where: { id }, data: { createdAt: new Date(t0 - (ids.length - i) * 1000) } });
  }
  await insertDevices(h, globex.org.id, [{ name: "alpha", labels: { site: "berlin" } }]);
});
afterAll(() => h?.close());

const names = (res: { body: { items: { name: string }[] } }) => res.body.items.map((d) => d.name);

describe("list", () => {
  it("lists the organization's devices only, newest first, with paging", async () => {
    const res = await h.api("GET", "/api/v1/devices", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(5);
    expect(names(res)).toEqual(["echo", "delta", "charlie 50%", "bravo", "alpha"]);
    const page = await h.api("GET", "/api/v1/devices?limit=2&offset=2", { key: acme.key });
    expect(page.body).toMatchObject({ total: 5, hasMore: true });
    expect(names(page)).toEqual(["charlie 50%", "bravo"]);
    const last = await h.api("GET", "/api/v1/devices?limit=2&offset=4", { key: acme.key });
    expect(last.body).toMatchObject({ total: 5, hasMore: false });
    expect((await h.api("GET", "/api/v1/devices?limit=201", { key: acme.key })).status).toBe(400);
  });

  it("filters by status (repeatable), label selector and name search", async () => {
    expect(names(await h.api("GET", "/api/v1/devices?status=online", { key: acme.key }))).toEqual(["alpha"]);
    expect(names(await h.api("GET", "/api/v1/devices?status=online&status=error&sort=name&order=asc", { key: acme.key }))).toEqual(["alpha", "charlie 50%"]);
    expect(names(await h.api("GET", "/api/v1/devices?labels=site=berlin&sort=name&order=asc", { key: acme.key }))).toEqual(["alpha", "bravo", "echo"]);
    expect(names(await h.api("GET", `/api/v1/devices?labels=${encodeURIComponent("site=berlin,tier=edge")}`, { key: acme.key }))).toEqual(["bravo"]);
    expect(names(await h.api("GET", "/api/v1/devices?labels=site=nowhere", { key: acme.key }))).toEqual([]);
    expect(names(await h.api("GET", "/api/v1/devices?search=ALPH", { key: acme.key }))).toEqual(["alpha"]);
    // LIKE wildcards in the search are literal.
    expect(names(await h.api("GET", `/api/v1/devices?search=${encodeURIComponent("50%")}`, { key: acme.key }))).toEqual(["charlie 50%"]);
    expect(names(await h.api("GET", `/api/v1/devices?search=${encodeURIComponent("%")}`, { key: acme.key }))).toEqual(["charlie 50%"]);
    const combined = await h.api("GET", "/api/v1/devices?status=offline&status=online&labels=tier=edge", { key: acme.key });
    expect(names(combined)).toEqual(["bravo"]);
  });

  it("sorts by name, status and lastSeenAt (never-seen devices last)", async () => {
    expect(names(await h.api("GET", "/api/v1/devices?sort=name&order=desc", { key: acme.key }))).toEqual(["echo", "delta", "charlie 50%", "bravo", "alpha"]);
    expect(names(await h.api("GET", "/api/v1/devices?sort=lastSeenAt&order=desc", { key: acme.key })).slice(0, 3)).toEqual(["alpha", "charlie 50%", "bravo"]);
    expect(names(await h.api("GET", "/api/v1/devices?sort=lastSeenAt&order=asc", { key: acme.key })).slice(0, 3)).toEqual(["bravo", "charlie 50%", "alpha"]);
    const byStatus = await h.api("GET", "/api/v1/devices?sort=status&order=asc", { key: acme.key });
    expect(byStatus.body.items.map((d: { status: string }) => d.status)).toEqual(["error", "offline", "online", "pending", "provisioned"]);
  });

  it("refuses bad filters with 400", async () => {
    for (const q of ["status=sleeping", "labels=site", "labels=bad%20key=x", "labels=a=1,a=2", "sort=password", "order=up"]) {
      const res = await h.api("GET", `/api/v1/devices?${q}`, { key: acme.key });
      expect(res.status, q).toBe(400);
      expect(res.body.code).toBe("BAD_REQUEST");
    }
  });
});

describe("get, update, labels", () => {
  it("gets a device; another tenant's or an unknown one is 404", async () => {
    const res = await h.api("GET", `/api/v1/devices/${ids[0]}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: ids[0], organizationId: acme.org.id, name: "alpha", status: "online", labels: { site: "berlin", tier: "core" } });
    expect((await h.api("GET", `/api/v1/devices/${ids[0]}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/devices/00000000-0000-4000-8000-000000000000`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/devices/not-a-uuid`, { key: acme.key })).status).toBe(400);
  });

  it("answers the stored instants whatever the server's time zone (the reads run on the driver)", async () => {
    const stored = await h.services.prisma.device.findUniqueOrThrow({ where: { id: ids[0] } });
    const previous = process.env.TZ;
    process.env.TZ = "America/New_York"; // a bare `timestamp` read in local time would be 5 h off
    try {
      const one = await h.api("GET", `/api/v1/devices/${ids[0]}`, { key: acme.key });
      const listed = (await h.api("GET", "/api/v1/devices?search=alpha", { key: acme.key })).body.items[0];
      for (const device of [one.body, listed]) {
        expect(device.lastSeenAt).toBe(stored.lastSeenAt!.toISOString());
        expect(device.createdAt).toBe(stored.createdAt.toISOString());
        expect(device.updatedAt).toBe(stored.updatedAt.toISOString());
      }
    } finally {
      if (previous === undefined) delete process.env.TZ;
      else process.env.TZ = previous;
    }
  });

  it("renames and replaces labels, recording both in the activity log", async () => {
    const [id] = await insertDevices(h, acme.org.id, [{ name: "foxtrot", labels: { site: "rome", old: "x" } }]);
    const res = await h.api("PATCH", `/api/v1/devices/${id}`, { key: acme.key, body: { name: "Foxtrot 2", labels: { site: "rome", rack: "r1" } } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Foxtrot 2", labels: { site: "rome", rack: "r1" } });
    const activity = await h.api("GET", `/api/v1/devices/${id}/activity`, { key: acme.key });
    expect(activity.body.total).toBe(2);
    const byType = Object.fromEntries(activity.body.items.map((e: { type: string }) => [e.type, e]));
    expect(byType.updated).toMatchObject({ actorType: "api_key", data: { name: { before: "foxtrot", after: "Foxtrot 2" } } });
    expect(byType.labels_changed.data).toMatchObject({ added: { rack: "r1" }, removed: ["old"] });
    // Nothing changed: no new entry.
    await h.api("PATCH", `/api/v1/devices/${id}`, { key: acme.key, body: { name: "Foxtrot 2" } });
    expect((await h.api("GET", `/api/v1/devices/${id}/activity`, { key: acme.key })).body.total).toBe(2);
    // The audit entry is written with the change.
    expect(await h.services.prisma.auditEntry.count({ where: { entityType: "device", entityId: id, action: "devices.update" } })).toBe(2);

    for (const body of [{ name: "" }, { labels: { "a b": "x" } }, { labels: { k: "a,b" } }, { labels: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"])) }]) {
      expect((await h.api("PATCH", `/api/v1/devices/${id}`, { key: acme.key, body })).status, JSON.stringify(body).slice(0, 60)).toBe(400);
    }
    expect((await h.api("PATCH", `/api/v1/devices/${id}`, { key: globex.key, body: { name: "stolen" } })).status).toBe(404);
  });

  it("adds and removes single labels", async () => {
    const [id] = await insertDevices(h, acme.org.id, [{ name: "golf", labels: { site: "oslo" } }]);
    const added = await h.api("POST", `/api/v1/devices/${id}/labels`, { key: acme.key, body: { key: "env/stage", value: "prod" } });
    expect(added.status).toBe(200);
    expect(added.body.labels).toEqual({ site: "oslo", "env/stage": "prod" });
    const changed = await h.api("POST", `/api/v1/devices/${id}/labels`, { key: acme.key, body: { key: "site", value: "bergen" } });
    expect(changed.body.labels).toEqual({ site: "bergen", "env/stage": "prod" });
    const removed = await h.api("DELETE", `/api/v1/devices/${id}/labels/site`, { key: acme.key });
    expect(removed.status).toBe(200);
    expect(removed.body.labels).toEqual({ "env/stage": "prod" });
    const slashKey = await h.api("DELETE", `/api/v1/devices/${id}/labels/${encodeURIComponent("env/stage")}`, { key: acme.key });
    expect(slashKey.status, slashKey.text).toBe(200);
    expect(slashKey.body.labels).toEqual({});
    expect((await h.api("DELETE", `/api/v1/devices/${id}/labels/site`, { key: acme.key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/devices/${id}/labels`, { key: acme.key, body: { key: "bad key", value: "x" } })).status).toBe(400);
    const activity = await h.api("GET", `/api/v1/devices/${id}/activity?type=labels_changed`, { key: acme.key });
    expect(activity.body.total).toBe(4);
  });
});

describe("claims, deletion and activity", () => {
  it("releases a claim once: 409 when already released or when there is none", async () => {
    const [id] = await insertDevices(h, acme.org.id, [{ name: "hotel", reportedDeviceId: "SN-H" }]);
    const res = await h.api("POST", `/api/v1/devices/${id}/release-claim`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ claimActive: false, reportedDeviceId: "SN-H" });
    const again = await h.api("POST", `/api/v1/devices/${id}/release-claim`, { key: acme.key });
    expect(again.status).toBe(409);
    expect(again.body.message).toMatch(/already released/);
    expect((await h.api("POST", `/api/v1/devices/${ids[3]}/release-claim`, { key: acme.key })).status).toBe(409);
    const activity = await h.api("GET", `/api/v1/devices/${id}/activity?type=claim_released`, { key: acme.key });
    expect(activity.body.items[0]).toMatchObject({ type: "claim_released", data: { reportedDeviceId: "SN-H" } });
  });

  it("deletes a device, revoking its certificates (they stay on record for the revocation list)", async () => {
    await ensureCa(h, acme.key);
    const t = await createEnrollmentToken(h, acme.key);
    const d = await enroll(h, t.token);
    expect((await heartbeat(h, d)).status).toBe(200);
    expect((await h.api("DELETE", `/api/v1/devices/${d.deviceId}`, { key: globex.key })).status).toBe(404);
    const res = await h.api("DELETE", `/api/v1/devices/${d.deviceId}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: d.deviceId, deleted: true, revokedCertificates: 1 });
    expect(await h.services.prisma.device.findUnique({ where: { id: d.deviceId } })).toBeNull();
    const cert = await h.services.prisma.deviceCertificate.findUniqueOrThrow({ where: { id: d.certificateId } });
    expect(cert).toMatchObject({ revoked: true, revokeReason: "Cessation of operation" });
    expect((await h.api("GET", `/api/v1/devices/${d.deviceId}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("DELETE", `/api/v1/devices/${d.deviceId}`, { key: acme.key })).status).toBe(404);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "devices.delete", entityId: d.deviceId } })).toBe(1);
  });

  it("pages the activity log newest first and filters it by type", async () => {
    const [id] = await insertDevices(h, acme.org.id, [{ name: "india" }]);
    for (let i = 0; i < 5; i++) await h.api("POST", `/api/v1/devices/${id}/labels`, { key: acme.key, body: { key: "n", value: String(i) } });
    const page = await h.api("GET", `/api/v1/devices/${id}/activity?limit=2`, { key: acme.key });
    expect(page.body).toMatchObject({ total: 5, hasMore: true });
    expect(page.body.items[0].data.after).toEqual({ n: "4" });
    expect(page.body.items[1].data.after).toEqual({ n: "3" });
    expect((await h.api("GET", `/api/v1/devices/${id}/activity?type=enrolled`, { key: acme.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/devices/${id}/activity?type=nonsense`, { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", `/api/v1/devices/${id}/activity`, { key: globex.key })).status).toBe(404);
  });
});

describe("security", () => {
  it("secures every device operation: 401 without credentials, 403 without permission, 404 across tenants", async () => {
    const [a, b, c, d] = await insertDevices(h, acme.org.id, [{ name: "sec-a" }, { name: "sec-b" }, { name: "sec-c", labels: { x: "1" } }, { name: "sec-d" }]);
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/devices", permission: "devices:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/devices/${a}`, permission: "devices:read", foreignPath: `/api/v1/devices/${a}` });
    await expectSecured(h, acme, globex, { method: "PATCH", path: `/api/v1/devices/${a}`, body: { name: "renamed" }, permission: "devices:write", foreignPath: `/api/v1/devices/${a}` });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/devices/${a}/activity`, permission: "devices:read", foreignPath: `/api/v1/devices/${a}/activity` });
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/devices/${b}/release-claim`, permission: "devices:write", foreignPath: `/api/v1/devices/${b}/release-claim` });
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/devices/${a}/labels`, body: { key: "k", value: "v" }, permission: "devices:write", foreignPath: `/api/v1/devices/${a}/labels` });
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/devices/${c}/labels/x`, permission: "devices:write", foreignPath: `/api/v1/devices/${c}/labels/x` });
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/devices/${d}`, permission: "devices:write", foreignPath: `/api/v1/devices/${d}` });
    // The refusals changed nothing.
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: a } })).name).toBe("sec-a");
    expect(await h.services.prisma.device.findUnique({ where: { id: d } })).not.toBeNull();
  });

  it("reads with the viewer role but does not write", async () => {
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("GET", "/api/v1/devices", { key: viewer })).status).toBe(200);
    expect((await h.api("PATCH", `/api/v1/devices/${ids[0]}`, { key: viewer, body: { name: "x" } })).status).toBe(403);
  });

  it("is reachable through the tRPC client", async () => {
    const { createTRPCClient, httpBatchLink } = await import("@trpc/client");
    const client = createTRPCClient<import("../../../src/trpc/router.js").AppRouter>({
      links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })],
    });
    const page = await client.devices.list.query({ status: ["online"], sort: "name", order: "asc" });
    expect(page.items.map((d) => d.name)).toContain("alpha");
  });
});
