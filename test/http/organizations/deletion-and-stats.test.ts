// Deleting organizations (can-delete, delete, bulk delete), empty organizations, the
// aggregate statistics and the per-organization `stats` object.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { createPerson, issuePaths, randomId } from "../users/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Delete");
  globex = await h.createTenant("Globex Delete");
});
afterAll(() => h?.close());

const addDevices = (organizationId: string, statuses: string[]) =>
  h.services.prisma.device.createMany({ data: statuses.map((status, i) => ({ organizationId, name: `d${i}`, status })) });

describe("GET /organizations/{id}/can-delete and DELETE /organizations/{id}", () => {
  it("refuses while devices remain, says why, and deletes once they are gone", async () => {
    const t = await h.createTenant("Has Devices");
    const token = await h.login(t.user.email, t.user.password);
    await addDevices(t.org.id, ["online", "offline"]);

    const check = await h.api("GET", `/api/v1/organizations/${t.org.id}/can-delete`);
    expect(check.status).toBe(200);
    expect(check.body).toEqual({
      id: t.org.id,
      canDelete: false,
      reasons: ["The organization still has 2 devices; delete them first"],
      blockers: { devices: 2, deployments: 0 },
    });
    const refused = await h.api("DELETE", `/api/v1/organizations/${t.org.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain("2 devices");
    expect(await h.services.prisma.organization.count({ where: { id: t.org.id } })).toBe(1);

    await h.services.prisma.device.deleteMany({ where: { organizationId: t.org.id } });
    expect((await h.api("GET", `/api/v1/organizations/${t.org.id}/can-delete`)).body).toMatchObject({ canDelete: true, reasons: [] });
    const deleted = await h.api("DELETE", `/api/v1/organizations/${t.org.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual({ id: t.org.id, deleted: true });

    // The organization and what belongs to it are gone; its people stay, their sessions there end.
    const db = h.services.prisma;
    expect(await db.organization.count({ where: { id: t.org.id } })).toBe(0);
    expect(await db.membership.count({ where: { organizationId: t.org.id } })).toBe(0);
    expect(await db.apiKey.count({ where: { organizationId: t.org.id } })).toBe(0);
    expect(await db.user.count({ where: { id: t.user.id } })).toBe(1);
    expect(await db.session.count({ where: { organizationId: t.org.id, revokedAt: null } })).toBe(0);
    expect((await h.api("GET", "/api/v1/organizations", { key: null, token })).status).toBe(401);
    expect((await h.api("GET", `/api/v1/organizations/${t.org.id}`)).status).toBe(404);
    const audit = await db.auditEntry.findFirst({ where: { action: "organizations.delete", entityId: t.org.id } });
    expect(audit).toMatchObject({ outcome: "success", organizationId: t.org.id });
  });

  it("refuses to delete the organization the caller's own credentials act in", async () => {
    const check = await h.api("GET", `/api/v1/organizations/${h.defaultOrgId}/can-delete`);
    expect(check.body.canDelete).toBe(false);
    expect(check.body.reasons[0]).toContain("Your credentials act in this organization");
    expect((await h.api("DELETE", `/api/v1/organizations/${h.defaultOrgId}`)).status).toBe(409);
  });

  it("answers 404 for unknown ones and across tenants, 403 for non Super Admins", async () => {
    expect((await h.api("DELETE", `/api/v1/organizations/${randomId()}`)).status).toBe(404);
    expect((await h.api("GET", `/api/v1/organizations/${randomId()}/can-delete`)).status).toBe(404);
    const own = await h.api("GET", `/api/v1/organizations/${acme.org.id}/can-delete`, { key: acme.key });
    expect(own.status).toBe(200);
    expect(own.body.canDelete).toBe(false); // acme's key acts in acme
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/organizations/${acme.org.id}/can-delete`, permission: "organizations:read",
      foreignPath: `/api/v1/organizations/${acme.org.id}/can-delete`,
    });
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/organizations/${acme.org.id}`, permission: "platform:admin" });
    expect((await h.api("DELETE", `/api/v1/organizations/${acme.org.id}`, { key: acme.key })).status).toBe(403);
    expect(await h.services.prisma.organization.count({ where: { id: acme.org.id } })).toBe(1);
  });
});

describe("POST /organizations/bulk-delete", () => {
  it("deletes what it may and reports each item", async () => {
    const a = await h.createTenant("Bulk A");
    const b = await h.createTenant("Bulk B");
    const busy = await h.createTenant("Bulk Busy");
    await addDevices(busy.org.id, ["pending"]);
    const ghost = randomId();
    const res = await h.api("POST", "/api/v1/organizations/bulk-delete", { body: { ids: [a.org.id, busy.org.id, ghost, b.org.id, h.defaultOrgId, a.org.id] } });
    expect(res.status).toBe(200);
    expect(res.body.deleted).toBe(2);
    expect(res.body.failed).toBe(3);
    const byId = Object.fromEntries(res.body.results.map((r: { id: string }) => [r.id, r]));
    expect(res.body.results).toHaveLength(5);
    expect(byId[a.org.id]).toEqual({ id: a.org.id, outcome: "deleted" });
    expect(byId[b.org.id].outcome).toBe("deleted");
    expect(byId[busy.org.id]).toMatchObject({ outcome: "refused", message: expect.stringContaining("1 device;") });
    expect(byId[ghost]).toMatchObject({ outcome: "not_found" });
    expect(byId[h.defaultOrgId].outcome).toBe("refused");

    const left = await h.services.prisma.organization.findMany({ where: { id: { in: [a.org.id, b.org.id, busy.org.id] } }, select: { id: true } });
    expect(left.map((o) => o.id)).toEqual([busy.org.id]);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "organizations.delete", entityId: { in: [a.org.id, b.org.id] } } })).toBe(2);
  });

  it("answers 400 for an empty or invalid list and is for Super Admins only", async () => {
    const empty = await h.api("POST", "/api/v1/organizations/bulk-delete", { body: { ids: [] } });
    expect(empty.status).toBe(400);
    expect(issuePaths(empty.body)).toContain("ids");
    const bad = await h.api("POST", "/api/v1/organizations/bulk-delete", { body: { ids: ["x"] } });
    expect(issuePaths(bad.body)).toContain("ids.0");
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/organizations/bulk-delete", body: { ids: [globex.org.id] }, permission: "platform:admin" });
    expect(await h.services.prisma.organization.count({ where: { id: globex.org.id } })).toBe(1);
  });
});

describe("GET /organizations/empty", () => {
  it("lists organizations without members, devices or deployments", async () => {
    const bare = await h.api("POST", "/api/v1/organizations", { body: { name: "Bare Org" } });
    const devicesOnly = await h.api("POST", "/api/v1/organizations", { body: { name: "Devices Only" } });
    await addDevices(devicesOnly.body.id, ["online"]);
    const res = await h.api("GET", "/api/v1/organizations/empty?limit=200");
    expect(res.status).toBe(200);
    const ids = res.body.items.map((o: { id: string }) => o.id);
    expect(ids).toContain(bare.body.id);
    expect(ids).not.toContain(devicesOnly.body.id);
    expect(ids).not.toContain(acme.org.id);
    expect(res.body.total).toBe(ids.length);
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/organizations/empty", permission: "platform:admin" });
  });
});

describe("statistics", () => {
  it("GET /organizations/with-stats computes each organization's stats object", async () => {
    const t = await h.createTenant("Counted");
    await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" } });
    await createPerson(h, { member: { organizationId: t.org.id, role: "operator" }, status: "disabled" });
    await addDevices(t.org.id, ["online", "online", "provisioned", "offline", "pending", "error"]);
    await addDevices(globex.org.id, ["online"]);

    const res = await h.api("GET", "/api/v1/organizations/with-stats?search=Counted");
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(res.body.items[0]).toMatchObject({
      id: t.org.id,
      stats: { userCount: 3, activeUsers: 2, deviceCount: 6, activeDevices: 3, deploymentCount: 0, runningDeployments: 0 },
    });

    // Every item of a page has its own figures.
    const page = await h.api("GET", "/api/v1/organizations/with-stats?limit=200");
    for (const org of page.body.items) {
      const [members, devices] = await Promise.all([
        h.services.prisma.membership.count({ where: { organizationId: org.id } }),
        h.services.prisma.device.count({ where: { organizationId: org.id } }),
      ]);
      expect(org.stats.userCount, org.name).toBe(members);
      expect(org.stats.deviceCount, org.name).toBe(devices);
    }

    const tenantView = await h.api("GET", "/api/v1/organizations/with-stats", { key: t.key });
    expect(tenantView.body.items.map((o: { id: string }) => o.id)).toEqual([t.org.id]);
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/organizations/with-stats", permission: "organizations:read" });
  });

  it("GET /organizations/stats matches the database", async () => {
    const db = h.services.prisma;
    await h.api("POST", `/api/v1/organizations/${globex.org.id}/suspend`, { body: {} });
    const res = await h.api("GET", "/api/v1/organizations/stats");
    expect(res.status).toBe(200);
    const [total, active, suspended, users, devices, empty] = await Promise.all([
      db.organization.count(),
      db.organization.count({ where: { status: "active" } }),
      db.organization.count({ where: { status: "suspended" } }),
      db.user.count(),
      db.device.count(),
      db.organization.count({ where: { memberships: { none: {} }, devices: { none: {} } } }),
    ]);
    expect(res.body).toEqual({
      total,
      byStatus: { active, suspended, pending: 0, disabled: 0 },
      empty,
      createdLast30Days: total,
      userCount: users,
      deviceCount: devices,
      deploymentCount: 0,
    });
    expect(suspended).toBeGreaterThanOrEqual(1);
    await h.api("POST", `/api/v1/organizations/${globex.org.id}/enable`, { body: {} });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/organizations/stats", permission: "platform:admin" });
  });
});
