// Tenant switching over HTTP: a switch changes what the caller sees and where their changes
// land (audited with the real user and the tenant), ends on return or on expiry by itself;
// context, accessible tenants, history, members, and op 17 with a bearer token.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let initech: Tenant;
let adminId: string;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Switch Acme");
  globex = await h.createTenant("Switch Globex");
  initech = await h.createTenant("Switch Initech");
  // acme's owner is also a viewer in globex (joined later, so acme stays their home)
  const viewer = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "viewer" } });
  await h.services.prisma.membership.create({ data: { organizationId: globex.org.id, userId: acme.user.id, roleId: viewer.id } });
  adminId = (await h.services.prisma.user.findUniqueOrThrow({ where: { email: ADMIN_EMAIL } })).id;
});
afterAll(() => h?.close());

const slug = (t: Tenant) => `/api/v1/organizations/by-slug/${t.org.slug}`;

describe("a member of two organizations", () => {
  it("switches, sees the other organization instead of their own, and returns", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    expect((await h.api("GET", slug(acme), { key: null, token })).status).toBe(200);
    expect((await h.api("GET", slug(globex), { key: null, token })).status).toBe(404);

    const sw = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id, reason: "check the viewer role" } });
    expect(sw.status).toBe(200);
    expect(sw.body).toEqual({
      id: expect.any(String),
      userId: acme.user.id,
      fromOrgId: acme.org.id,
      fromOrgName: acme.org.name,
      toOrgId: globex.org.id,
      toOrgName: globex.org.name,
      duration: "PT60M",
      reason: "check the viewer role",
      switchedAt: expect.any(String),
      expiresAt: expect.any(String),
      isActive: true,
    });
    expect(new Date(sw.body.expiresAt).getTime() - new Date(sw.body.switchedAt).getTime()).toBe(60 * 60_000);

    // The same token now acts in globex, with the viewer role there.
    expect((await h.api("GET", slug(globex), { key: null, token })).status).toBe(200);
    expect((await h.api("GET", slug(acme), { key: null, token })).status).toBe(404);
    const ctx = await h.api("GET", "/api/v1/tenant/context", { key: null, token });
    expect(ctx.body).toMatchObject({
      credential: "session",
      userId: acme.user.id,
      organization: { id: globex.org.id },
      role: "viewer",
      homeOrganization: { id: acme.org.id },
      activeSwitch: { id: sw.body.id, isActive: true },
      canSwitch: true,
    });
    expect(ctx.body.permissions).not.toContain("api-keys:write");
    const members = await h.api("GET", "/api/v1/tenant/members", { key: null, token });
    expect(members.body.organizationId).toBe(globex.org.id);
    expect(members.body.items.map((m: { userId: string }) => m.userId).sort()).toEqual([globex.user.id, acme.user.id].sort());

    const back = await h.api("POST", "/api/v1/tenant/return", { key: null, token });
    expect(back.status).toBe(200);
    expect(back.body).toMatchObject({ id: sw.body.id, isActive: false, returnedAt: expect.any(String) });
    expect((await h.api("GET", slug(acme), { key: null, token })).status).toBe(200);
    expect((await h.api("GET", slug(globex), { key: null, token })).status).toBe(404);
    expect((await h.api("POST", "/api/v1/tenant/return", { key: null, token })).status).toBe(409);

    // Both moves are in the tenant's audit trail, by the real user.
    const entries = await h.services.prisma.auditEntry.findMany({ where: { entityId: sw.body.id }, orderBy: { createdAt: "asc" } });
    expect(entries.map((e) => [e.action, e.userId, e.organizationId])).toEqual([
      ["tenant.switch", acme.user.id, globex.org.id],
      ["tenant.return", acme.user.id, globex.org.id],
    ]);
    expect(entries[0].message).toContain("check the viewer role");
  });

  it("cannot enter an organization they do not belong to (404), nor a suspended one", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    expect((await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: initech.org.id } })).status).toBe(404);
    expect((await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: acme.org.id } })).status).toBe(409);
    await h.services.prisma.organization.update({ where: { id: globex.org.id }, data: { status: "suspended" } });
    try {
      const res = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id } });
      expect(res.status).toBe(403);
      expect(res.body.message).toContain("suspended");
    } finally {
      await h.services.prisma.organization.update({ where: { id: globex.org.id }, data: { status: "active" } });
    }
  });

  it("lists the organizations they may act in", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    const res = await h.api("GET", "/api/v1/tenant/accessible", { key: null, token });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(2);
    const byId = Object.fromEntries(res.body.items.map((t: { id: string }) => [t.id, t]));
    expect(byId[acme.org.id]).toMatchObject({ role: "owner", isCurrent: true, isHome: true });
    expect(byId[globex.org.id]).toMatchObject({ role: "viewer", isCurrent: false, isHome: false });
    // an API key is bound to its organization
    const keyView = await h.api("GET", "/api/v1/tenant/accessible", { key: acme.key });
    expect(keyView.body.items.map((t: { id: string }) => t.id)).toEqual([acme.org.id]);
  });
});

describe("a Super Admin", () => {
  it("switches into any organization; changes land there, audited with the real user and the tenant", async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const sw = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: initech.org.id, reason: "support ticket 42", durationMinutes: 30 } });
    expect(sw.status).toBe(200);
    expect(sw.body).toMatchObject({ userId: adminId, toOrgId: initech.org.id, fromOrgId: h.defaultOrgId, duration: "PT30M" });

    const members = await h.api("GET", "/api/v1/tenant/members", { key: null, token });
    expect(members.body.items.map((m: { userId: string }) => m.userId)).toEqual([initech.user.id]);

    const created = await h.api("POST", `/api/v1/organizations/${initech.org.id}/api-keys`, { key: null, token, body: { name: "support key", permissions: ["devices:read"] } });
    expect(created.status).toBe(201);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { entityId: created.body.id } });
    expect(entry).toMatchObject({ actorType: "user", actorId: adminId, userId: adminId, organizationId: initech.org.id });
    expect(entry.message).toContain(`tenant switch ${sw.body.id}`);

    // The tenant's own administrators see it in their audit log.
    const seen = await h.api("GET", `/api/v1/audit/user/${adminId}`, { key: initech.key });
    expect(seen.status).toBe(200);
    expect(seen.body.items.map((e: { action: string }) => e.action)).toEqual(expect.arrayContaining(["tenant.switch"]));

    await h.api("POST", "/api/v1/tenant/return", { key: null, token });
  });

  it("replaces a switch by a new one and still returns home", async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const first = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: acme.org.id } });
    const second = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id } });
    expect(second.status).toBe(200);
    expect(second.body.fromOrgId).toBe(h.defaultOrgId);
    const history = await h.api("GET", "/api/v1/tenant/switches/history?limit=2", { key: null, token });
    expect(history.body.items.map((s: { id: string; isActive: boolean }) => [s.id, s.isActive])).toEqual([[second.body.id, true], [first.body.id, false]]);
    // switching "into" home is a return, not a switch
    expect((await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: h.defaultOrgId } })).status).toBe(409);
    await h.api("POST", "/api/v1/tenant/return", { key: null, token });
    const ctx = await h.api("GET", "/api/v1/tenant/context", { key: null, token });
    expect(ctx.body.organization.id).toBe(h.defaultOrgId);
    expect(ctx.body.activeSwitch).toBeNull();
  });

  it("lists every active switch (op 17) with a bearer token, paged", async () => {
    const adminToken = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const userToken = await h.login(acme.user.email, acme.user.password);
    const a = await h.api("POST", "/api/v1/tenant/switch", { key: null, token: adminToken, body: { organizationId: acme.org.id } });
    const b = await h.api("POST", "/api/v1/tenant/switch", { key: null, token: userToken, body: { organizationId: globex.org.id } });
    const all = await h.api("GET", "/api/v1/tenant/switches/active", { key: null, token: adminToken });
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(2);
    expect(all.body.hasMore).toBe(false);
    expect(all.body.items.map((s: { id: string }) => s.id)).toEqual([b.body.id, a.body.id]);
    expect(all.body.items.every((s: { isActive: boolean }) => s.isActive)).toBe(true);
    const page = await h.api("GET", "/api/v1/tenant/switches/active?limit=1&offset=1", { key: null, token: adminToken });
    expect(page.body).toMatchObject({ total: 2, hasMore: false, items: [{ id: a.body.id }] });
    expect((await h.api("GET", "/api/v1/tenant/switches/active?limit=1", { key: null, token: adminToken })).body.hasMore).toBe(true);
    // Not for anyone but a Super Admin
    expect((await h.api("GET", "/api/v1/tenant/switches/active", { key: null, token: userToken })).status).toBe(403);
    // A switch whose session ended is no longer active.
    await h.api("POST", "/api/v1/auth/logout", { key: null, token: userToken });
    const after = await h.api("GET", "/api/v1/tenant/switches/active", { key: ADMIN_KEY });
    expect(after.body.items.map((s: { id: string }) => s.id)).toEqual([a.body.id]);
    await h.api("POST", "/api/v1/tenant/return", { key: null, token: adminToken });
    expect((await h.api("GET", "/api/v1/tenant/switches/active", { key: ADMIN_KEY })).body.total).toBe(0);
  });
});

describe("expiry", () => {
  it("ends the switch by itself once expiresAt has passed", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    const sw = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id, durationMinutes: 1 } });
    expect(sw.body.duration).toBe("PT1M");
    expect((await h.api("GET", slug(globex), { key: null, token })).status).toBe(200);
    // One minute later (moved in the database rather than waited for):
    await h.services.prisma.tenantSwitch.update({ where: { id: sw.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await h.api("GET", slug(globex), { key: null, token })).status).toBe(404);
    expect((await h.api("GET", slug(acme), { key: null, token })).status).toBe(200);
    const history = await h.api("GET", "/api/v1/tenant/switches/history?limit=1", { key: null, token });
    expect(history.body.items[0]).toMatchObject({ id: sw.body.id, isActive: false });
    expect(history.body.items[0].returnedAt).toBeUndefined();
    const stored = await h.services.prisma.tenantSwitch.findUniqueOrThrow({ where: { id: sw.body.id } });
    expect(stored.endReason).toBe("expired");
    const expired = await h.services.prisma.auditEntry.findFirst({ where: { action: "tenant.expire", entityId: sw.body.id } });
    expect(expired).toMatchObject({ actorType: "system", userId: acme.user.id, organizationId: globex.org.id });
    expect((await h.api("POST", "/api/v1/tenant/return", { key: null, token })).status).toBe(409);
  });

  it("ends the switch when the target can no longer be used (membership removed)", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id } });
    const membership = await h.services.prisma.membership.delete({ where: { organizationId_userId: { organizationId: globex.org.id, userId: acme.user.id } } });
    try {
      const res = await h.api("GET", slug(acme), { key: null, token });
      expect(res.status).toBe(200);
    } finally {
      await h.services.prisma.membership.create({ data: { organizationId: globex.org.id, userId: acme.user.id, roleId: membership.roleId } });
    }
  });
});

describe("input and credentials", () => {
  it("bounds the duration and validates the body", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    for (const body of [{ organizationId: globex.org.id, durationMinutes: 481 }, { organizationId: globex.org.id, durationMinutes: 0 }, { organizationId: "nope" }, {}]) {
      expect((await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body })).status, JSON.stringify(body)).toBe(400);
    }
    const max = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: globex.org.id, durationMinutes: 480 } });
    expect(max.body.duration).toBe("PT480M");
    await h.api("POST", "/api/v1/tenant/return", { key: null, token });
  });

  it("refuses switching with an API key (403): keys are bound to their organization", async () => {
    const res = await h.api("POST", "/api/v1/tenant/switch", { key: ADMIN_KEY, body: { organizationId: acme.org.id } });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain("API keys");
    expect((await h.api("POST", "/api/v1/tenant/return", { key: ADMIN_KEY })).status).toBe(403);
    const ctx = await h.api("GET", "/api/v1/tenant/context", { key: acme.key });
    expect(ctx.body).toMatchObject({ credential: "api_key", canSwitch: false, activeSwitch: null, organization: { id: acme.org.id } });
  });

  it("secures every tenant procedure", async () => {
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/tenant/members", permission: "members:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/tenant/context" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/tenant/accessible" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/tenant/switches/history" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/tenant/switches/active", permission: "platform:admin" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/tenant/switch", body: { organizationId: globex.org.id } });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/tenant/return" });
  });

  it("is reachable through the typed tRPC client with a bearer token", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { authorization: `Bearer ${token}` } })] });
    const sw = await client.tenant.switch.mutate({ organizationId: globex.org.id, durationMinutes: 5 });
    expect(sw.toOrgId).toBe(globex.org.id);
    expect((await client.tenant.context.query()).organization.id).toBe(globex.org.id);
    await client.tenant.return.mutate();
  });
});
