// Issue 23, part 4: a wildcard key stays inside its organization. A Super Admin's `*` key made
// for tenant B (say for B's CI) has every permission of B and nothing beyond it; Super Admin
// power comes only from naming platform:admin, which only a Super Admin may do, and such keys
// are marked as platform keys in the key lists and in the audit log.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALL_PERMISSIONS, ORGANIZATION_PERMISSIONS, REMOTE_NAMED_PERMISSIONS } from "../../../src/trpc/permissions.js";

/** What `*` grants: every organization permission but the named-only remote-access ones (docs/remote-access.md). */
const NAMED_ONLY_REMOTE: readonly string[] = REMOTE_NAMED_PERMISSIONS;
const STAR_PERMISSIONS = ORGANIZATION_PERMISSIONS.filter((p) => !NAMED_ONLY_REMOTE.includes(p));
import { procedureMetas } from "../../../src/trpc/router.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { issuePaths } from "../members/identity-support.js";

let h: Harness;
/** the tenant the stray key must not reach */
let acme: Tenant;
/** the tenant the Super Admin makes a `*` key for */
let ci: Tenant;
/** the Super Admin's `*` key in `ci` (made through the API, as a Super Admin would) */
let starKey: { id: string; key: string };
/** the Super Admin's explicit platform key in `ci` */
let platformKey: { id: string; key: string; body: Record<string, unknown> };
let acmeKeyId: string;

const keysPath = (orgId: string) => `/api/v1/organizations/${orgId}/api-keys`;

async function makeKey(orgId: string, permissions: string[], key = ADMIN_KEY) {
  const res = await h.api("POST", keysPath(orgId), { key, body: { name: `key ${crypto.randomBytes(3).toString("hex")}`, permissions } });
  expect(res.status, res.text).toBe(201);
  return { id: res.body.id as string, key: res.body.key as string, body: res.body };
}

/**
 * A path of the API with its parameters naming acme's resources: organizations, users,
 * members and API keys by the segment before them or the parameter's name. null when a
 * parameter names something acme has none of (a random id proves nothing there).
 */
function acmePath(path: string): string | null {
  let unresolved = false;
  const filled = path.replace(/\{(\w+)\}/g, (_m, name: string, offset: number) => {
    const before = path.slice(0, offset).split("/").filter(Boolean).pop();
    if (name === "orgId" || (name === "id" && before === "organizations")) return acme.org.id;
    if (name === "userId" || (name === "id" && (before === "users" || before === "members"))) return acme.user.id;
    if (name === "id" && before === "api-keys") return acmeKeyId;
    if (name === "slug") return acme.org.slug;
    unresolved = true;
    return "";
  });
  return unresolved ? null : `/api/v1${filled}`;
}

/** Every path parameter as a fresh id: for operations whose gate comes before any lookup. */
const anyPath = (path: string) => `/api/v1${path.replace(/\{\w+\}/g, () => crypto.randomUUID())}`;

const platformOperations = () =>
  procedureMetas()
    .filter(([, meta]) => meta.superAdmin)
    .map(([name, meta]) => ({ name, method: meta.openapi!.method, path: meta.openapi!.path }));

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Reach");
  ci = await h.createTenant("CI Tenant");
  acmeKeyId = (await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(acme.key) } })).id;
  starKey = await makeKey(ci.org.id, ["*"]);
  platformKey = await makeKey(ci.org.id, ["*", "platform:admin"]);
});
afterAll(() => h?.close());

describe("a Super Admin's * key made in another organization", () => {
  it("is not a platform key: listed with platform false, and its audit entry says nothing of the kind", async () => {
    const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: starKey.id } });
    expect(row.permissions).toEqual(["*"]);
    const listed = await h.api("GET", `${keysPath(ci.org.id)}?limit=200`);
    expect(listed.status).toBe(200);
    expect(listed.body.items.find((k: { id: string }) => k.id === starKey.id).platform).toBe(false);
    expect((await h.api("GET", `${keysPath(ci.org.id)}/${starKey.id}`)).body.platform).toBe(false);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "apiKeys.create", entityId: starKey.id } });
    expect(entry.organizationId).toBe(ci.org.id);
    expect(entry.message ?? "").not.toContain("platform");
  });

  it("has every permission of its organization", async () => {
    expect((await h.api("GET", `/api/v1/organizations/${ci.org.id}`, { key: starKey.key })).status).toBe(200);
    expect((await h.api("GET", keysPath(ci.org.id), { key: starKey.key })).status).toBe(200);
    const context = await h.api("GET", "/api/v1/tenant/context", { key: starKey.key });
    expect(context.status).toBe(200);
    expect(context.body).toMatchObject({ credential: "api_key", isSuperAdmin: false, organization: { id: ci.org.id } });
    expect(context.body.permissions).toEqual(STAR_PERMISSIONS);
    expect(context.body.permissions).not.toContain("platform:admin");
  });

  it("gets 403 on every platform operation of the router, before any input is looked at", async () => {
    const operations = platformOperations();
    // The router's Super Admin operations, whatever their number; a few known ones anchor the list.
    expect(operations.map((o) => o.name)).toEqual(expect.arrayContaining(["organizations.create", "organizations.suspend", "users.resetPassword", "globalRegistries.oci.list"]));
    for (const op of operations) {
      const path = acmePath(op.path) ?? anyPath(op.path);
      const res = await h.api(op.method, path, { key: starKey.key });
      expect(res.status, `${op.method} ${path}`).toBe(403);
      expect(res.body.message, `${op.method} ${path}`).toContain("platform:admin");
    }
    const denials = await h.services.prisma.auditEntry.count({ where: { action: "permission.denied", actorId: starKey.id } });
    expect(denials).toBeGreaterThanOrEqual(operations.length);
  });

  it("cannot read, patch, suspend or disable another organization, nor touch its keys or its users' passwords", async () => {
    const key = starKey.key;
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key })).status).toBe(404);
    const list = await h.api("GET", "/api/v1/organizations?limit=200", { key });
    expect(list.body.items.map((o: { id: string }) => o.id)).toEqual([ci.org.id]);
    expect((await h.api("PATCH", `/api/v1/organizations/${acme.org.id}`, { key, body: { name: "Taken Over" } })).status).toBe(403);
    expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/suspend`, { key, body: { reason: "ci" } })).status).toBe(403);
    expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/disable`, { key, body: { reason: "ci" } })).status).toBe(403);
    const org = await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } });
    expect(org).toMatchObject({ name: acme.org.name, status: "active" });

    expect((await h.api("GET", keysPath(acme.org.id), { key })).status).toBe(404);
    expect((await h.api("DELETE", `${keysPath(acme.org.id)}/${acmeKeyId}`, { key })).status).toBe(404);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: acmeKeyId } })).revokedAt).toBeNull();
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: acme.key })).status).toBe(200);

    expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/users/${acme.user.id}/reset-password`, { key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/users/${acme.user.id}/reset-password`, { key })).status).toBe(403);
    expect((await h.api("GET", `/api/v1/users/${acme.user.id}`, { key })).status).toBe(404);
    expect(await h.services.prisma.passwordResetToken.count({ where: { userId: acme.user.id } })).toBe(0);
  });

  it("gets 400, 403 or 404 on every operation whose path names another organization's resources", async () => {
    const document = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body;
    let tried = 0;
    for (const [template, item] of Object.entries(document.paths as Record<string, Record<string, unknown>>)) {
      const path = template.includes("{") ? acmePath(template) : null;
      if (!path) continue;
      for (const method of Object.keys(item)) {
        const res = await h.api(method.toUpperCase(), path, { key: starKey.key });
        // 400: the input was refused before the organization was looked at; nothing reached acme.
        expect([400, 403, 404], `${method.toUpperCase()} ${path}: ${res.text.slice(0, 200)}`).toContain(res.status);
        tried++;
      }
    }
    expect(tried).toBeGreaterThan(30);
    expect(await h.services.prisma.organization.findUniqueOrThrow({ where: { id: acme.org.id } })).toMatchObject({ status: "active" });
  });

  it("answers every plain express route (downloads, exports, streams) exactly as the tenant owner's * key does", async () => {
    const document = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body;
    const procedures = new Set(procedureMetas().flatMap(([, m]) => (m.openapi ? [`${m.openapi.method.toLowerCase()} ${m.openapi.path}`] : [])));
    const plain = Object.entries(document.paths as Record<string, Record<string, unknown>>)
      .flatMap(([path, item]) => Object.keys(item).map((method) => ({ method, path })))
      .filter((o) => !procedures.has(`${o.method} ${o.path}`));
    expect(plain.map((o) => o.path)).toContain("/activity/export");
    for (const op of plain) {
      const path = acmePath(op.path) ?? anyPath(op.path);
      // With no body, and naming acme where the route takes an organization.
      for (const body of op.method === "get" ? [undefined] : [{}, { organizationId: acme.org.id }]) {
        const owner = await h.api(op.method.toUpperCase(), path, { key: ci.key, body });
        const star = await h.api(op.method.toUpperCase(), path, { key: starKey.key, body });
        expect(star.status, `${op.method.toUpperCase()} ${path} ${JSON.stringify(body)}`).toBe(owner.status);
      }
    }
  });

  it("cannot mint a platform key, nor widen a key to one", async () => {
    const res = await h.api("POST", keysPath(ci.org.id), { key: starKey.key, body: { name: "escalate", permissions: ["platform:admin"] } });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain("platform:admin");
    const widen = await h.api("PUT", `${keysPath(ci.org.id)}/${starKey.id}`, { key: starKey.key, body: { permissions: ["*", "platform:admin"] } });
    expect(widen.status).toBe(403);
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: starKey.id } })).permissions).toEqual(["*"]);
    expect(await h.services.prisma.apiKey.count({ where: { name: "escalate" } })).toBe(0);
  });
});

describe("an explicit platform:admin key of a Super Admin", () => {
  it("is listed as a platform key and its creation is audited as one", async () => {
    expect(platformKey.body).toMatchObject({ permissions: ["*", "platform:admin"], platform: true });
    const listed = await h.api("GET", `${keysPath(ci.org.id)}?limit=200`);
    expect(listed.body.items.find((k: { id: string }) => k.id === platformKey.id).platform).toBe(true);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "apiKeys.create", entityId: platformKey.id } });
    expect(entry.message).toBe("platform key (names platform:admin)");
  });

  it("keeps Super Admin power across organizations", async () => {
    const key = platformKey.key;
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key })).status).toBe(200);
    const list = await h.api("GET", "/api/v1/organizations?limit=200", { key });
    expect(list.body.items.map((o: { id: string }) => o.id)).toEqual(expect.arrayContaining([acme.org.id, ci.org.id, h.defaultOrgId]));
    expect((await h.api("GET", keysPath(acme.org.id), { key })).status).toBe(200);
    // Every platform read of the router answers it (those without a path parameter).
    for (const op of platformOperations().filter((o) => o.method === "GET" && !o.path.includes("{"))) {
      expect((await h.api("GET", `/api/v1${op.path}`, { key })).status, op.path).toBe(200);
    }
    const spare = await h.createTenant("Spare Tenant");
    expect((await h.api("POST", `/api/v1/organizations/${spare.org.id}/suspend`, { key, body: { reason: "platform key test" } })).status).toBe(200);
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: spare.org.id } })).status).toBe("suspended");
    const context = await h.api("GET", "/api/v1/tenant/context", { key });
    expect(context.body).toMatchObject({ credential: "api_key", isSuperAdmin: true });
    expect(context.body.permissions).toEqual(ALL_PERMISSIONS.filter((p) => !NAMED_ONLY_REMOTE.includes(p)));
  });

  it("marks the audit entries of updates that make or end a platform key", async () => {
    const made = await makeKey(ci.org.id, ["devices:read"]);
    const path = `${keysPath(ci.org.id)}/${made.id}`;
    const up = await h.api("PUT", path, { body: { permissions: ["devices:read", "platform:admin"] } });
    expect(up.status).toBe(200);
    expect(up.body.platform).toBe(true);
    const down = await h.api("PUT", path, { body: { permissions: ["devices:read"] } });
    expect(down.body.platform).toBe(false);
    const messages = (await h.services.prisma.auditEntry.findMany({ where: { action: "apiKeys.update", entityId: made.id }, orderBy: { createdAt: "asc" } }))
      .map((e) => e.message);
    expect(messages).toEqual(["now a platform key (names platform:admin)", "no longer a platform key (platform:admin removed)"]);
  });
});

describe("who may name platform:admin", () => {
  it("a tenant owner may not (403 naming it), in a new key or by widening one; platform:* is no permission at all (400)", async () => {
    const res = await h.api("POST", keysPath(acme.org.id), { key: acme.key, body: { name: "owner platform", permissions: ["platform:admin"] } });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe("FORBIDDEN");
    expect(res.body.message).toContain("platform:admin");
    const plain = await makeKey(acme.org.id, ["devices:read"], acme.key);
    const widen = await h.api("PUT", `${keysPath(acme.org.id)}/${plain.id}`, { key: acme.key, body: { permissions: ["devices:read", "platform:admin"] } });
    expect(widen.status).toBe(403);
    expect(widen.body.message).toContain("platform:admin");
    expect((await h.services.prisma.apiKey.findUniqueOrThrow({ where: { id: plain.id } })).permissions).toEqual(["devices:read"]);
    expect(await h.services.prisma.apiKey.count({ where: { name: "owner platform" } })).toBe(0);

    const wildcard = await h.api("POST", keysPath(acme.org.id), { key: ADMIN_KEY, body: { name: "platform wildcard", permissions: ["platform:*"] } });
    expect(wildcard.status).toBe(400);
    expect(issuePaths(wildcard.body)).toContain("permissions.0");
  });

  it("a tenant owner's * grants no platform power and the tenant context says so", async () => {
    const context = await h.api("GET", "/api/v1/tenant/context", { key: acme.key });
    expect(context.body.isSuperAdmin).toBe(false);
    expect(context.body.permissions).toEqual(STAR_PERMISSIONS);
    const token = await h.login(acme.user.email, acme.user.password);
    const session = await h.api("GET", "/api/v1/tenant/context", { key: null, token });
    expect(session.body).toMatchObject({ credential: "session", isSuperAdmin: false });
    expect(session.body.permissions).not.toContain("platform:admin");
  });
});

describe("Super Admin users and the bootstrap key", () => {
  it("a Super Admin signed in (bearer) keeps every platform power, and the context lists platform:admin", async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const context = await h.api("GET", "/api/v1/tenant/context", { key: null, token });
    expect(context.body).toMatchObject({ credential: "session", isSuperAdmin: true });
    // In their own organization the Super Admin is owner, and the owner role names remote access.
    expect(context.body.permissions).toEqual(ALL_PERMISSIONS);
    // Super Admin power is no wildcard into a tenant's devices: switched into one where they hold no role, no remote access.
    const sw = await h.api("POST", "/api/v1/tenant/switch", { key: null, token, body: { organizationId: acme.org.id, reason: "platform key test" } });
    expect(sw.status).toBe(200);
    const switched = await h.api("GET", "/api/v1/tenant/context", { key: null, token });
    expect(switched.body).toMatchObject({ organization: { id: acme.org.id }, isSuperAdmin: true });
    expect(switched.body.permissions).toEqual(ALL_PERMISSIONS.filter((p) => !NAMED_ONLY_REMOTE.includes(p)));
    expect((await h.api("POST", "/api/v1/tenant/return", { key: null, token })).status).toBe(200);
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: null, token })).status).toBe(200);
    expect((await h.api("GET", "/api/v1/organizations/stats", { key: null, token })).status).toBe(200);
    const spare = await h.createTenant("Spare For Session");
    expect((await h.api("POST", `/api/v1/organizations/${spare.org.id}/disable`, { key: null, token, body: { reason: "session test" } })).status).toBe(200);
    expect((await h.services.prisma.organization.findUniqueOrThrow({ where: { id: spare.org.id } })).status).toBe("disabled");
  });

  it("the bootstrap key of a new database names platform:admin and is listed as a platform key", async () => {
    const row = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(ADMIN_KEY) } });
    expect(row).toMatchObject({ organizationId: h.defaultOrgId, permissions: ["*", "platform:admin"] });
    const got = await h.api("GET", `${keysPath(h.defaultOrgId)}/${row.id}`);
    expect(got.body.platform).toBe(true);
    const context = await h.api("GET", "/api/v1/tenant/context");
    expect(context.body.isSuperAdmin).toBe(true);
    const bootstrap = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "system.bootstrap" } });
    expect(bootstrap.message).toContain("platform API key");
  });
});
