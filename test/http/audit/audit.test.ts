// The audit log over HTTP: entries written by other capabilities' mutations (with the right
// actor, and none when the mutation fails), search and its filters, statistics, by id, by
// entity, by user, recording an authentication event, and no way to change an entry.
import crypto from "node:crypto";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Audit Acme");
  globex = await h.createTenant("Audit Globex");
});
afterAll(() => h?.close());

const rid = () => `audit-test-${crypto.randomUUID()}`;

describe("entries written by other capabilities' mutations", () => {
  it("records a bearer logout with the user as actor, in the same request", async () => {
    const token = await h.login(acme.user.email, acme.user.password);
    const requestId = rid();
    const out = await h.api("POST", "/api/v1/auth/logout", { key: null, token, headers: { "x-request-id": requestId } });
    expect(out.status).toBe(200);
    const res = await h.api("GET", `/api/v1/audit?requestId=${requestId}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(1);
    expect(res.body.items[0]).toMatchObject({
      action: "auth.logout",
      outcome: "success",
      actorType: "user",
      actorId: acme.user.id,
      userId: acme.user.id,
      organizationId: acme.org.id,
      entityType: "session",
      requestId,
      sourceIp: expect.any(String),
    });
  });

  it("records an API key mutation with the key as actor and its creator as user, secrets masked", async () => {
    const requestId = rid();
    const created = await h.api("POST", `/api/v1/organizations/${acme.org.id}/api-keys`, {
      key: acme.key,
      body: { name: "ci key", permissions: ["devices:read"] },
      headers: { "x-request-id": requestId, "user-agent": "audit-test/1.0" },
    });
    expect(created.status).toBe(201);
    const entries = await h.api("GET", `/api/v1/audit?requestId=${requestId}`, { key: acme.key });
    expect(entries.body.total).toBe(1);
    const entry = entries.body.items[0];
    const keyRow = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(acme.key) } });
    expect(entry).toMatchObject({ actorType: "api_key", actorId: keyRow.id, userId: acme.user.id, organizationId: acme.org.id, userAgent: "audit-test/1.0" });
    expect(entry.entityId).toBe(created.body.id);
    expect(JSON.stringify(entry.changes ?? {})).not.toContain(created.body.key);
  });

  it("writes nothing when the mutation fails", async () => {
    const requestId = rid();
    const missing = await h.api("DELETE", `/api/v1/organizations/${acme.org.id}/api-keys/${crypto.randomUUID()}`, {
      key: acme.key,
      headers: { "x-request-id": requestId },
    });
    expect(missing.status).toBe(404);
    const invalid = await h.api("POST", `/api/v1/organizations/${acme.org.id}/api-keys`, {
      key: acme.key,
      body: { name: "x" },
      headers: { "x-request-id": requestId },
    });
    expect(invalid.status).toBe(400);
    expect(await h.services.prisma.auditEntry.count({ where: { requestId } })).toBe(0);
  });

  it("records permission denials as denied entries", async () => {
    const weak = await h.createKey(acme.org.id, ["devices:read"]);
    const requestId = rid();
    expect((await h.api("GET", "/api/v1/audit", { key: weak, headers: { "x-request-id": requestId } })).status).toBe(403);
    const res = await h.api("GET", `/api/v1/audit?requestId=${requestId}&outcome=denied`, { key: acme.key });
    expect(res.body.items[0]).toMatchObject({ action: "permission.denied", outcome: "denied", actorType: "api_key" });
  });
});

describe("search", () => {
  let firstId: string;
  beforeAll(async () => {
    // Thirty entries of a known shape, spread over three days, in acme.
    const base = Date.now() - 3 * 86_400_000;
    await h.services.prisma.auditEntry.createMany({
      data: Array.from({ length: 30 }, (_, i) => ({
        organizationId: acme.org.id,
        actorType: i % 3 === 0 ? "api_key" : "user",
        actorId: i % 3 === 0 ? "key-1" : acme.user.id,
        userId: acme.user.id,
        action: i % 2 === 0 ? "widgets.update" : "widgets.create",
        entityType: "widget",
        entityId: `w-${i % 5}`,
        outcome: i % 10 === 9 ? "failure" : "success",
        createdAt: new Date(base + i * 3_600_000),
      })),
    });
    const first = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { organizationId: acme.org.id, action: "widgets.create" }, orderBy: { createdAt: "asc" } });
    firstId = first.id;
  });

  it("pages newest first with total and hasMore", async () => {
    const page1 = await h.api("GET", "/api/v1/audit?entityType=widget&limit=10", { key: acme.key });
    expect(page1.status).toBe(200);
    expect(page1.body.total).toBe(30);
    expect(page1.body.items).toHaveLength(10);
    expect(page1.body.hasMore).toBe(true);
    const times = page1.body.items.map((e: { createdAt: string }) => e.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const last = await h.api("GET", "/api/v1/audit?entityType=widget&limit=10&offset=20", { key: acme.key });
    expect(last.body.hasMore).toBe(false);
    expect(last.body.items).toHaveLength(10);
    const all = [...page1.body.items, ...last.body.items].map((e: { createdAt: string }) => e.createdAt);
    expect(all.every((t: string) => t <= page1.body.items[0].createdAt)).toBe(true);
  });

  it("filters by actor, action (exact and prefix), entity, outcome and time range", async () => {
    const q = (s: string) => h.api("GET", `/api/v1/audit?entityType=widget&${s}`, { key: acme.key }).then((r) => r.body.total);
    expect(await q("actorType=api_key")).toBe(10);
    expect(await q("actorId=key-1")).toBe(10);
    expect(await q(`userId=${acme.user.id}`)).toBe(30);
    expect(await q("action=widgets.create")).toBe(15);
    expect(await q("action=widgets.*")).toBe(30);
    expect(await q("entityId=w-0")).toBe(6);
    expect(await q("outcome=failure")).toBe(3);
    const from = new Date(Date.now() - 3 * 86_400_000 + 10 * 3_600_000 - 1).toISOString();
    const to = new Date(Date.now() - 3 * 86_400_000 + 20 * 3_600_000 - 1).toISOString();
    expect(await q(`from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`)).toBe(10);
  });

  it("searches text in the action, entity, actor, request id and message, case-insensitively", async () => {
    const q = (s: string) => h.api("GET", `/api/v1/audit?entityType=widget&search=${encodeURIComponent(s)}`, { key: acme.key }).then((r) => r.body.total);
    expect(await q("WIDGETS.CREATE")).toBe(15);
    expect(await q("w-0")).toBe(6);
    expect(await q("key-1")).toBe(10);
    expect(await q("nothing like it")).toBe(0);
    // % and _ are plain characters, not patterns
    expect(await q("%")).toBe(0);
    expect(await q("_")).toBe(0);
    expect((await h.api("GET", `/api/v1/audit?search=${"x".repeat(201)}`, { key: acme.key })).status).toBe(400);
    // another tenant's entries never match
    expect((await h.api("GET", "/api/v1/audit?search=widgets", { key: globex.key })).body.total).toBe(0);
  });

  it("names the person behind each listed entry", async () => {
    const res = await h.api("GET", "/api/v1/audit?entityType=widget&limit=3", { key: acme.key });
    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { id: acme.user.id } });
    for (const e of res.body.items) expect(e.user).toEqual({ email: user.email, name: user.name });
  });

  it("rejects invalid filters with 400", async () => {
    expect((await h.api("GET", "/api/v1/audit?outcome=maybe", { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", "/api/v1/audit?from=yesterday", { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", "/api/v1/audit?limit=500", { key: acme.key })).status).toBe(400);
    const reversed = await h.api("GET", "/api/v1/audit?from=2026-02-01&to=2026-01-01", { key: acme.key });
    expect(reversed.status).toBe(400);
  });

  it("keeps tenants apart; a Super Admin sees every organization and may filter by one", async () => {
    expect((await h.api("GET", "/api/v1/audit?entityType=widget", { key: globex.key })).body.total).toBe(0);
    // organizationId is ignored for non-admins: still their own organization only
    expect((await h.api("GET", `/api/v1/audit?entityType=widget&organizationId=${acme.org.id}`, { key: globex.key })).body.total).toBe(0);
    expect((await h.api("GET", `/api/v1/audit?entityType=widget&organizationId=${acme.org.id}`, { key: ADMIN_KEY })).body.total).toBe(30);
    expect((await h.api("GET", `/api/v1/audit?entityType=widget&organizationId=${globex.org.id}`, { key: ADMIN_KEY })).body.total).toBe(0);
  });

  it("gets one entry by id, 404 for another tenant's", async () => {
    const one = await h.api("GET", `/api/v1/audit/${firstId}`, { key: acme.key });
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ id: firstId, action: "widgets.create", entityType: "widget" });
    expect((await h.api("GET", `/api/v1/audit/${firstId}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/audit/${crypto.randomUUID()}`, { key: acme.key })).status).toBe(404);
  });

  it("lists the entries of one entity and of one user", async () => {
    const byEntity = await h.api("GET", "/api/v1/audit/entity/widget/w-1?limit=2", { key: acme.key });
    expect(byEntity.status).toBe(200);
    expect(byEntity.body.total).toBe(6);
    expect(byEntity.body.items).toHaveLength(2);
    expect(byEntity.body.items.every((e: { entityId: string }) => e.entityId === "w-1")).toBe(true);

    const byUser = await h.api("GET", `/api/v1/audit/user/${acme.user.id}`, { key: acme.key });
    expect(byUser.status).toBe(200);
    expect(byUser.body.total).toBeGreaterThanOrEqual(30);
    expect(byUser.body.items.every((e: { userId: string }) => e.userId === acme.user.id)).toBe(true);
    // another tenant's user: not found
    expect((await h.api("GET", `/api/v1/audit/user/${acme.user.id}`, { key: globex.key })).status).toBe(404);
  });

  it("answers statistics", async () => {
    const stats = await h.api("GET", "/api/v1/audit/stats", { key: acme.key });
    expect(stats.status).toBe(200);
    expect(stats.body.total).toBeGreaterThanOrEqual(30);
    expect(stats.body.byOutcome.failure).toBeGreaterThanOrEqual(3);
    expect(stats.body.byActorType).toMatchObject({ user: expect.any(Number), api_key: expect.any(Number), device: 0, system: 0 });
    expect(stats.body.topActions).toEqual(expect.arrayContaining([{ action: "widgets.create", count: 15 }, { action: "widgets.update", count: 15 }]));
    expect(stats.body.topEntityTypes).toEqual(expect.arrayContaining([{ entityType: "widget", count: 30 }]));
    expect(stats.body.byDay.reduce((a: number, d: { count: number }) => a + d.count, 0)).toBe(stats.body.total);
    const other = await h.api("GET", "/api/v1/audit/stats", { key: globex.key });
    expect(other.body.topActions.find((a: { action: string }) => a.action === "widgets.create")).toBeUndefined();
  });
});

describe("record authentication event", () => {
  it("stores an event about the caller (201) and shows it in search", async () => {
    const res = await h.api("POST", "/api/v1/audit/auth-events", {
      key: acme.key,
      body: { eventType: "mfa_failure", outcome: "failure", message: "wrong TOTP", details: { method: "totp", secret: "123456" } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ action: "auth.event.mfa_failure", outcome: "failure", actorType: "user", userId: acme.user.id, organizationId: acme.org.id });
    expect(res.body.changes).toEqual({ method: "totp", secret: "[redacted]" });
    const found = await h.api("GET", `/api/v1/audit/${res.body.id}`, { key: acme.key });
    expect(found.status).toBe(200);
  });

  it("lets only a Super Admin report about another user", async () => {
    const other = await h.api("POST", "/api/v1/audit/auth-events", { key: acme.key, body: { eventType: "login", userId: globex.user.id } });
    expect(other.status).toBe(404);
    const admin = await h.api("POST", "/api/v1/audit/auth-events", { key: ADMIN_KEY, body: { eventType: "sso_login", userId: globex.user.id, organizationId: globex.org.id } });
    expect(admin.status).toBe(201);
    expect(admin.body).toMatchObject({ userId: globex.user.id, organizationId: globex.org.id });
    expect((await h.api("POST", "/api/v1/audit/auth-events", { key: acme.key, body: { eventType: "Bad Type!" } })).status).toBe(400);
  });
});

describe("entries cannot be changed", () => {
  it("has no update or delete operation", async () => {
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { organizationId: acme.org.id } });
    for (const method of ["PATCH", "PUT", "DELETE"]) {
      const res = await h.api(method, `/api/v1/audit/${entry.id}`, { key: ADMIN_KEY, body: { action: "forged" } });
      expect(res.status, method).toBe(404);
    }
    expect((await h.services.prisma.auditEntry.findUniqueOrThrow({ where: { id: entry.id } })).action).toBe(entry.action);
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    for (const [path, item] of Object.entries(doc.body.paths as Record<string, Record<string, unknown>>)) {
      if (!path.startsWith("/audit")) continue;
      expect(Object.keys(item).filter((m) => ["put", "patch", "delete"].includes(m)), path).toEqual([]);
    }
  });
});

describe("security", () => {
  it("secures every audit procedure", async () => {
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { organizationId: acme.org.id } });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/audit", permission: "audit:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/audit/stats", permission: "audit:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/audit/${entry.id}`, permission: "audit:read", foreignPath: `/api/v1/audit/${entry.id}` });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/audit/entity/widget/w-1", permission: "audit:read" });
    await expectSecured(h, acme, globex, {
      method: "GET", path: `/api/v1/audit/user/${acme.user.id}`, permission: "audit:read", foreignPath: `/api/v1/audit/user/${acme.user.id}`,
    });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/audit/auth-events", body: { eventType: "login" } });
  });

  it("is reachable through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const page = await client.audit.search.query({ entityType: "widget", limit: 1 });
    expect(page.total).toBe(30);
    expect(page.items[0].entityType).toBe("widget");
  });
});

describe("entity names", () => {
  it("names a device by its current name in the audit log and the activity, by id once it is gone; each page asks for the names once", async () => {
    const ids: string[] = [];
    for (const name of ["press-1", "press-2"]) {
      const device = await h.services.prisma.device.create({ data: { organizationId: acme.org.id, name } });
      ids.push(device.id);
    }
    const requestId = rid();
    for (const [i, id] of ids.entries()) {
      const res = await h.api("PATCH", `/api/v1/devices/${id}`, { key: acme.key, body: { name: `Press line ${i + 1}` }, headers: { "x-request-id": requestId } });
      expect(res.status, res.text).toBe(200);
    }
    const page = await h.api("GET", `/api/v1/audit?requestId=${requestId}`, { key: acme.key });
    expect(page.status).toBe(200);
    expect(page.body.items.map((e: { entityId: string; entityName: string }) => [e.entityId, e.entityName]).sort())
      .toEqual([[ids[0], "Press line 1"], [ids[1], "Press line 2"]].sort());
    // Entries about other things carry no name.
    const logout = await h.api("GET", "/api/v1/audit?action=auth.logout&limit=1", { key: acme.key });
    expect(logout.body.items[0].entityName).toBeNull();

    const activity = await h.api("GET", "/api/v1/activity?types=api_key_use&limit=100", { key: acme.key });
    expect(activity.status).toBe(200);
    const renamed = activity.body.items.find((a: { entityId: string }) => a.entityId === ids[0]);
    expect(renamed).toMatchObject({ entityName: "Press line 1", summary: "API key: devices.update device “Press line 1”" });

    // One lookup of the devices per page, whatever the number of rows naming them.
    const lookups: string[] = [];
    const spied = h.services.prisma.$extends({ query: { device: { findMany: ({ args, query }) => { lookups.push(JSON.stringify(args.where)); return query(args); } } } });
    const { searchAudit } = await import("../../../src/modules/audit/service.js");
    const principal = { organizationId: acme.org.id, isSuperAdmin: false } as Parameters<typeof searchAudit>[1];
    const viaService = await searchAudit(spied as unknown as Parameters<typeof searchAudit>[0], principal, { requestId, limit: 50, offset: 0 });
    expect(viaService.items.map((e) => e.entityName).sort()).toEqual(["Press line 1", "Press line 2"]);
    expect(lookups).toHaveLength(1);

    // A deleted device: its entries stay, by id.
    expect((await h.api("DELETE", `/api/v1/devices/${ids[1]}`, { key: acme.key })).status).toBe(200);
    const after = await h.api("GET", `/api/v1/audit?requestId=${requestId}`, { key: acme.key });
    expect(after.body.items.find((e: { entityId: string }) => e.entityId === ids[1]).entityName).toBeNull();

    // Another tenant sees neither the entries nor the names.
    const theirs = await h.api("GET", `/api/v1/audit?entityId=${ids[0]}`, { key: globex.key });
    expect(theirs.body.total).toBe(0);
  });

  it("names the device that acted (actorName) in the audit log and the activity, in the same lookup", async () => {
    const device = await h.services.prisma.device.create({ data: { organizationId: acme.org.id, name: "gateway-7" } });
    const requestId = rid();
    // what the agent routes write when a device acts (agent.enroll, auth.refused)
    await h.services.prisma.auditEntry.create({
      data: { organizationId: acme.org.id, actorType: "device", actorId: device.id, action: "agent.enroll", entityType: "device", entityId: device.id, outcome: "success", requestId },
    });
    const page = await h.api("GET", `/api/v1/audit?requestId=${requestId}`, { key: acme.key });
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expect(page.body.items[0]).toMatchObject({ actorType: "device", actorId: device.id, actorName: "gateway-7", entityName: "gateway-7" });
    // a person's entry has no device behind it
    const logout = await h.api("GET", "/api/v1/audit?action=auth.logout&limit=1", { key: acme.key });
    expect(logout.body.items[0].actorName).toBeNull();
    // the activity shows what devices do only when it is refused (access_denied)
    await h.services.prisma.auditEntry.create({
      data: { organizationId: acme.org.id, actorType: "device", actorId: device.id, action: "auth.refused", outcome: "denied", message: "certificate revoked" },
    });
    const activity = await h.api("GET", "/api/v1/activity?types=access_denied&limit=200", { key: acme.key });
    expect(activity.status).toBe(200);
    expect(activity.body.items.find((a: { actorId: string }) => a.actorId === device.id)).toMatchObject({ actorType: "device", actorName: "gateway-7" });
  });
});
