// Roles: the permission catalogue, system roles, custom roles per organization.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { ALL_PERMISSIONS, PERMISSION_CATALOGUE } from "../../../src/trpc/permissions.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { issuePaths, personWithRole } from "../members/identity-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Roles");
  globex = await h.createTenant("Globex Roles");
});
afterAll(() => h?.close());

async function createRole(t: Tenant, body: Record<string, unknown>, key = t.key) {
  return h.api("POST", "/api/v1/roles", { key, body });
}

describe("GET /roles/permissions", () => {
  it("answers the catalogue from code, to any authenticated caller", async () => {
    const nothing = await h.createKey(acme.org.id, []);
    const res = await h.api("GET", "/api/v1/roles/permissions", { key: nothing });
    expect(res.status).toBe(200);
    expect(res.body.wildcard).toBe("*");
    expect(res.body.items.map((p: { key: string }) => p.key)).toEqual(ALL_PERMISSIONS);
    expect(res.body.items).toContainEqual({ key: "devices:write", resource: "devices", action: "write", description: PERMISSION_CATALOGUE["devices:write"] });
    expect((await h.api("GET", "/api/v1/roles/permissions", { key: null })).status).toBe(401);
  });
});

describe("system roles", () => {
  it("GET /system-roles lists owner, admin, operator and viewer", async () => {
    const res = await h.api("GET", "/api/v1/system-roles", { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.items.map((r: { name: string }) => r.name)).toEqual(["owner", "admin", "operator", "viewer"]);
    for (const role of res.body.items) expect(role).toMatchObject({ system: true, organizationId: null });
    // remote access is granted only by naming it (docs/remote-access.md): the owner names it beside *
    expect(res.body.items[0].permissions).toEqual(["*", "remote:shell", "remote:exec", "remote:port-forward", "remote:files-read", "remote:files-write", "remote:manage"]);
  });

  it("cannot be edited or deleted (409 saying why)", async () => {
    const admin = (await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "admin" } })).id;
    const edit = await h.api("PATCH", `/api/v1/roles/${admin}`, { key: acme.key, body: { permissions: ["*"] } });
    expect(edit.status).toBe(409);
    expect(edit.body.message).toContain("System role \"admin\" cannot be edited");
    const del = await h.api("DELETE", `/api/v1/roles/${admin}`, { key: acme.key });
    expect(del.status).toBe(409);
    expect(del.body.message).toContain("cannot be deleted");
    const row = await h.services.prisma.role.findUniqueOrThrow({ where: { id: admin } });
    expect(row.permissions).not.toContain("*");
  });
});

describe("custom roles", () => {
  it("POST /roles creates one in the caller's organization (201) and GET /roles lists it with the system roles", async () => {
    const res = await createRole(acme, { name: "Field tech", description: "fixes devices", permissions: ["devices:read", "devices:write", "devices:write"] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: "Field tech", description: "fixes devices", permissions: ["devices:read", "devices:write"], system: false, organizationId: acme.org.id });
    const row = await h.services.prisma.role.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.organizationId).toBe(acme.org.id);

    const theirs = await createRole(globex, { name: "Globex only", permissions: ["devices:read"] });
    expect(theirs.status).toBe(201);

    const list = await h.api("GET", "/api/v1/roles", { key: acme.key });
    expect(list.status).toBe(200);
    const names = list.body.items.map((r: { name: string }) => r.name);
    expect(names.slice(0, 4)).toEqual(["owner", "admin", "operator", "viewer"]);
    expect(names).toContain("Field tech");
    expect(names).not.toContain("Globex only");
    expect(list.body.total).toBe(5);
    for (const role of list.body.items) expect(Object.keys(role)).toEqual(expect.arrayContaining(["id", "name", "description", "permissions", "system"]));
  });

  it("pages across the system roles into the custom ones (custom roles by name)", async () => {
    const t = await h.createTenant("Paging Roles");
    for (const name of ["Zulu", "Alpha", "Mike"]) expect((await createRole(t, { name, permissions: [] })).status).toBe(201);
    const page = await h.api("GET", "/api/v1/roles?limit=3&offset=3", { key: t.key });
    expect(page.body.items.map((r: { name: string }) => r.name)).toEqual(["viewer", "Alpha", "Mike"]);
    expect(page.body).toMatchObject({ total: 7, hasMore: true });
    const last = await h.api("GET", "/api/v1/roles?limit=3&offset=6", { key: t.key });
    expect(last.body.items.map((r: { name: string }) => r.name)).toEqual(["Zulu"]);
    expect(last.body.hasMore).toBe(false);
  });

  it.each([
    ["name", { permissions: [] }],
    ["name", { name: "x", permissions: [] }],
    ["name", { name: "n".repeat(51), permissions: [] }],
    ["description", { name: "ok role", description: "d".repeat(501), permissions: [] }],
    ["permissions", { name: "ok role" }],
    ["permissions.0", { name: "ok role", permissions: ["devices:dance"] }],
  ])("answers 400 naming %s", async (field, body) => {
    const res = await createRole(acme, body);
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain(field);
  });

  it("refuses a duplicate name, also case-insensitively and against system role names (409)", async () => {
    expect((await createRole(acme, { name: "Auditors", permissions: ["audit:read"] })).status).toBe(201);
    const dup = await createRole(acme, { name: "auditors", permissions: [] });
    expect(dup.status).toBe(409);
    expect(dup.body.message).toContain("already exists");
    const system = await createRole(acme, { name: "Owner", permissions: [] });
    expect(system.status).toBe(409);
    expect(system.body.message).toContain("system role");
    // The same name in another organization is fine.
    expect((await createRole(globex, { name: "Auditors", permissions: ["audit:read"] })).status).toBe(201);
  });

  it("never puts into a role more than the caller holds (403)", async () => {
    const admin = await personWithRole(h, acme.org.id, "admin");
    const star = await createRole(acme, { name: "Almighty", permissions: ["*"] }, admin.key);
    expect(star.status).toBe(403);
    const platform = await createRole(acme, { name: "Platform", permissions: ["platform:admin"] });
    expect(platform.status).toBe(403);
    expect(await h.services.prisma.role.count({ where: { name: { in: ["Almighty", "Platform"] } } })).toBe(0);
    expect((await createRole(acme, { name: "Deployers", permissions: ["deployments:*"] }, admin.key)).status).toBe(201);
  });

  it("GET /roles/{id}: own custom and system roles; others' and unknown ones are 404", async () => {
    const mine = await createRole(acme, { name: "Readers", permissions: ["devices:read"] });
    const theirs = await createRole(globex, { name: "Secret globex role", permissions: [] });
    const viewer = (await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "viewer" } })).id;
    expect((await h.api("GET", `/api/v1/roles/${mine.body.id}`, { key: acme.key })).body).toEqual(mine.body);
    expect((await h.api("GET", `/api/v1/roles/${viewer}`, { key: acme.key })).body.name).toBe("viewer");
    expect((await h.api("GET", `/api/v1/roles/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", "/api/v1/roles/00000000-0000-4000-8000-000000000000", { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", "/api/v1/roles/not-a-uuid", { key: acme.key })).status).toBe(400);
  });

  it("PATCH /roles/{id} changes a custom role; its members get the change on their next request", async () => {
    const role = await createRole(acme, { name: "Watchers", permissions: ["telemetry:read"] });
    const member = await personWithRole(h, acme.org.id, "Watchers");
    const readOrg = () => h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key: member.key });
    expect((await readOrg()).status).toBe(403);
    const res = await h.api("PATCH", `/api/v1/roles/${role.body.id}`, { key: acme.key, body: { name: "Org watchers", description: "reads", permissions: ["telemetry:read", "organizations:read"] } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: "Org watchers", description: "reads", permissions: ["telemetry:read", "organizations:read"] });
    expect((await h.services.prisma.role.findUniqueOrThrow({ where: { id: role.body.id } })).name).toBe("Org watchers");
    expect((await readOrg()).status).toBe(200);
  });

  it("PATCH: 400 for invalid fields, 409 for a taken name, 404 for another tenant's role, 403 beyond the caller", async () => {
    const role = await createRole(acme, { name: "Patchable", permissions: ["devices:read"] });
    const path = `/api/v1/roles/${role.body.id}`;
    const bad = await h.api("PATCH", path, { key: acme.key, body: { permissions: ["nope"] } });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("permissions.0");
    expect((await h.api("PATCH", path, { key: acme.key, body: { name: "Auditors" } })).status).toBe(409);
    expect((await h.api("PATCH", path, { key: acme.key, body: { name: "viewer" } })).status).toBe(409);
    expect((await h.api("PATCH", path, { key: globex.key, body: { name: "Hijacked" } })).status).toBe(404);
    const admin = await personWithRole(h, acme.org.id, "admin");
    expect((await h.api("PATCH", path, { key: admin.key, body: { permissions: ["*"] } })).status).toBe(403);
    // Sending the unchanged list back (a GET-edit-PUT round trip) needs nothing extra.
    expect((await h.api("PATCH", path, { key: admin.key, body: { permissions: ["devices:read"], description: "same" } })).status).toBe(200);
    expect((await h.services.prisma.role.findUniqueOrThrow({ where: { id: role.body.id } })).name).toBe("Patchable");
  });

  it("DELETE /roles/{id}: removes an unused custom role; one in use or offered by an invitation is 409", async () => {
    const unused = await createRole(acme, { name: "Temporary", permissions: [] });
    const del = await h.api("DELETE", `/api/v1/roles/${unused.body.id}`, { key: acme.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: unused.body.id, deleted: true });
    expect(await h.services.prisma.role.findUnique({ where: { id: unused.body.id } })).toBeNull();
    expect((await h.api("DELETE", `/api/v1/roles/${unused.body.id}`, { key: acme.key })).status).toBe(404);

    const used = await createRole(acme, { name: "In use", permissions: ["devices:read"] });
    await personWithRole(h, acme.org.id, "In use");
    const inUse = await h.api("DELETE", `/api/v1/roles/${used.body.id}`, { key: acme.key });
    expect(inUse.status).toBe(409);
    expect(inUse.body.message).toContain("assigned to 1 member;");
    expect(await h.services.prisma.role.findUnique({ where: { id: used.body.id } })).not.toBeNull();

    const offered = await createRole(acme, { name: "Offered", permissions: ["devices:read"] });
    const invite = await h.api("POST", "/api/v1/invitations", { key: acme.key, body: { email: "new.hire@example.test", roleId: offered.body.id } });
    expect(invite.status).toBe(201);
    expect((await h.api("DELETE", `/api/v1/roles/${offered.body.id}`, { key: acme.key })).status).toBe(409);

    const theirs = await createRole(globex, { name: "Globex disposable", permissions: [] });
    expect((await h.api("DELETE", `/api/v1/roles/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect(await h.services.prisma.role.findUnique({ where: { id: theirs.body.id } })).not.toBeNull();
  });
});

describe("security of every procedure", () => {
  it("401 / 403 / cross-tenant 404", async () => {
    const role = await createRole(acme, { name: "Secured role", permissions: ["devices:read"] });
    const item = `/api/v1/roles/${role.body.id}`;
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/roles/permissions" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/system-roles", permission: "roles:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/roles", permission: "roles:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/roles", body: { name: "Never made", permissions: [] }, permission: "roles:write" });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "roles:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "PATCH", path: item, body: { name: "Renamed" }, permission: "roles:write", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "roles:write", foreignPath: item });
    expect(await h.services.prisma.role.findUnique({ where: { id: role.body.id } })).toMatchObject({ name: "Secured role" });
    expect(await h.services.prisma.role.count({ where: { name: "Never made" } })).toBe(0);
  });

  it("works through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const roles = await client.roles.list.query({});
    expect(roles.items.some((r) => r.name === "owner")).toBe(true);
    const system = await client.systemRoles.list.query();
    expect(system.items).toHaveLength(4);
  });
});
