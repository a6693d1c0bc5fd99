// Users: create, list, get, update and stats, and who may see whom.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { verifyPassword } from "../../../src/lib/crypto.js";
import { createPerson, issuePaths, lastMail, randomId, superAdminKeyWithoutPlatform, tokenIn } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Users");
  globex = await h.createTenant("Globex Users");
});
afterAll(() => h?.close());

const USER_FIELDS = [
  "id", "email", "name", "status", "isSuperAdmin", "emailVerified", "emailVerifiedAt", "hasPassword", "identity",
  "lastLoginAt", "lastActivityAt", "createdAt", "updatedAt", "organizations",
];

describe("POST /users", () => {
  it("creates a user with a password (201): e-mail lower-cased, password hashed and never returned", async () => {
    const res = await h.api("POST", "/api/v1/users", { body: { email: "  Jane.Doe@Example.TEST ", name: "Jane Doe", password: "correct-horse-battery" } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...USER_FIELDS].sort());
    expect(res.body).toMatchObject({ email: "jane.doe@example.test", name: "Jane Doe", status: "active", isSuperAdmin: false, emailVerified: false, hasPassword: true, identity: null, organizations: [] });
    expect(res.text).not.toContain("correct-horse-battery");
    expect(res.text).not.toMatch(/passwordHash|scrypt/);

    const row = await h.services.prisma.user.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.passwordHash).toMatch(/^scrypt\$/);
    expect(await verifyPassword("correct-horse-battery", row.passwordHash)).toBe(true);

    // The new address gets a verification mail; the audit entry does not carry the password.
    tokenIn((await lastMail(h, "jane.doe@example.test", "email-verification")).text, "fmv_");
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "users.create", entityId: res.body.id } });
    expect(JSON.stringify(audit.changes)).not.toContain("correct-horse-battery");
    expect(h.logs.join("")).not.toContain("correct-horse-battery");
  });

  it("without a password mails a link to choose one", async () => {
    const res = await h.api("POST", "/api/v1/users", { body: { email: "nopass@example.test", name: "No Pass" } });
    expect(res.status).toBe(201);
    expect(res.body.hasPassword).toBe(false);
    const mail = await lastMail(h, "nopass@example.test", "welcome");
    const code = tokenIn(mail.text, "fmp_");
    const done = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "chosen-by-the-user" } });
    expect(done.status).toBe(200);
    const row = await h.services.prisma.user.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(await verifyPassword("chosen-by-the-user", row.passwordHash)).toBe(true);
    expect(row.emailVerifiedAt).not.toBeNull(); // the mail reached its owner
  });

  it("answers 409 for an e-mail that exists in any letter case", async () => {
    await h.api("POST", "/api/v1/users", { body: { email: "dup@example.test", name: "One" } });
    const res = await h.api("POST", "/api/v1/users", { body: { email: "DUP@Example.Test", name: "Two" } });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "CONFLICT", message: "A user with this e-mail already exists" });
    expect(await h.services.prisma.user.count({ where: { email: "dup@example.test" } })).toBe(1);
  });

  it("answers 400 naming the field: e-mail, name, a password under 12 characters", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ name: "No Email" }, "email"],
      [{ email: "not-an-email", name: "x" }, "email"],
      [{ email: "a@example.test" }, "name"],
      [{ email: "a@example.test", name: "A", password: "elevenchars" }, "password"],
      [{ email: "a@example.test", name: "A", password: 123456789012 }, "password"],
    ];
    for (const [body, field] of cases) {
      const res = await h.api("POST", "/api/v1/users", { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(issuePaths(res.body)).toContain(field);
    }
    expect(await h.services.prisma.user.count({ where: { email: "a@example.test" } })).toBe(0);
  });

  it("is for Super Admins only", async () => {
    const body = { email: "sneaky@example.test", name: "Sneaky" };
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/users", body, permission: "platform:admin" });
    expect((await h.api("POST", "/api/v1/users", { key: acme.key, body })).status).toBe(403);
    expect((await h.api("POST", "/api/v1/users", { key: await superAdminKeyWithoutPlatform(h), body })).status).toBe(403);
    expect(await h.services.prisma.user.count({ where: { email: "sneaky@example.test" } })).toBe(0);
  });
});

describe("GET /users and GET /users/{id}", () => {
  it("lists every user for a Super Admin, with paging, search and filters", async () => {
    const db = h.services.prisma;
    const all = await h.api("GET", "/api/v1/users?limit=200");
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(await db.user.count());
    const page = await h.api("GET", "/api/v1/users?limit=2&offset=1");
    expect(page.body.items).toHaveLength(2);
    expect(page.body.hasMore).toBe(all.body.total > 3);

    await createPerson(h, { name: "Zebulon Searchable", status: "disabled" });
    const found = await h.api("GET", "/api/v1/users?search=zebulon");
    expect(found.body.items.map((u: { name: string }) => u.name)).toEqual(["Zebulon Searchable"]);
    const disabled = await h.api("GET", "/api/v1/users?status=disabled&limit=200");
    expect(disabled.body.total).toBe(await db.user.count({ where: { status: "disabled" } }));
    expect(disabled.body.items.every((u: { status: string }) => u.status === "disabled")).toBe(true);
    const supers = await h.api("GET", "/api/v1/users?superAdmin=true");
    expect(supers.body.items.map((u: { email: string }) => u.email)).toEqual([ADMIN_EMAIL]);
    const others = await h.api("GET", "/api/v1/users?superAdmin=false&limit=200");
    expect(others.body.total).toBe(await db.user.count({ where: { isSuperAdmin: false } }));
    const members = await h.api("GET", `/api/v1/users?organizationId=${acme.org.id}`);
    expect(members.body.items.map((u: { id: string }) => u.id)).toContain(acme.user.id);
    expect(members.body.total).toBe(await db.membership.count({ where: { organizationId: acme.org.id } }));

    const bad = await h.api("GET", "/api/v1/users?status=sleeping");
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("status");
  });

  it("shows anyone else only the members of their organization, and only that membership", async () => {
    const both = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    await h.services.prisma.membership.create({
      data: { organizationId: globex.org.id, userId: both.id, roleId: (await h.services.prisma.role.findFirstOrThrow({ where: { name: "viewer", organizationId: null } })).id },
    });
    const list = await h.api("GET", "/api/v1/users?limit=200", { key: acme.key });
    expect(list.status).toBe(200);
    const ids = list.body.items.map((u: { id: string }) => u.id);
    expect(ids).toContain(both.id);
    expect(ids).not.toContain(globex.user.id);
    expect(list.body.total).toBe(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id } }));

    const one = await h.api("GET", `/api/v1/users/${both.id}`, { key: acme.key });
    expect(one.status).toBe(200);
    expect(one.body.organizations.map((m: { organizationId: string }) => m.organizationId)).toEqual([acme.org.id]);
    const asAdmin = await h.api("GET", `/api/v1/users/${both.id}`);
    expect(asAdmin.body.organizations).toHaveLength(2);
    expect(asAdmin.body.organizations[0]).toMatchObject({ organizationId: acme.org.id, organizationSlug: acme.org.slug, roleName: "viewer" });

    expect((await h.api("GET", `/api/v1/users/${globex.user.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/users/${randomId()}`)).status).toBe(404);
    expect((await h.api("GET", "/api/v1/users/not-a-uuid")).status).toBe(400);
  });

  it("are secured (users:read)", async () => {
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/users", permission: "users:read" });
    await expectSecured(h, acme, globex, { method: "GET", path: `/api/v1/users/${acme.user.id}`, permission: "users:read", foreignPath: `/api/v1/users/${acme.user.id}` });
  });
});

describe("PATCH /users/{id}", () => {
  it("renames, and a new e-mail must be verified again", async () => {
    const p = await createPerson(h, { name: "Old Name" });
    await h.services.prisma.user.update({ where: { id: p.id }, data: { emailVerifiedAt: new Date() } });
    const renamed = await h.api("PATCH", `/api/v1/users/${p.id}`, { body: { name: "New Name" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ name: "New Name", email: p.email, emailVerified: true });

    const moved = await h.api("PATCH", `/api/v1/users/${p.id}`, { body: { email: "Moved.Person@Example.test" } });
    expect(moved.body).toMatchObject({ email: "moved.person@example.test", emailVerified: false, emailVerifiedAt: null });
    const code = tokenIn((await lastMail(h, "moved.person@example.test", "email-verification")).text, "fmv_");
    const verified = await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: { token: code } });
    expect(verified.status).toBe(200);
    expect((await h.api("GET", `/api/v1/users/${p.id}`)).body.emailVerified).toBe(true);
  });

  it("answers 409 for an e-mail in use, 400 naming the field, 404 for unknown users, 403 for non Super Admins", async () => {
    const p = await createPerson(h);
    const taken = await h.api("PATCH", `/api/v1/users/${p.id}`, { body: { email: ADMIN_EMAIL.toUpperCase() } });
    expect(taken.status).toBe(409);
    const bad = await h.api("PATCH", `/api/v1/users/${p.id}`, { body: { name: "" } });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("name");
    expect(issuePaths((await h.api("PATCH", `/api/v1/users/${p.id}`, { body: { email: "x" } })).body)).toContain("email");
    expect((await h.api("PATCH", `/api/v1/users/${randomId()}`, { body: { name: "Ghost" } })).status).toBe(404);
    expect((await h.api("PATCH", `/api/v1/users/${acme.user.id}`, { key: acme.key, body: { name: "Self Service" } })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "PATCH", path: `/api/v1/users/${p.id}`, body: { name: "X" }, permission: "platform:admin" });
  });
});

describe("GET /users/stats", () => {
  it("counts in the database what the caller may see", async () => {
    const t = await h.createTenant("Stats Users");
    await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" }, status: "disabled" });
    await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" }, withPassword: false });

    const mine = await h.api("GET", "/api/v1/users/stats", { key: t.key });
    expect(mine.status).toBe(200);
    expect(mine.body).toEqual({
      total: 3, active: 2, disabled: 1, superAdmins: 0, verified: 0, unverified: 3,
      withPassword: 2, withIdentityLink: 0, neverLoggedIn: 3, activeLast30Days: 0,
    });

    const db = h.services.prisma;
    const all = await h.api("GET", "/api/v1/users/stats");
    expect(all.body).toMatchObject({
      total: await db.user.count(),
      active: await db.user.count({ where: { status: "active" } }),
      disabled: await db.user.count({ where: { status: "disabled" } }),
      superAdmins: await db.user.count({ where: { isSuperAdmin: true } }),
      withPassword: await db.user.count({ where: { passwordHash: { not: null } } }),
    });
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/users/stats", permission: "users:read" });
  });
});
