// Spec ops 9 and 15, the list / update (PUT) / revoke (DELETE) paths of API keys, and rotate (ours).
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { eventually } from "../../support/server-process.js";
import { issuePaths, personWithRole } from "../members/identity-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
const created: string[] = [];

// The spec's fields, and `platform` (ours: docs/identity.md, "Platform keys").
const SPEC_FIELDS = ["id", "name", "description", "keyPrefix", "permissions", "platform", "lastUsedAt", "expiresAt", "createdAt", "createdBy", "key"];
const keysPath = (orgId: string) => `/api/v1/organizations/${orgId}/api-keys`;
const readOrg = (t: Tenant, key: string) => h.api("GET", `/api/v1/organizations/by-slug/${t.org.slug}`, { key });

async function createKey(t: Tenant, body: Record<string, unknown>, key = t.key) {
  const res = await h.api("POST", keysPath(t.org.id), { key, body });
  if (res.status === 201) created.push(res.body.key);
  return res;
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Keys");
  globex = await h.createTenant("Globex Keys");
});
afterAll(() => h?.close());

describe("POST /organizations/{orgId}/api-keys (op 9)", () => {
  it("answers 201 with the spec's fields, the full key once, and stores only its hash", async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await createKey(acme, { name: "CI deploys", description: "used by the pipeline", permissions: ["organizations:read", "devices:read"], expiresAt });
    expect(res.status).toBe(201);
    const body = res.body;
    for (const field of Object.keys(body)) expect(SPEC_FIELDS).toContain(field);
    expect(body).toMatchObject({
      name: "CI deploys",
      description: "used by the pipeline",
      permissions: ["organizations:read", "devices:read"],
      expiresAt,
      createdBy: acme.user.id,
      platform: false,
    });
    expect(body.key).toMatch(/^fm_[0-9A-Za-z]{40}$/);
    expect(body.keyPrefix).toBe(body.key.slice(0, 8));
    expect(body.keyPrefix).toHaveLength(8);
    expect(body.lastUsedAt).toBeUndefined();
    expect(new Date(body.createdAt).toISOString()).toBe(body.createdAt);

    const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: body.id } });
    expect(row.keyHash).toBe(sha256Hex(body.key));
    expect(row.organizationId).toBe(acme.org.id);
    expect(row.createdById).toBe(acme.user.id);
    expect(JSON.stringify(row)).not.toContain(body.key);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "apiKeys.create", entityId: body.id } });
    expect(audit?.outcome).toBe("success");
    expect(JSON.stringify(audit)).not.toContain(body.key);
  });

  it("gives a key that authenticates at once, within its own permissions", async () => {
    const res = await createKey(acme, { name: "reader", permissions: ["organizations:read"] });
    expect((await readOrg(acme, res.body.key)).status).toBe(200);
    const denied = await h.api("GET", keysPath(acme.org.id), { key: res.body.key });
    expect(denied.status).toBe(403);
  });

  it("defaults to no permissions and no expiry", async () => {
    const res = await createKey(acme, { name: "bare" });
    expect(res.status).toBe(201);
    expect(res.body.permissions).toEqual([]);
    expect(res.body.expiresAt).toBeUndefined();
    expect(res.body.description).toBeUndefined();
  });

  it.each([
    ["name", { permissions: [] }],
    ["name", { name: "x" }],
    ["name", { name: "x".repeat(101) }],
    ["name", { name: 42 }],
    ["description", { name: "ok name", description: "d".repeat(501) }],
    ["permissions.0", { name: "ok name", permissions: ["nope:read"] }],
    ["permissions.1", { name: "ok name", permissions: ["devices:read", "devices:fly"] }],
    ["permissions", { name: "ok name", permissions: "devices:read" }],
    ["expiresAt", { name: "ok name", expiresAt: new Date(Date.now() - 60_000).toISOString() }],
    ["expiresAt", { name: "ok name", expiresAt: "tomorrow" }],
  ])("answers 400 naming %s for %j", async (field, body) => {
    const before = await h.services.prisma.apiKey.count();
    const res = await h.api("POST", keysPath(acme.org.id), { key: acme.key, body });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_REQUEST");
    expect(issuePaths(res.body)).toContain(field);
    expect(await h.services.prisma.apiKey.count()).toBe(before);
  });

  it("accepts the boundary lengths (2 and 100 characters, 500 for the description)", async () => {
    expect((await createKey(acme, { name: "ab" })).status).toBe(201);
    expect((await createKey(acme, { name: "n".repeat(100), description: "d".repeat(500) })).status).toBe(201);
  });

  it("answers 400 for an orgId that is not a uuid and 404 for another organization", async () => {
    expect((await h.api("POST", "/api/v1/organizations/not-a-uuid/api-keys", { key: acme.key, body: { name: "ok name" } })).status).toBe(400);
    const foreign = await h.api("POST", keysPath(globex.org.id), { key: acme.key, body: { name: "sneaky" } });
    expect(foreign.status).toBe(404);
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: globex.org.id, name: "sneaky" } })).toBe(0);
  });

  it("lets a Super Admin create a key in any organization, and a platform key only there", async () => {
    const res = await createKey(globex, { name: "support access", permissions: ["organizations:read"] }, ADMIN_KEY);
    expect(res.status).toBe(201);
    expect((await readOrg(globex, res.body.key)).status).toBe(200);
    // The audit entry belongs to the organization the key was made in, not the admin's own.
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "apiKeys.create", entityId: res.body.id } });
    expect(audit.organizationId).toBe(globex.org.id);
    const platform = await createKey(globex, { name: "platform", permissions: ["platform:admin"] }, ADMIN_KEY);
    expect(platform.status).toBe(201);
  });
});

describe("a key never holds more than its creator may do", () => {
  it("refuses * and devices:write to a caller holding only api-keys:write + organizations:read", async () => {
    const narrow = await h.createKey(acme.org.id, ["api-keys:write", "organizations:read"], { userId: acme.user.id });
    for (const permissions of [["*"], ["devices:write"], ["devices:*"], ["organizations:read", "api-keys:*"]]) {
      const res = await h.api("POST", keysPath(acme.org.id), { key: narrow, body: { name: "escalate", permissions } });
      expect(res.status, JSON.stringify(permissions)).toBe(403);
      expect(res.body.code).toBe("FORBIDDEN");
    }
    expect(await h.services.prisma.apiKey.count({ where: { name: "escalate" } })).toBe(0);
    // What it holds itself it may hand on.
    const ok = await h.api("POST", keysPath(acme.org.id), { key: narrow, body: { name: "smaller", permissions: ["organizations:read"] } });
    expect(ok.status).toBe(201);
    expect(ok.body.createdBy).toBe(acme.user.id);
  });

  it("a key created with only organizations:read cannot create keys at all", async () => {
    const readOnly = (await createKey(acme, { name: "read only", permissions: ["organizations:read"] })).body.key;
    for (const permissions of [["*"], ["organizations:read"], []]) {
      const res = await h.api("POST", keysPath(acme.org.id), { key: readOnly, body: { name: "self escalation", permissions } });
      expect(res.status).toBe(403);
    }
    const id = (await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(readOnly) } })).id;
    const widen = await h.api("PUT", `${keysPath(acme.org.id)}/${id}`, { key: readOnly, body: { permissions: ["*"] } });
    expect(widen.status).toBe(403);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id } })).permissions).toEqual(["organizations:read"]);
  });

  it("an admin (not owner) cannot mint * but can mint what admins hold; platform:admin is for Super Admins", async () => {
    const admin = await personWithRole(h, acme.org.id, "admin");
    const star = await h.api("POST", keysPath(acme.org.id), { key: admin.key, body: { name: "star", permissions: ["*"] } });
    expect(star.status).toBe(403);
    // the first of what admins do not hold (tenant:switch, organizations:branding)
    expect(star.body.message).toMatch(/includes (tenant:switch|organizations:branding), which you do not hold/);
    const devices = await h.api("POST", keysPath(acme.org.id), { key: admin.key, body: { name: "devices", permissions: ["devices:*"] } });
    expect(devices.status).toBe(201);
    const platform = await h.api("POST", keysPath(acme.org.id), { key: acme.key, body: { name: "platform", permissions: ["platform:admin"] } });
    expect(platform.status).toBe(403);
    expect(platform.body.message).toContain("Super Admin");
  });

  it("PUT may narrow a key, and may not widen it beyond the caller", async () => {
    const wide = await createKey(acme, { name: "wide", permissions: ["devices:*", "organizations:read"] });
    const narrow = await h.createKey(acme.org.id, ["api-keys:write", "organizations:read"], { userId: acme.user.id });
    const path = `${keysPath(acme.org.id)}/${wide.body.id}`;
    expect((await h.api("PUT", path, { key: narrow, body: { permissions: ["devices:*", "organizations:read", "devices:write"] } })).status).toBe(200);
    expect((await h.api("PUT", path, { key: narrow, body: { permissions: ["organizations:read"] } })).status).toBe(200);
    expect((await h.api("PUT", path, { key: narrow, body: { permissions: ["organizations:read", "devices:read"] } })).status).toBe(403);
  });
});

describe("GET /organizations/{orgId}/api-keys/{id} (op 15) and the list", () => {
  it("returns the key without `key`, only its prefix; the list too", async () => {
    const made = await createKey(acme, { name: "readable", permissions: ["devices:read"] });
    const res = await h.api("GET", `${keysPath(acme.org.id)}/${made.body.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    const { key, ...rest } = made.body;
    expect(res.body).toEqual(rest);
    expect(res.body.key).toBeUndefined();
    expect(res.text).not.toContain(key);

    const list = await h.api("GET", `${keysPath(acme.org.id)}?limit=200`, { key: acme.key });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id, revokedAt: null } }));
    expect(list.body.hasMore).toBe(false);
    const item = list.body.items.find((k: { id: string }) => k.id === made.body.id);
    // The list also names the creator (the console's "Created by" column), from the user row.
    const owner = await h.services.prisma.user.findUniqueOrThrow({ where: { id: acme.user.id } });
    expect(item).toEqual({ ...rest, creator: { id: acme.user.id, name: owner.name, email: acme.user.email } });
    for (const k of list.body.items) expect(k.key).toBeUndefined();
    for (const k of created) expect(list.text).not.toContain(k);
  });

  it("pages newest first", async () => {
    const page = await h.api("GET", `${keysPath(acme.org.id)}?limit=2&offset=0`, { key: acme.key });
    expect(page.body.items).toHaveLength(2);
    expect(page.body.hasMore).toBe(true);
    expect(Date.parse(page.body.items[0].createdAt)).toBeGreaterThanOrEqual(Date.parse(page.body.items[1].createdAt));
    expect((await h.api("GET", `${keysPath(acme.org.id)}?limit=0`, { key: acme.key })).status).toBe(400);
    expect((await h.api("GET", `${keysPath(acme.org.id)}?limit=201`, { key: acme.key })).status).toBe(400);
  });

  it("answers 404 for an unknown key and for another tenant's key", async () => {
    const unknown = await h.api("GET", `${keysPath(acme.org.id)}/00000000-0000-4000-8000-000000000000`, { key: acme.key });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe("API key not found");
    const mine = await createKey(globex, { name: "globex secret" });
    // With acme's own orgId in the path the key is simply not there; with globex's the organization is not.
    expect((await h.api("GET", `${keysPath(acme.org.id)}/${mine.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `${keysPath(globex.org.id)}/${mine.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", keysPath(globex.org.id), { key: acme.key })).status).toBe(404);
  });

  it("shows lastUsedAt once the key has been used", async () => {
    const made = await createKey(acme, { name: "used", permissions: ["organizations:read"] });
    await readOrg(acme, made.body.key);
    let row = null;
    for (let i = 0; i < 50 && !row?.lastUsedAt; i++) {
      await new Promise((r) => setTimeout(r, 20));
      row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: made.body.id } });
    }
    const res = await h.api("GET", `${keysPath(acme.org.id)}/${made.body.id}`, { key: acme.key });
    expect(res.body.lastUsedAt).toBe(row!.lastUsedAt!.toISOString());
  });
});

describe("PUT /organizations/{orgId}/api-keys/{id}", () => {
  it("updates name, description, permissions and expiry, and clears them with null", async () => {
    const made = await createKey(acme, { name: "to change", description: "old", permissions: ["devices:read"] });
    const path = `${keysPath(acme.org.id)}/${made.body.id}`;
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const res = await h.api("PUT", path, { key: acme.key, body: { name: "changed", description: "new", permissions: ["devices:read", "telemetry:read"], expiresAt } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: made.body.id, name: "changed", description: "new", permissions: ["devices:read", "telemetry:read"], expiresAt, keyPrefix: made.body.keyPrefix });
    expect(res.body.key).toBeUndefined();
    const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: made.body.id } });
    expect(row.permissions).toEqual(["devices:read", "telemetry:read"]);
    expect(row.keyHash).toBe(sha256Hex(made.body.key));

    const cleared = await h.api("PUT", path, { key: acme.key, body: { description: null, expiresAt: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.description).toBeUndefined();
    expect(cleared.body.expiresAt).toBeUndefined();
    expect(cleared.body.name).toBe("changed");
  });

  it("takes a permission change into account on the key's next request", async () => {
    const made = await createKey(acme, { name: "shrinking", permissions: ["organizations:read"] });
    expect((await readOrg(acme, made.body.key)).status).toBe(200);
    await h.api("PUT", `${keysPath(acme.org.id)}/${made.body.id}`, { key: acme.key, body: { permissions: ["devices:read"] } });
    expect((await readOrg(acme, made.body.key)).status).toBe(403);
  });

  it.each([
    ["name", { name: "x" }],
    ["description", { description: "d".repeat(501) }],
    ["permissions.0", { permissions: ["root"] }],
    ["expiresAt", { expiresAt: "2001-01-01T00:00:00Z" }],
  ])("answers 400 naming %s", async (field, body) => {
    const made = await createKey(acme, { name: "invalid updates" });
    const res = await h.api("PUT", `${keysPath(acme.org.id)}/${made.body.id}`, { key: acme.key, body });
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain(field);
  });

  it("answers 404 for an unknown or foreign key", async () => {
    expect((await h.api("PUT", `${keysPath(acme.org.id)}/00000000-0000-4000-8000-000000000000`, { key: acme.key, body: { name: "ok name" } })).status).toBe(404);
    const theirs = await createKey(globex, { name: "theirs" });
    expect((await h.api("PUT", `${keysPath(globex.org.id)}/${theirs.body.id}`, { key: acme.key, body: { name: "mine now" } })).status).toBe(404);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: theirs.body.id } })).name).toBe("theirs");
  });
});

describe("DELETE /organizations/{orgId}/api-keys/{id} and expiry", () => {
  it("revokes: the key answers 401 from the next request, disappears from reads, and the row keeps revokedAt", async () => {
    const made = await createKey(acme, { name: "short lived", permissions: ["organizations:read"] });
    expect((await readOrg(acme, made.body.key)).status).toBe(200);
    const path = `${keysPath(acme.org.id)}/${made.body.id}`;
    const res = await h.api("DELETE", path, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: made.body.id, revoked: true });
    const after = await readOrg(acme, made.body.key);
    expect(after.status).toBe(401);
    expect((await h.api("GET", path, { key: acme.key })).status).toBe(404);
    expect((await h.api("DELETE", path, { key: acme.key })).status).toBe(404);
    const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: made.body.id } });
    expect(row.revokedAt?.toISOString()).toBe(res.body.revokedAt);
  });

  it("lets a key revoke itself", async () => {
    const made = await createKey(acme, { name: "self revoking", permissions: ["api-keys:write"] });
    const res = await h.api("DELETE", `${keysPath(acme.org.id)}/${made.body.id}`, { key: made.body.key });
    expect(res.status).toBe(200);
    expect((await h.api("GET", keysPath(acme.org.id), { key: made.body.key })).status).toBe(401);
  });

  it("answers 404 across tenants and leaves the key working", async () => {
    const theirs = await createKey(globex, { name: "keep me", permissions: ["organizations:read"] });
    expect((await h.api("DELETE", `${keysPath(globex.org.id)}/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("DELETE", `${keysPath(acme.org.id)}/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await readOrg(globex, theirs.body.key)).status).toBe(200);
  });

  it("stops a key once its expiresAt has passed (401)", async () => {
    const made = await createKey(acme, { name: "expiring", permissions: ["organizations:read"], expiresAt: new Date(Date.now() + 1500).toISOString() });
    expect(made.status).toBe(201);
    expect((await readOrg(acme, made.body.key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(made.body.expiresAt) - Date.now() + 50)));
    const res = await readOrg(acme, made.body.key);
    expect(res.status).toBe(401);
    expect(res.body.message).toBe("API key has expired");
  });
});

describe("POST /organizations/{orgId}/api-keys/{id}/rotate", () => {
  const rotate = (t: Tenant, id: string, body: Record<string, unknown> = {}, key = t.key) =>
    h.api("POST", `${keysPath(t.org.id)}/${id}/rotate`, { key, body }).then((res) => {
      if (res.status === 201) created.push(res.body.key);
      return res;
    });

  it("answers 201 with a new key like the old one; the old key is revoked at once, in the same transaction", async () => {
    const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const old = await createKey(acme, { name: "pipeline", description: "deploys from CI", permissions: ["organizations:read", "devices:read"], expiresAt });
    // no body at all: the defaults (what `curl -X POST` sends)
    const res = await h.api("POST", `${keysPath(acme.org.id)}/${old.body.id}/rotate`, { key: acme.key });
    expect(res.status, res.text).toBe(201);
    created.push(res.body.key);
    expect(res.body).toMatchObject({ name: "pipeline", description: "deploys from CI", permissions: ["organizations:read", "devices:read"], expiresAt, createdBy: acme.user.id, platform: false });
    expect(res.body.id).not.toBe(old.body.id);
    expect(res.body.key).toMatch(/^fm_[0-9A-Za-z]{40}$/);
    expect(res.body.keyPrefix).toBe(res.body.key.slice(0, 8));
    expect(res.body.replaced).toEqual({ id: old.body.id, keyPrefix: old.body.keyPrefix, revokedAt: expect.any(String) });

    expect((await readOrg(acme, res.body.key)).status).toBe(200);
    expect((await readOrg(acme, old.body.key)).status).toBe(401);
    expect((await h.api("GET", `${keysPath(acme.org.id)}/${old.body.id}`, { key: acme.key })).status).toBe(404);
    const rows = await h.services.prisma.apiKey.findMany({ where: { id: { in: [old.body.id, res.body.id] } } });
    expect(rows.find((r) => r.id === old.body.id)!.revokedAt?.toISOString()).toBe(res.body.replaced.revokedAt);
    expect(rows.find((r) => r.id === res.body.id)!.keyHash).toBe(sha256Hex(res.body.key));
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "api-keys.rotate", entityId: res.body.id } });
    expect(audit.outcome).toBe("success");
    expect(audit.message).toBe(`replaces ${old.body.keyPrefix}…; revoked at once`);
    expect(JSON.stringify(audit)).not.toContain(res.body.key);
  });

  it("with graceSeconds, the old key keeps working until then, never beyond its own expiry", async () => {
    const old = await createKey(acme, { name: "handover", permissions: ["organizations:read"] });
    const before = Date.now();
    const res = await rotate(acme, old.body.id, { graceSeconds: 2 });
    expect(res.status, res.text).toBe(201);
    expect(res.body.expiresAt).toBeUndefined(); // the old key had none
    const until = Date.parse(res.body.replaced.expiresAt);
    expect(res.body.replaced.revokedAt).toBeUndefined();
    expect(until).toBeGreaterThanOrEqual(before + 2000);
    expect(until).toBeLessThanOrEqual(Date.now() + 2000);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: old.body.id } })).expiresAt?.toISOString()).toBe(res.body.replaced.expiresAt);
    // both keys work during the handover, then only the new one
    expect((await readOrg(acme, old.body.key)).status).toBe(200);
    expect((await readOrg(acme, res.body.key)).status).toBe(200);
    await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now() + 50)));
    const late = await readOrg(acme, old.body.key);
    expect(late.status).toBe(401);
    expect(late.body.message).toBe("API key has expired");
    expect((await readOrg(acme, res.body.key)).status).toBe(200);

    // an expiry sooner than the grace period stays as it was
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    const short = await createKey(acme, { name: "short", permissions: ["organizations:read"], expiresAt: soon });
    const kept = await rotate(acme, short.body.id, { graceSeconds: 86_400 });
    expect(kept.status, kept.text).toBe(201);
    expect(kept.body.replaced.expiresAt).toBe(soon);
    expect(kept.body.expiresAt).toBe(soon);
  });

  it("gives the new key another expiry when asked; an expired key needs one (400 naming expiresAt, nothing changed)", async () => {
    const old = await createKey(acme, { name: "lapsed", permissions: ["organizations:read"], expiresAt: new Date(Date.now() + 86_400_000).toISOString() });
    await h.services.prisma.apiKey.update({ where: { id: old.body.id }, data: { expiresAt: new Date(Date.now() - 60_000) } });
    const count = () => h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id } });
    const keys = await count();

    const refused = await rotate(acme, old.body.id);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toMatch(/^Invalid input: expiresAt: the key expired at /);
    expect(await count()).toBe(keys);

    const later = new Date(Date.now() + 7 * 86_400_000).toISOString();
    const renewed = await rotate(acme, old.body.id, { expiresAt: later });
    expect(renewed.status, renewed.text).toBe(201);
    expect(renewed.body.expiresAt).toBe(later);
    expect((await readOrg(acme, renewed.body.key)).status).toBe(200);

    const forever = await rotate(acme, renewed.body.id, { expiresAt: null });
    expect(forever.status, forever.text).toBe(201);
    expect(forever.body.expiresAt).toBeUndefined();
  });

  it("answers 400 naming graceSeconds or expiresAt for bad values, and changes nothing", async () => {
    const old = await createKey(acme, { name: "untouched", permissions: ["organizations:read"] });
    const keys = await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id } });
    for (const [body, field] of [
      [{ graceSeconds: -1 }, "graceSeconds"],
      [{ graceSeconds: 7 * 86_400 + 1 }, "graceSeconds"],
      [{ graceSeconds: 1.5 }, "graceSeconds"],
      [{ graceSeconds: "soon" }, "graceSeconds"],
      [{ expiresAt: new Date(Date.now() - 1000).toISOString() }, "expiresAt"],
      [{ expiresAt: "tomorrow" }, "expiresAt"],
    ] as const) {
      const res = await rotate(acme, old.body.id, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.issues.map((i: { path: string[] }) => i.path.join("."))).toContain(field);
    }
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id } })).toBe(keys);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: old.body.id } })).revokedAt).toBeNull();
    expect((await readOrg(acme, old.body.key)).status).toBe(200);
  });

  it("is bounded like a new key: a caller who may not grant the key's permissions gets 403 and both keys stay as they were", async () => {
    const wide = await createKey(acme, { name: "wide rotate", permissions: ["devices:*", "organizations:read"] });
    const narrow = await h.createKey(acme.org.id, ["api-keys:write", "organizations:read"], { userId: acme.user.id });
    const keys = await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id } });
    const res = await rotate(acme, wide.body.id, {}, narrow);
    expect(res.status).toBe(403);
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id } })).toBe(keys);
    expect((await readOrg(acme, wide.body.key)).status).toBe(200);
  });

  it("401 / 403 / 404 for another tenant's key, which keeps working", async () => {
    const target = await createKey(acme, { name: "secured rotate", permissions: ["organizations:read"] });
    const item = `${keysPath(acme.org.id)}/${target.body.id}/rotate`;
    await expectSecured(h, acme, globex, { method: "POST", path: item, body: {}, permission: "api-keys:write", foreignPath: item });
    expect((await h.api("POST", `${keysPath(globex.org.id)}/${target.body.id}/rotate`, { key: globex.key, body: {} })).status).toBe(404);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: target.body.id } })).revokedAt).toBeNull();
    expect((await readOrg(acme, target.body.key)).status).toBe(200);
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id, name: "secured rotate" } })).toBe(1);
  });

  it("marks the old key replaced and links the new one to it: the old key's use stays readable, also once it has ended", async () => {
    const old = await createKey(acme, { name: "history", permissions: ["organizations:read"] });
    expect((await readOrg(acme, old.body.key)).status).toBe(200);
    const used = await eventually(async () => (await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: old.body.id } })).lastUsedAt ?? undefined, 10_000, "the key's use recorded");

    const res = await rotate(acme, old.body.id, { graceSeconds: 3600 });
    expect(res.status, res.text).toBe(201);
    const listed = async () => (await h.api("GET", `${keysPath(acme.org.id)}?limit=100`, { key: acme.key })).body.items as Record<string, unknown>[];
    // During the handover both are listed: the old one marked replaced (by whom, since when), its use kept.
    let items = await listed();
    const oldItem = items.find((k) => k.id === old.body.id)!;
    expect(oldItem).toMatchObject({ replacedById: res.body.id, replacedAt: expect.any(String), lastUsedAt: used.toISOString(), expiresAt: res.body.replaced.expiresAt });
    const replaces = { id: old.body.id, keyPrefix: old.body.keyPrefix, createdAt: old.body.createdAt, lastUsedAt: used.toISOString(), replacedAt: oldItem.replacedAt, expiresAt: res.body.replaced.expiresAt };
    const newItem = items.find((k) => k.id === res.body.id)!;
    expect(newItem.replaces).toEqual(replaces);
    expect(newItem.replacedById).toBeUndefined();
    expect((await h.api("GET", `${keysPath(acme.org.id)}/${res.body.id}`, { key: acme.key })).body.replaces).toEqual(replaces);
    expect((await h.api("GET", `${keysPath(acme.org.id)}/${old.body.id}`, { key: acme.key })).body).toMatchObject({ replacedById: res.body.id });

    // A replaced key is not rotated a second time (two successors): 409 naming the one it has, nothing made.
    const twice = await h.api("POST", `${keysPath(acme.org.id)}/${old.body.id}/rotate`, { key: acme.key, body: {} });
    expect(twice.status).toBe(409);
    expect(twice.body.message).toContain(res.body.id);
    expect(await h.services.prisma.apiKey.count({ where: { organizationId: acme.org.id, name: "history" } })).toBe(2);

    // Rotated at once, the key leaves the list; its successor still shows its use.
    const next = await rotate(acme, res.body.id);
    expect(next.status).toBe(201);
    items = await listed();
    expect(items.map((k) => k.id)).not.toContain(res.body.id);
    expect(items.find((k) => k.id === next.body.id)!.replaces).toMatchObject({ id: res.body.id, keyPrefix: res.body.keyPrefix, revokedAt: next.body.replaced.revokedAt });
  });
});

describe("security of every procedure", () => {
  it("401 / 403 / cross-tenant 404 on list, create, get, update, revoke", async () => {
    const target = await createKey(acme, { name: "secured" });
    const item = `${keysPath(acme.org.id)}/${target.body.id}`;
    await expectSecured(h, acme, globex, { method: "GET", path: keysPath(acme.org.id), permission: "api-keys:read", foreignPath: keysPath(acme.org.id) });
    await expectSecured(h, acme, globex, { method: "POST", path: keysPath(acme.org.id), body: { name: "secured new" }, permission: "api-keys:write", foreignPath: keysPath(acme.org.id) });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "api-keys:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "PUT", path: item, body: { name: "renamed" }, permission: "api-keys:write", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "api-keys:write", foreignPath: item });
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: target.body.id } })).revokedAt).toBeNull();
  });

  it("works through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const made = await client.apiKeys.create.mutate({ orgId: acme.org.id, name: "from tRPC", permissions: ["devices:read"] });
    created.push(made.key);
    expect(made.keyPrefix).toBe(made.key.slice(0, 8));
    const read = await client.apiKeys.get.query({ orgId: acme.org.id, id: made.id });
    expect(read).not.toHaveProperty("key");
    const rotated = await client.apiKeys.rotate.mutate({ orgId: acme.org.id, id: made.id, graceSeconds: 60 });
    created.push(rotated.key);
    expect(rotated).toMatchObject({ name: "from tRPC", permissions: ["devices:read"], replaced: { id: made.id, keyPrefix: made.keyPrefix } });
    expect(rotated.replaced.revokedAt).toBeUndefined();
    expect(Date.parse(rotated.replaced.expiresAt!)).toBeGreaterThan(Date.now());
  });

  it("never writes a created key to the logs", () => {
    const all = h.logs.join("\n");
    expect(created.length).toBeGreaterThan(10);
    for (const key of created) expect(all).not.toContain(key);
  });
});
