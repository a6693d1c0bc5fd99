// A user's memberships from the user's side (Super Admin): add, change role, remove.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { createPerson, issuePaths, PASSWORD, randomId, systemRole } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Memberships");
  globex = await h.createTenant("Globex Memberships");
});
afterAll(() => h?.close());

describe("POST /users/{id}/organizations", () => {
  it("makes the user a member with the role (201); the role applies at once", async () => {
    const p = await createPerson(h);
    const viewer = await systemRole(h, "viewer");
    const res = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: acme.org.id, roleId: viewer.id } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ userId: p.id, organizationId: acme.org.id, organizationName: acme.org.name, organizationSlug: acme.org.slug, roleId: viewer.id, roleName: "viewer" });
    const m = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: acme.org.id, userId: p.id } } });
    expect(m.roleId).toBe(viewer.id);
    const token = await h.login(p.email, PASSWORD);
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: null, token })).status).toBe(200);
    expect((await h.api("POST", `/api/v1/organizations/${acme.org.id}/rename`, { key: null, token, body: { name: "Viewer Rename" } })).status).toBe(403);

    const dup = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: acme.org.id, roleId: viewer.id } });
    expect(dup.status).toBe(409);
    expect(dup.body.message).toBe("User is already a member of this organization");
  });

  it("accepts the organization's custom roles but not another organization's (404)", async () => {
    const p = await createPerson(h);
    const custom = await h.services.prisma.role.create({ data: { organizationId: globex.org.id, name: "auditor", permissions: ["audit:read"] } });
    const wrong = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: acme.org.id, roleId: custom.id } });
    expect(wrong.status).toBe(404);
    expect(wrong.body.message).toBe("Role not found");
    const right = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: globex.org.id, roleId: custom.id } });
    expect(right.status).toBe(201);
    expect(right.body.roleName).toBe("auditor");
  });

  it("answers 404 for an unknown user or organization, 400 naming the field, 403 for non Super Admins", async () => {
    const p = await createPerson(h);
    const viewer = await systemRole(h, "viewer");
    expect((await h.api("POST", `/api/v1/users/${randomId()}/organizations`, { body: { organizationId: acme.org.id, roleId: viewer.id } })).status).toBe(404);
    const noOrg = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: randomId(), roleId: viewer.id } });
    expect(noOrg.status).toBe(404);
    expect(noOrg.body.message).toBe("Organization not found");
    const bad = await h.api("POST", `/api/v1/users/${p.id}/organizations`, { body: { organizationId: "x" } });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toEqual(expect.arrayContaining(["organizationId", "roleId"]));
    const body = { organizationId: acme.org.id, roleId: viewer.id };
    expect((await h.api("POST", `/api/v1/users/${p.id}/organizations`, { key: acme.key, body })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/users/${p.id}/organizations`, body, permission: "platform:admin" });
    expect(await h.services.prisma.membership.count({ where: { userId: p.id } })).toBe(0);
  });
});

describe("PUT /users/{id}/role", () => {
  it("changes the role in the named organization (default: the caller's), never demoting the last owner", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    const operator = await systemRole(h, "operator");
    const res = await h.api("PUT", `/api/v1/users/${p.id}/role`, { body: { organizationId: acme.org.id, roleId: operator.id } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: p.id, organizationId: acme.org.id, roleName: "operator" });
    const m = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: acme.org.id, userId: p.id } } });
    expect(m.roleId).toBe(operator.id);

    // Without organizationId: the organization of the call (the admin key acts in default).
    expect((await h.api("PUT", `/api/v1/users/${p.id}/role`, { body: { roleId: operator.id } })).status).toBe(404);

    const t = await h.createTenant("Single Owner"); // the security suite adds owners to acme
    const lastOwner = await h.api("PUT", `/api/v1/users/${t.user.id}/role`, { body: { organizationId: t.org.id, roleId: operator.id } });
    expect(lastOwner.status).toBe(409);
    expect(lastOwner.body.message).toContain("last owner");
  });

  it("answers 404 for an unknown role, 400 naming the field, and is secured", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    expect((await h.api("PUT", `/api/v1/users/${p.id}/role`, { body: { organizationId: acme.org.id, roleId: randomId() } })).status).toBe(404);
    const bad = await h.api("PUT", `/api/v1/users/${p.id}/role`, { body: {} });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("roleId");
    const body = { organizationId: acme.org.id, roleId: (await systemRole(h, "admin")).id };
    expect((await h.api("PUT", `/api/v1/users/${p.id}/role`, { key: acme.key, body })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "PUT", path: `/api/v1/users/${p.id}/role`, body, permission: "platform:admin" });
  });
});

describe("DELETE /users/{id}/organizations/{orgId}", () => {
  it("removes the membership; the user's sessions there end and keys there stop", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "operator" } });
    const key = await h.createKey(acme.org.id, ["*"], { userId: p.id });
    const token = await h.login(p.email, PASSWORD);
    const res = await h.api("DELETE", `/api/v1/users/${p.id}/organizations/${acme.org.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ userId: p.id, organizationId: acme.org.id, removed: true });
    expect(await h.services.prisma.membership.count({ where: { userId: p.id } })).toBe(0);
    expect(await h.services.prisma.user.count({ where: { id: p.id } })).toBe(1);
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key })).status).toBe(401);
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: null, token })).status).toBe(401);
    const again = await h.api("DELETE", `/api/v1/users/${p.id}/organizations/${acme.org.id}`);
    expect(again.status).toBe(404);
    expect(again.body.message).toBe("Member not found");
  });

  it("never removes the last owner, and is secured", async () => {
    const t = await h.createTenant("Lonely Owner");
    const res = await h.api("DELETE", `/api/v1/users/${t.user.id}/organizations/${t.org.id}`);
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("last owner");
    expect((await h.api("DELETE", `/api/v1/users/${acme.user.id}/organizations/${acme.org.id}`, { key: acme.key })).status).toBe(403);
    const bad = await h.api("DELETE", `/api/v1/users/${acme.user.id}/organizations/nope`);
    expect(issuePaths(bad.body)).toContain("orgId");
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/users/${acme.user.id}/organizations/${acme.org.id}`, permission: "platform:admin" });
    expect(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id, userId: acme.user.id } })).toBe(1);
  });
});
