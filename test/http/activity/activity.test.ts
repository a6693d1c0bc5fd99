// The activity feed over HTTP: recent, list (types, user, time), by user, by organization,
// summary, inactivity report, and op 4 (the Super Admin export, CSV or JSON).
import crypto from "node:crypto";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { hashPassword } from "../../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
const DAY = 86_400_000;
const people: Record<string, { id: string; email: string }> = {};

/** A member of acme with the given history. */
async function member(name: string, o: { joinedDaysAgo: number; lastLoginDaysAgo?: number; password?: string }) {
  const prisma = h.services.prisma;
  const viewer = await prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "viewer" } });
  const user = await prisma.user.create({
    data: {
      email: `${name}-${crypto.randomBytes(3).toString("hex")}@activity.example.test`,
      name,
      passwordHash: o.password ? await hashPassword(o.password) : null,
      lastLoginAt: o.lastLoginDaysAgo === undefined ? null : new Date(Date.now() - o.lastLoginDaysAgo * DAY),
    },
  });
  await prisma.membership.create({ data: { organizationId: acme.org.id, userId: user.id, roleId: viewer.id, createdAt: new Date(Date.now() - o.joinedDaysAgo * DAY) } });
  people[name] = { id: user.id, email: user.email };
  return user;
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Activity Acme");
  globex = await h.createTenant("Activity Globex");
  await member("active", { joinedDaysAgo: 90, password: "active-password-1" });
  await member("stale", { joinedDaysAgo: 90, lastLoginDaysAgo: 60 });
  await member("never", { joinedDaysAgo: 45 });
  await member("newcomer", { joinedDaysAgo: 2 });
  // Activity in acme: a sign-in, a refused sign-in, a logout, a key change, a denial.
  const token = await h.login(people.active.email, "active-password-1");
  await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: people.active.email, password: "wrong-password" } });
  await h.api("POST", `/api/v1/organizations/${acme.org.id}/api-keys`, { key: acme.key, body: { name: "feed key", permissions: ["devices:read"] } });
  await h.api("GET", "/api/v1/audit", { key: null, token }); // viewer has audit:read
  const weak = await h.createKey(acme.org.id, ["devices:read"]);
  await h.api("GET", "/api/v1/audit", { key: weak });
  await h.api("POST", "/api/v1/auth/logout", { key: null, token });
  // Something in globex that acme must never see.
  await h.api("POST", `/api/v1/organizations/${globex.org.id}/api-keys`, { key: globex.key, body: { name: "globex key", permissions: [] } });
});
afterAll(() => h?.close());

const types = (items: { type: string }[]) => items.map((i) => i.type);

describe("feed", () => {
  it("answers the recent activity of the organization, newest first, typed and described", async () => {
    const res = await h.api("GET", "/api/v1/activity/recent?limit=10", { key: acme.key });
    expect(res.status).toBe(200);
    expect(types(res.body.items)).toEqual(expect.arrayContaining(["login", "logout", "api_key_use", "access_denied"]));
    expect(res.body.items.every((i: { organizationId: string }) => i.organizationId === acme.org.id)).toBe(true);
    const times = res.body.items.map((i: { createdAt: string }) => i.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const login = res.body.items.find((i: { type: string }) => i.type === "login");
    expect(login).toMatchObject({ summary: "Signed in", userId: people.active.id, userEmail: people.active.email, userName: "active" });
  });

  it("lists with type, user and time filters and paging", async () => {
    const logins = await h.api("GET", "/api/v1/activity?types=login", { key: acme.key });
    expect(logins.status).toBe(200);
    expect(types(logins.body.items)).toEqual(["login"]);
    const two = await h.api("GET", "/api/v1/activity?types=login&types=logout", { key: acme.key });
    expect(two.body.total).toBe(2);
    const keyUse = await h.api("GET", "/api/v1/activity?types=api_key_use", { key: acme.key });
    expect(keyUse.body.items[0]).toMatchObject({ type: "api_key_use", actorType: "api_key", action: "apiKeys.create" });
    const byUser = await h.api("GET", `/api/v1/activity?userId=${people.active.id}&limit=1`, { key: acme.key });
    expect(byUser.body.items).toHaveLength(1);
    expect(byUser.body.hasMore).toBe(true);
    const future = await h.api("GET", `/api/v1/activity?from=${new Date(Date.now() + DAY).toISOString().slice(0, 10)}`, { key: acme.key });
    expect(future.body.total).toBe(0);
    expect((await h.api("GET", "/api/v1/activity?types=nonsense", { key: acme.key })).status).toBe(400);
  });

  it("shows one user's activity; another tenant's user is not found", async () => {
    const res = await h.api("GET", `/api/v1/activity/users/${people.active.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(new Set(types(res.body.items))).toEqual(new Set(["login", "login_failed", "logout"]));
    expect((await h.api("GET", `/api/v1/activity/users/${people.active.id}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/activity/users/${people.active.id}`, { key: ADMIN_KEY })).status).toBe(200);
  });

  it("shows one organization's activity: own or, for a Super Admin, any", async () => {
    const own = await h.api("GET", `/api/v1/activity/organizations/${acme.org.id}`, { key: acme.key });
    expect(own.status).toBe(200);
    expect(own.body.total).toBeGreaterThanOrEqual(5);
    expect((await h.api("GET", `/api/v1/activity/organizations/${acme.org.id}`, { key: globex.key })).status).toBe(404);
    const admin = await h.api("GET", `/api/v1/activity/organizations/${globex.org.id}`, { key: ADMIN_KEY });
    expect(admin.body.items.every((i: { organizationId: string }) => i.organizationId === globex.org.id)).toBe(true);
    expect(admin.body.total).toBeGreaterThanOrEqual(1);
    expect((await h.api("GET", `/api/v1/activity/organizations/${crypto.randomUUID()}`, { key: ADMIN_KEY })).status).toBe(404);
  });

  it("summarises the last days", async () => {
    const res = await h.api("GET", "/api/v1/activity/summary?days=7", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.byType).toMatchObject({ login: 1, login_failed: 1, logout: 1, api_key_use: 1 });
    expect(res.body.byType.access_denied).toBeGreaterThanOrEqual(1);
    expect(res.body.total).toBe(Object.values(res.body.byType as Record<string, number>).reduce((a, b) => a + b, 0));
    expect(res.body.activeUsers).toBeGreaterThanOrEqual(2);
    expect(res.body.topUsers[0]).toMatchObject({ userId: expect.any(String), count: expect.any(Number) });
    expect(res.body.days).toBe(7);
  });
});

describe("inactivity report", () => {
  it("lists members inactive for N days, longest first; not newcomers, not the active", async () => {
    const res = await h.api("GET", "/api/v1/activity/inactivity-report?days=30", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ days: 30, organizationId: acme.org.id, total: 2, hasMore: false });
    expect(res.body.items.map((i: { userId: string }) => i.userId)).toEqual([people.stale.id, people.never.id]);
    expect(res.body.items[0]).toMatchObject({ role: "viewer", daysInactive: 60, lastActivityAt: expect.any(String) });
    expect(res.body.items[1]).toMatchObject({ lastActivityAt: null, daysInactive: 45 });
    const longer = await h.api("GET", "/api/v1/activity/inactivity-report?days=50", { key: acme.key });
    expect(longer.body.items.map((i: { userId: string }) => i.userId)).toEqual([people.stale.id]);
    const paged = await h.api("GET", "/api/v1/activity/inactivity-report?days=30&limit=1&offset=1", { key: acme.key });
    expect(paged.body).toMatchObject({ total: 2, hasMore: false, items: [{ userId: people.never.id }] });
  });

  it("lets a Super Admin run it for any organization; others only for their own", async () => {
    expect((await h.api("GET", `/api/v1/activity/inactivity-report?organizationId=${acme.org.id}`, { key: ADMIN_KEY })).body.total).toBe(2);
    expect((await h.api("GET", `/api/v1/activity/inactivity-report?organizationId=${acme.org.id}`, { key: globex.key })).status).toBe(404);
  });
});

describe("op 4: activity export", () => {
  async function exportActivity(body: unknown, key = ADMIN_KEY) {
    const res = await fetch(`${h.url}/api/v1/activity/export`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { res, text: await res.text() };
  }

  it("answers JSON by default, filtered by organization, user, types and dates", async () => {
    const { res, text } = await exportActivity({ organizationId: acme.org.id });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="activity-\d{8}T\d{6}Z\.json"$/);
    const all = JSON.parse(text);
    expect(all.length).toBeGreaterThanOrEqual(5);
    expect(all.every((i: { organizationId: string }) => i.organizationId === acme.org.id)).toBe(true);

    const logins = JSON.parse((await exportActivity({ organizationId: acme.org.id, userId: people.active.id, activityTypes: ["login", "login_failed"], format: "json" })).text);
    expect(types(logins).sort()).toEqual(["login", "login_failed"]);
    const today = new Date().toISOString().slice(0, 10);
    const dated = JSON.parse((await exportActivity({ organizationId: acme.org.id, startDate: today, endDate: today })).text);
    expect(dated.length).toBe(all.length);
    const none = JSON.parse((await exportActivity({ organizationId: acme.org.id, endDate: "2001-01-01" })).text);
    expect(none).toEqual([]);
    const capped = JSON.parse((await exportActivity({ organizationId: acme.org.id, maxRecords: 2 })).text);
    expect(capped).toHaveLength(2);
  });

  it("answers CSV with a header row", async () => {
    const { res, text } = await exportActivity({ organizationId: acme.org.id, format: "csv", activityTypes: ["login"] });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/csv; charset=utf-8");
    expect(res.headers.get("content-disposition")).toMatch(/filename="activity-.*\.csv"/);
    const lines = text.trim().split("\r\n");
    expect(lines[0]).toBe("id,createdAt,type,summary,action,outcome,organizationId,userId,userEmail,userName,actorType,actorId,actorName,entityType,entityId,entityName,sourceIp,userAgent");
    expect(lines).toHaveLength(2);
    expect(lines[1]).toContain(",login,Signed in,auth.login,success,");
  });

  it("refuses any other format, and bad fields, with 400", async () => {
    for (const body of [{ format: "xml" }, { format: "CSV" }, { maxRecords: 0 }, { activityTypes: ["bogus"] }, { organizationId: "x" }, { startDate: "soon" }]) {
      const { res, text } = await exportActivity(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(JSON.parse(text).code).toBe("BAD_REQUEST");
    }
    // A range that ends before it starts names the request's own fields.
    const { res, text } = await exportActivity({ startDate: "2030-01-01", endDate: "2020-01-01" });
    expect(res.status).toBe(400);
    expect(JSON.parse(text).issues).toEqual([{ path: ["endDate"], code: "custom", message: "must be after startDate" }]);
  });

  it("is for Super Admins only", async () => {
    const { res } = await exportActivity({}, acme.key);
    expect(res.status).toBe(403);
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/activity/export", body: { format: "csv" }, permission: "platform:admin" });
  });
});

describe("security", () => {
  it("secures every activity procedure", async () => {
    for (const path of ["/api/v1/activity/recent", "/api/v1/activity", "/api/v1/activity/summary", "/api/v1/activity/inactivity-report"]) {
      await expectSecured(h, acme, globex, { method: "GET", path, permission: "audit:read" });
    }
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/activity/users/${people.active.id}`, permission: "audit:read", foreignPath: `/api/v1/activity/users/${people.active.id}`,
    });
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/activity/organizations/${acme.org.id}`, permission: "audit:read", foreignPath: `/api/v1/activity/organizations/${acme.org.id}`,
    });
  });

  it("is reachable through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const recent = await client.activity.recent.query({ limit: 1 });
    expect(recent.items).toHaveLength(1);
  });
});
