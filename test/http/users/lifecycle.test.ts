// Enable, disable, delete, Super Admin privileges and the bulk operation: the rules that
// keep the installation administrable, and that a disabled user stops at once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { adminUser, createPerson, issuePaths, PASSWORD, randomId } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Lifecycle");
  globex = await h.createTenant("Globex Lifecycle");
});
afterAll(() => h?.close());

const action = (id: string, verb: string, opts: { key?: string; token?: string } = {}) =>
  h.api("POST", `/api/v1/users/${id}/${verb}`, { body: {}, ...opts, key: opts.token ? null : opts.key });

describe("POST /users/{id}/disable and /enable", () => {
  it("stops a disabled user's tokens, refresh tokens and keys at once; enabling restores keys but not sessions", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "admin" } });
    const key = await h.createKey(acme.org.id, ["*"], { userId: p.id });
    const login = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: p.email, password: PASSWORD } });
    const { accessToken, refreshToken } = login.body;
    const read = (opts: { key?: string | null; token?: string }) => h.api("GET", `/api/v1/organizations/${acme.org.id}`, opts);
    expect((await read({ key: null, token: accessToken })).status).toBe(200);
    expect((await read({ key })).status).toBe(200);
    const before = await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } });

    const res = await action(p.id, "disable");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: p.id, status: "disabled" });
    const after = await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } });
    expect(after.credentialsVersion).toBe(before.credentialsVersion + 1);
    expect(await h.services.prisma.session.count({ where: { userId: p.id, revokedAt: null } })).toBe(0);

    expect((await read({ key: null, token: accessToken })).status).toBe(401);
    expect((await read({ key })).status).toBe(401);
    expect((await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken } })).status).toBe(401);
    expect((await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: p.email, password: PASSWORD } })).status).toBe(401);

    const again = await action(p.id, "disable");
    expect(again.status).toBe(409);
    expect(again.body.message).toBe("User already disabled");

    const enabled = await action(p.id, "enable");
    expect(enabled.body.status).toBe("active");
    expect((await read({ key })).status).toBe(200);
    expect((await read({ key: null, token: accessToken })).status).toBe(401);
    expect((await action(p.id, "enable")).status).toBe(409);
  });

  it("never disables yourself", async () => {
    const admin = await adminUser(h);
    const res = await action(admin.id, "disable");
    expect(res.status).toBe(409);
    expect(res.body.message).toBe("You cannot disable your own account");
  });

  it("answers 404 for unknown users, 400 for a bad id, 403 for non Super Admins", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    for (const verb of ["enable", "disable"]) {
      expect((await action(randomId(), verb)).status).toBe(404);
      const bad = await action("nope", verb);
      expect(bad.status).toBe(400);
      expect(issuePaths(bad.body)).toContain("id");
      expect((await action(p.id, verb, { key: acme.key })).status).toBe(403);
      await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/users/${p.id}/${verb}`, body: {}, permission: "platform:admin" });
    }
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } })).status).toBe("active");
  });
});

describe("POST and DELETE /users/{id}/superuser", () => {
  it("grants and revokes Super Admin, effective on the next request", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    // A key naming platform:admin acts as a platform key only while its creator is a Super
    // Admin; a `*` key stays inside its organization either way (docs/identity.md).
    const key = await h.createKey(acme.org.id, ["*", "platform:admin"], { userId: p.id });
    const starKey = await h.createKey(acme.org.id, ["*"], { userId: p.id });
    expect((await h.api("GET", `/api/v1/organizations/${globex.org.id}`, { key })).status).toBe(404);

    const granted = await h.api("POST", `/api/v1/users/${p.id}/superuser`);
    expect(granted.status).toBe(200);
    expect(granted.body.isSuperAdmin).toBe(true);
    expect((await h.api("GET", `/api/v1/organizations/${globex.org.id}`, { key })).status).toBe(200);
    expect((await h.api("GET", `/api/v1/organizations/${globex.org.id}`, { key: starKey })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/users/${p.id}/superuser`)).status).toBe(409);

    const revoked = await h.api("DELETE", `/api/v1/users/${p.id}/superuser`);
    expect(revoked.body.isSuperAdmin).toBe(false);
    expect((await h.api("GET", `/api/v1/organizations/${globex.org.id}`, { key })).status).toBe(404);
    const notOne = await h.api("DELETE", `/api/v1/users/${p.id}/superuser`);
    expect(notOne.status).toBe(409);
    expect(notOne.body.message).toBe("User is not a Super Admin");
  });

  it("never revokes the last active Super Admin (409)", async () => {
    const admin = await adminUser(h);
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const res = await h.api("DELETE", `/api/v1/users/${admin.id}/superuser`, { key: null, token });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("last active Super Admin");

    // A disabled Super Admin does not count as the remaining one.
    const dormant = await createPerson(h, { superAdmin: true, status: "disabled" });
    expect((await h.api("DELETE", `/api/v1/users/${admin.id}/superuser`)).status).toBe(409);
    // With a second active one, the first may step down (and then no longer acts as one).
    const second = await createPerson(h, { superAdmin: true });
    const stepDown = await h.api("DELETE", `/api/v1/users/${admin.id}/superuser`, { key: null, token });
    expect(stepDown.status).toBe(200);
    expect((await h.api("POST", `/api/v1/users/${admin.id}/superuser`, { key: null, token })).status).toBe(403);
    // Restore through the database: the other Super Admin has no key here.
    await h.services.prisma.user.update({ where: { id: admin.id }, data: { isSuperAdmin: true } });
    await h.services.prisma.user.deleteMany({ where: { id: { in: [dormant.id, second.id] } } });
  });

  it("is for Super Admins only", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    expect((await h.api("POST", `/api/v1/users/${acme.user.id}/superuser`, { key: acme.key })).status).toBe(403);
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: acme.user.id } })).isSuperAdmin).toBe(false);
    expect((await h.api("POST", `/api/v1/users/${randomId()}/superuser`)).status).toBe(404);
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/users/${p.id}/superuser`, permission: "platform:admin" });
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/users/${p.id}/superuser`, permission: "platform:admin" });
  });
});

describe("DELETE /users/{id}", () => {
  it("deletes the account, its memberships and sessions, and revokes its keys", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "operator" } });
    const key = await h.createKey(acme.org.id, ["*"], { userId: p.id });
    const token = await h.login(p.email, PASSWORD);
    const res = await h.api("DELETE", `/api/v1/users/${p.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: p.id, deleted: true });
    const db = h.services.prisma;
    expect(await db.user.count({ where: { id: p.id } })).toBe(0);
    expect(await db.membership.count({ where: { userId: p.id } })).toBe(0);
    expect((await db.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(key) } })).revokedAt).not.toBeNull();
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key })).status).toBe(401);
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: null, token })).status).toBe(401);
    expect((await h.api("DELETE", `/api/v1/users/${p.id}`)).status).toBe(404);
  });

  it("refuses yourself and an organization's last owner (409)", async () => {
    const self = await h.api("DELETE", `/api/v1/users/${(await adminUser(h)).id}`);
    expect(self.status).toBe(409);
    const t = await h.createTenant("Owned Once");
    const owner = await h.api("DELETE", `/api/v1/users/${t.user.id}`);
    expect(owner.status).toBe(409);
    expect(owner.body.message).toContain(`last owner of "${t.org.name}"`);
    expect(await h.services.prisma.user.count({ where: { id: t.user.id } })).toBe(1);
  });

  it("is for Super Admins only", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    expect((await h.api("DELETE", `/api/v1/users/${p.id}`, { key: acme.key })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/users/${p.id}`, permission: "platform:admin" });
    expect(await h.services.prisma.user.count({ where: { id: p.id } })).toBe(1);
  });
});

describe("POST /users/bulk", () => {
  it("disables, enables and deletes lists of users with an outcome per user", async () => {
    const a = await createPerson(h);
    const b = await createPerson(h, { status: "disabled" });
    const admin = await adminUser(h);
    const ghost = randomId();
    const disable = await h.api("POST", "/api/v1/users/bulk", { body: { action: "disable", userIds: [a.id, b.id, ghost, admin.id] } });
    expect(disable.status).toBe(200);
    expect(disable.body).toMatchObject({ action: "disable", succeeded: 1, failed: 3 });
    expect(disable.body.results).toEqual([
      { id: a.id, outcome: "done" },
      { id: b.id, outcome: "skipped", message: "User already disabled" },
      { id: ghost, outcome: "not_found", message: "User not found" },
      { id: admin.id, outcome: "refused", message: "You cannot disable your own account" },
    ]);
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: a.id } })).status).toBe("disabled");

    const enable = await h.api("POST", "/api/v1/users/bulk", { body: { action: "enable", userIds: [a.id, b.id] } });
    expect(enable.body.succeeded).toBe(2);
    expect(await h.services.prisma.user.count({ where: { id: { in: [a.id, b.id] }, status: "active" } })).toBe(2);

    const t = await h.createTenant("Bulk Owners");
    const del = await h.api("POST", "/api/v1/users/bulk", { body: { action: "delete", userIds: [a.id, b.id, t.user.id] } });
    expect(del.body.succeeded).toBe(2);
    expect(del.body.results[2]).toMatchObject({ id: t.user.id, outcome: "refused" });
    expect(await h.services.prisma.user.count({ where: { id: { in: [a.id, b.id, t.user.id] } } })).toBe(1);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "users.bulk" }, orderBy: { createdAt: "desc" } });
    expect(audit?.changes).toMatchObject({ action: "delete" });
  });

  it("answers 400 naming the field and is for Super Admins only", async () => {
    const badAction = await h.api("POST", "/api/v1/users/bulk", { body: { action: "promote", userIds: [acme.user.id] } });
    expect(badAction.status).toBe(400);
    expect(issuePaths(badAction.body)).toContain("action");
    expect(issuePaths((await h.api("POST", "/api/v1/users/bulk", { body: { action: "enable", userIds: [] } })).body)).toContain("userIds");
    expect(issuePaths((await h.api("POST", "/api/v1/users/bulk", { body: { action: "enable", userIds: Array(101).fill(acme.user.id) } })).body)).toContain("userIds");
    const body = { action: "disable", userIds: [acme.user.id] };
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/users/bulk", body, permission: "platform:admin" });
    expect((await h.api("POST", "/api/v1/users/bulk", { key: acme.key, body })).status).toBe(403);
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: acme.user.id } })).status).toBe("active");
  });
});
