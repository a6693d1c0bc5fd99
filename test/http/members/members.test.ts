// Organization members: list, get, stats, remove, and spec op 18 (change a member's role).
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { issuePaths, personWithRole, systemRoleId } from "./identity-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

const members = (orgId: string) => `/api/v1/organizations/${orgId}/members`;
const rolePath = (orgId: string, userId: string) => `${members(orgId)}/${userId}/role`;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Members");
  globex = await h.createTenant("Globex Members");
});
afterAll(() => h?.close());

describe("list, get and stats", () => {
  it("lists members newest first with paging, search by name or e-mail, and a role filter", async () => {
    const viewer = await personWithRole(h, acme.org.id, "viewer");
    const operator = await personWithRole(h, acme.org.id, "operator");
    await h.services.prisma.user.update({ where: { id: operator.userId }, data: { name: "Olga Operator" } });

    const all = await h.api("GET", members(acme.org.id), { key: acme.key });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(3);
    expect(all.body.hasMore).toBe(false);
    expect(all.body.items.map((m: { userId: string }) => m.userId)).toEqual([operator.userId, viewer.userId, acme.user.id]);
    expect(all.body.items[2]).toMatchObject({
      userId: acme.user.id,
      organizationId: acme.org.id,
      email: acme.user.email,
      status: "active",
      isSuperAdmin: false,
      role: { name: "owner", system: true },
    });
    expect(all.text).not.toMatch(/passwordHash|scrypt/);

    const page = await h.api("GET", `${members(acme.org.id)}?limit=1&offset=1`, { key: acme.key });
    expect(page.body).toMatchObject({ total: 3, hasMore: true });
    expect(page.body.items[0].userId).toBe(viewer.userId);

    const byName = await h.api("GET", `${members(acme.org.id)}?search=olga`, { key: acme.key });
    expect(byName.body.items.map((m: { userId: string }) => m.userId)).toEqual([operator.userId]);
    const byEmail = await h.api("GET", `${members(acme.org.id)}?search=${encodeURIComponent(viewer.email.toUpperCase())}`, { key: acme.key });
    expect(byEmail.body.items.map((m: { userId: string }) => m.userId)).toEqual([viewer.userId]);
    const byRole = await h.api("GET", `${members(acme.org.id)}?roleId=${await systemRoleId(h, "owner")}`, { key: acme.key });
    expect(byRole.body.items.map((m: { userId: string }) => m.userId)).toEqual([acme.user.id]);
    expect((await h.api("GET", `${members(acme.org.id)}?roleId=nope`, { key: acme.key })).status).toBe(400);
  });

  it("gets one member; unknown and other tenants' members are 404; a Super Admin reads any organization", async () => {
    const res = await h.api("GET", `${members(acme.org.id)}/${acme.user.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: acme.user.id, role: { name: "owner" } });
    expect((await h.api("GET", `${members(acme.org.id)}/00000000-0000-4000-8000-000000000000`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `${members(acme.org.id)}/${globex.user.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `${members(globex.org.id)}/${globex.user.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `${members(globex.org.id)}/${globex.user.id}`, { key: ADMIN_KEY })).status).toBe(200);
    expect((await h.api("GET", `${members("00000000-0000-4000-8000-000000000000")}`, { key: ADMIN_KEY })).status).toBe(404);
  });

  it("counts members by role and by account status", async () => {
    const t = await h.createTenant("Stats Co");
    await personWithRole(h, t.org.id, "viewer");
    const disabled = await personWithRole(h, t.org.id, "viewer");
    await personWithRole(h, t.org.id, "operator");
    await h.services.prisma.user.update({ where: { id: disabled.userId }, data: { status: "disabled" } });
    const res = await h.api("GET", `${members(t.org.id)}/stats`, { key: t.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 4, active: 3, disabled: 1 });
    expect(res.body.byRole).toEqual([
      { roleId: await systemRoleId(h, "viewer"), name: "viewer", system: true, count: 2 },
      { roleId: await systemRoleId(h, "operator"), name: "operator", system: true, count: 1 },
      { roleId: await systemRoleId(h, "owner"), name: "owner", system: true, count: 1 },
    ]);
  });
});

describe("PUT /organizations/{orgId}/members/{userId}/role (op 18)", () => {
  it("takes effect on the next request: a viewer promoted to admin can now write", async () => {
    const viewer = await personWithRole(h, acme.org.id, "viewer");
    const write = () => h.api("POST", "/api/v1/roles", { key: viewer.key, body: { name: `Made by ${viewer.userId}`, permissions: [] } });
    expect((await write()).status).toBe(403);

    const res = await h.api("PUT", rolePath(acme.org.id, viewer.userId), { key: acme.key, body: { roleId: await systemRoleId(h, "admin") } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: viewer.userId, organizationId: acme.org.id, role: { name: "admin", system: true } });
    const row = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: acme.org.id, userId: viewer.userId } } });
    expect(row.roleId).toBe(await systemRoleId(h, "admin"));
    expect((await write()).status).toBe(201);

    // And back down: the next request is refused again.
    expect((await h.api("PUT", rolePath(acme.org.id, viewer.userId), { key: acme.key, body: { roleId: await systemRoleId(h, "viewer") } })).status).toBe(200);
    expect((await write()).status).toBe(403);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "members.updateRole", entityId: viewer.userId }, orderBy: { createdAt: "desc" } });
    expect(audit?.outcome).toBe("success");
  });

  it("assigns the organization's own custom roles, not another organization's", async () => {
    const person = await personWithRole(h, acme.org.id, "viewer");
    const custom = await h.api("POST", "/api/v1/roles", { key: acme.key, body: { name: "Acme custom", permissions: ["devices:read"] } });
    const foreign = await h.api("POST", "/api/v1/roles", { key: globex.key, body: { name: "Globex custom", permissions: ["devices:read"] } });
    const ok = await h.api("PUT", rolePath(acme.org.id, person.userId), { key: acme.key, body: { roleId: custom.body.id } });
    expect(ok.status).toBe(200);
    expect(ok.body.role).toEqual({ id: custom.body.id, name: "Acme custom", system: false });
    const bad = await h.api("PUT", rolePath(acme.org.id, person.userId), { key: acme.key, body: { roleId: foreign.body.id } });
    expect(bad.status).toBe(404);
    expect(bad.body.message).toBe("Role not found");
  });

  it.each([
    [{}, "roleId"],
    [{ roleId: "admin" }, "roleId"],
    [{ roleId: 7 }, "roleId"],
  ])("answers 400 for the body %j", async (body, field) => {
    const person = await personWithRole(h, acme.org.id, "viewer");
    const res = await h.api("PUT", rolePath(acme.org.id, person.userId), { key: acme.key, body });
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain(field);
  });

  it("answers 404 for an unknown member or role, and for another tenant's member", async () => {
    const admin = await systemRoleId(h, "admin");
    const person = await personWithRole(h, acme.org.id, "viewer");
    const noMember = await h.api("PUT", rolePath(acme.org.id, "00000000-0000-4000-8000-000000000000"), { key: acme.key, body: { roleId: admin } });
    expect(noMember.status).toBe(404);
    expect(noMember.body.message).toBe("Member not found");
    const noRole = await h.api("PUT", rolePath(acme.org.id, person.userId), { key: acme.key, body: { roleId: "00000000-0000-4000-8000-000000000000" } });
    expect(noRole.status).toBe(404);
    expect(noRole.body.message).toBe("Role not found");
    expect((await h.api("PUT", rolePath(acme.org.id, globex.user.id), { key: acme.key, body: { roleId: admin } })).status).toBe(404);
    expect((await h.api("PUT", rolePath(globex.org.id, globex.user.id), { key: acme.key, body: { roleId: admin } })).status).toBe(404);
  });

  it("never demotes the last owner (409), but does once there is another", async () => {
    const t = await h.createTenant("Lonely Owner");
    const viewer = await systemRoleId(h, "viewer");
    const res = await h.api("PUT", rolePath(t.org.id, t.user.id), { key: t.key, body: { roleId: viewer } });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("last owner");
    const second = await personWithRole(h, t.org.id, "viewer");
    expect((await h.api("PUT", rolePath(t.org.id, second.userId), { key: t.key, body: { roleId: await systemRoleId(h, "owner") } })).status).toBe(200);
    expect((await h.api("PUT", rolePath(t.org.id, t.user.id), { key: t.key, body: { roleId: viewer } })).status).toBe(200);
  });

  it("an admin cannot make an owner, nor change an owner (403)", async () => {
    const admin = await personWithRole(h, acme.org.id, "admin");
    const viewer = await personWithRole(h, acme.org.id, "viewer");
    const promote = await h.api("PUT", rolePath(acme.org.id, viewer.userId), { key: admin.key, body: { roleId: await systemRoleId(h, "owner") } });
    expect(promote.status).toBe(403);
    expect(promote.body.message).toMatch(/^You may not assign a role granting every permission \(\*\): it includes [a-z-]+:[a-z-]+, which you do not hold$/);
    const self = await h.api("PUT", rolePath(acme.org.id, admin.userId), { key: admin.key, body: { roleId: await systemRoleId(h, "owner") } });
    expect(self.status).toBe(403);
    const demote = await h.api("PUT", rolePath(acme.org.id, acme.user.id), { key: admin.key, body: { roleId: await systemRoleId(h, "viewer") } });
    expect(demote.status).toBe(403);
    expect((await h.api("PUT", rolePath(acme.org.id, viewer.userId), { key: admin.key, body: { roleId: await systemRoleId(h, "operator") } })).status).toBe(200);
  });
});

describe("DELETE /organizations/{orgId}/members/{userId}", () => {
  it("removes the membership and revokes the member's keys there", async () => {
    const person = await personWithRole(h, acme.org.id, "operator");
    const readOrg = () => h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key: person.key });
    expect((await readOrg()).status).toBe(200);
    const res = await h.api("DELETE", `${members(acme.org.id)}/${person.userId}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: person.userId, organizationId: acme.org.id, removed: true, revokedApiKeys: 1 });
    expect(await h.services.prisma.membership.findUnique({ where: { organizationId_userId: { organizationId: acme.org.id, userId: person.userId } } })).toBeNull();
    expect(await h.services.prisma.user.findUnique({ where: { id: person.userId } })).not.toBeNull();
    expect((await readOrg()).status).toBe(401);
    expect((await h.api("DELETE", `${members(acme.org.id)}/${person.userId}`, { key: acme.key })).status).toBe(404);
  });

  it("never removes the last owner (409)", async () => {
    const t = await h.createTenant("Keep An Owner");
    const res = await h.api("DELETE", `${members(t.org.id)}/${t.user.id}`, { key: t.key });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("last owner");
    expect(await h.services.prisma.membership.count({ where: { organizationId: t.org.id } })).toBe(1);
  });

  it("an admin cannot remove an owner (403); 404 across tenants", async () => {
    const admin = await personWithRole(h, acme.org.id, "admin");
    expect((await h.api("DELETE", `${members(acme.org.id)}/${acme.user.id}`, { key: admin.key })).status).toBe(403);
    expect((await h.api("DELETE", `${members(globex.org.id)}/${globex.user.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("DELETE", `${members(acme.org.id)}/${globex.user.id}`, { key: acme.key })).status).toBe(404);
    expect(await h.services.prisma.membership.count({ where: { organizationId: globex.org.id, userId: globex.user.id } })).toBe(1);
  });
});

describe("security of every procedure", () => {
  it("401 / 403 / cross-tenant 404", async () => {
    const person = await personWithRole(h, acme.org.id, "viewer");
    const item = `${members(acme.org.id)}/${person.userId}`;
    const roleId = await systemRoleId(h, "operator");
    await expectSecured(h, acme, globex, { method: "GET", path: members(acme.org.id), permission: "members:read", foreignPath: members(acme.org.id) });
    await expectSecured(h, acme, globex, { method: "GET", path: `${members(acme.org.id)}/stats`, permission: "members:read", foreignPath: `${members(acme.org.id)}/stats` });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "members:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "PUT", path: `${item}/role`, body: { roleId }, permission: "members:write", foreignPath: `${item}/role` });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "members:write", foreignPath: item });
    const row = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: acme.org.id, userId: person.userId } } });
    expect(row.roleId).toBe(await systemRoleId(h, "viewer"));
  });

  it("works through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const stats = await client.members.stats.query({ orgId: acme.org.id });
    expect(stats.total).toBeGreaterThan(0);
    const me = await client.members.get.query({ orgId: acme.org.id, userId: acme.user.id });
    expect(me.role.name).toBe("owner");
  });
});
