// Invitations: create, list, get, revoke, resend; and the public details and accept by token.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { sha256Hex, verifyPassword } from "../../../src/lib/crypto.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { issuePaths, personWithRole, systemRoleId } from "../members/identity-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let viewerRole: string;
let operatorRole: string;
let counter = 0;

const freshEmail = () => `invitee-${++counter}-${Date.now()}@example.test`;
const publicPath = (token: string) => `/api/v1/public/invitations/${token}`;

async function invite(t: Tenant, body: Record<string, unknown>, key = t.key) {
  return h.api("POST", "/api/v1/invitations", { key, body });
}

async function mailsTo(email: string) {
  const rows = await h.services.prisma.mailOutbox.findMany({ where: { to: email }, orderBy: { createdAt: "asc" } });
  return rows.map((r) => ({ ...r, text: h.services.secrets.decrypt(r.bodySealed) }));
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Invites");
  globex = await h.createTenant("Globex Invites");
  viewerRole = await systemRoleId(h, "viewer");
  operatorRole = await systemRoleId(h, "operator");
});
afterAll(() => h?.close());

describe("POST /invitations", () => {
  it("answers 201 with the token once, stores only its hash, expires in 7 days and mails the invitee", async () => {
    const email = freshEmail();
    const before = Date.now();
    const res = await invite(acme, { email: email.toUpperCase(), roleId: operatorRole });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email,
      organizationId: acme.org.id,
      roleId: operatorRole,
      role: { id: operatorRole, name: "operator", system: true },
      status: "pending",
      invitedBy: acme.user.id,
      acceptedAt: null,
      revokedAt: null,
      sendCount: 1,
    });
    expect(res.body.token).toMatch(/^fmi_[0-9A-Za-z]{40}$/);
    const ttl = Date.parse(res.body.expiresAt) - before;
    expect(ttl).toBeGreaterThan(7 * 86_400_000 - 60_000);
    expect(ttl).toBeLessThan(7 * 86_400_000 + 60_000);

    const row = await h.services.prisma.invitation.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.tokenHash).toBe(sha256Hex(res.body.token));
    expect(JSON.stringify(row)).not.toContain(res.body.token);

    const mails = await mailsTo(email);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ template: "invitation", subject: "You are invited to join Acme Invites" });
    expect(mails[0].text).toContain(`/api/v1/public/invitations/${res.body.token}`);
    // The console's public page, where the person sets a name and password (no PUBLIC_URL here: the path alone).
    expect(mails[0].text).toContain(`Open it in the console: /invitations/${res.body.token} at the service's address`);
    expect(mails[0].bodySealed).not.toContain(res.body.token);

    const got = await h.api("GET", `/api/v1/invitations/${res.body.id}`, { key: acme.key });
    expect(got.status).toBe(200);
    expect(got.body.token).toBeUndefined();
    expect(got.text).not.toContain(res.body.token);
    expect(h.logs.join("\n")).not.toContain(res.body.token);
  });

  it("takes a shorter or longer expiry within 1..30 days", async () => {
    const res = await invite(acme, { email: freshEmail(), roleId: viewerRole, expiresInDays: 1 });
    expect(res.status).toBe(201);
    expect(Math.round((Date.parse(res.body.expiresAt) - Date.now()) / 3_600_000)).toBe(24);
    for (const expiresInDays of [0, 31, 1.5]) {
      const bad = await invite(acme, { email: freshEmail(), roleId: viewerRole, expiresInDays });
      expect(bad.status).toBe(400);
      expect(issuePaths(bad.body)).toContain("expiresInDays");
    }
  });

  it.each([
    ["email", { roleId: "00000000-0000-4000-8000-000000000000" }],
    ["email", { email: "not-an-address", roleId: "00000000-0000-4000-8000-000000000000" }],
    ["roleId", { email: "someone@example.test" }],
    ["roleId", { email: "someone@example.test", roleId: "viewer" }],
  ])("answers 400 naming %s", async (field, body) => {
    const res = await invite(acme, body);
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain(field);
  });

  it("answers 404 for an unknown role or another organization's custom role", async () => {
    expect((await invite(acme, { email: freshEmail(), roleId: "00000000-0000-4000-8000-000000000000" })).status).toBe(404);
    const theirs = await h.api("POST", "/api/v1/roles", { key: globex.key, body: { name: "Globex inviter role", permissions: [] } });
    const res = await invite(acme, { email: freshEmail(), roleId: theirs.body.id });
    expect(res.status).toBe(404);
    expect(res.body.message).toBe("Role not found");
  });

  it("refuses a member's address and a second pending invitation for the same address (409)", async () => {
    const member = await invite(acme, { email: acme.user.email, roleId: viewerRole });
    expect(member.status).toBe(409);
    expect(member.body.message).toContain("already a member");
    const email = freshEmail();
    expect((await invite(acme, { email, roleId: viewerRole })).status).toBe(201);
    const again = await invite(acme, { email: email.toUpperCase(), roleId: operatorRole });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain("resend");
    // Another organization may invite the same person.
    expect((await invite(globex, { email, roleId: viewerRole })).status).toBe(201);
  });

  it("never offers a role granting more than the inviter holds (403)", async () => {
    const admin = await personWithRole(h, acme.org.id, "admin");
    const email = freshEmail();
    const res = await invite(acme, { email, roleId: await systemRoleId(h, "owner") }, admin.key);
    expect(res.status).toBe(403);
    expect(await h.services.prisma.invitation.count({ where: { email } })).toBe(0);
    expect((await invite(acme, { email, roleId: await systemRoleId(h, "admin") }, admin.key)).status).toBe(201);
  });
});

describe("list, get, revoke, resend", () => {
  it("lists the organization's invitations newest first, filtered by status and searched by e-mail", async () => {
    const t = await h.createTenant("List Invites");
    const a = await invite(t, { email: "alpha@example.test", roleId: viewerRole });
    const b = await invite(t, { email: "bravo@example.test", roleId: viewerRole });
    await h.api("DELETE", `/api/v1/invitations/${a.body.id}`, { key: t.key });
    await invite(globex, { email: "charlie@example.test", roleId: viewerRole });

    const all = await h.api("GET", "/api/v1/invitations", { key: t.key });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ total: 2, hasMore: false });
    expect(all.body.items.map((i: { id: string }) => i.id)).toEqual([b.body.id, a.body.id]);
    for (const item of all.body.items) expect(item.token).toBeUndefined();
    const pending = await h.api("GET", "/api/v1/invitations?status=pending", { key: t.key });
    expect(pending.body.items.map((i: { id: string }) => i.id)).toEqual([b.body.id]);
    const revoked = await h.api("GET", "/api/v1/invitations?status=revoked", { key: t.key });
    expect(revoked.body.items.map((i: { id: string }) => i.id)).toEqual([a.body.id]);
    const search = await h.api("GET", "/api/v1/invitations?search=ALPHA", { key: t.key });
    expect(search.body.items.map((i: { id: string }) => i.id)).toEqual([a.body.id]);
    expect((await h.api("GET", "/api/v1/invitations?status=lost", { key: t.key })).status).toBe(400);
    const page = await h.api("GET", "/api/v1/invitations?limit=1", { key: t.key });
    expect(page.body).toMatchObject({ total: 2, hasMore: true });
  });

  it("answers 404 for an unknown invitation or another tenant's", async () => {
    const theirs = await invite(globex, { email: freshEmail(), roleId: viewerRole });
    expect((await h.api("GET", `/api/v1/invitations/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", "/api/v1/invitations/00000000-0000-4000-8000-000000000000", { key: acme.key })).status).toBe(404);
    expect((await h.api("DELETE", `/api/v1/invitations/${theirs.body.id}`, { key: acme.key })).status).toBe(404);
    expect((await h.api("POST", `/api/v1/invitations/${theirs.body.id}/resend`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/invitations/${theirs.body.id}`, { key: globex.key })).body.status).toBe("pending");
  });

  it("revokes: the token stops working (404) and a second revoke is 409", async () => {
    const made = await invite(acme, { email: freshEmail(), roleId: viewerRole });
    const res = await h.api("DELETE", `/api/v1/invitations/${made.body.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("revoked");
    expect(res.body.revokedAt).not.toBeNull();
    expect((await h.services.prisma.invitation.findUniqueOrThrow({ where: { id: made.body.id } })).revokedAt).not.toBeNull();
    expect((await h.api("GET", publicPath(made.body.token), { key: null })).status).toBe(404);
    expect((await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body: { name: "Too Late", password: "long-enough-password" } })).status).toBe(404);
    const again = await h.api("DELETE", `/api/v1/invitations/${made.body.id}`, { key: acme.key });
    expect(again.status).toBe(409);
    expect((await h.api("POST", `/api/v1/invitations/${made.body.id}/resend`, { key: acme.key })).status).toBe(409);
  });

  it("resends with a new token (the old one dies), a new expiry and a second mail", async () => {
    const email = freshEmail();
    const made = await invite(acme, { email, roleId: viewerRole, expiresInDays: 1 });
    const res = await h.api("POST", `/api/v1/invitations/${made.body.id}/resend`, { key: acme.key, body: { expiresInDays: 3 } });
    expect(res.status).toBe(200);
    expect(res.body.token).toMatch(/^fmi_/);
    expect(res.body.token).not.toBe(made.body.token);
    expect(res.body).toMatchObject({ id: made.body.id, status: "pending", sendCount: 2 });
    expect(Math.round((Date.parse(res.body.expiresAt) - Date.now()) / 86_400_000)).toBe(3);
    expect((await h.api("GET", publicPath(made.body.token), { key: null })).status).toBe(404);
    expect((await h.api("GET", publicPath(res.body.token), { key: null })).status).toBe(200);
    const mails = await mailsTo(email);
    expect(mails).toHaveLength(2);
    expect(mails[1].text).toContain(res.body.token);
    expect((await h.api("POST", `/api/v1/invitations/${made.body.id}/resend`, { key: acme.key, body: { expiresInDays: 99 } })).status).toBe(400);
  });

  it("revives an expired invitation on resend", async () => {
    const made = await invite(acme, { email: freshEmail(), roleId: viewerRole });
    await h.services.prisma.invitation.update({ where: { id: made.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    expect((await h.api("GET", `/api/v1/invitations/${made.body.id}`, { key: acme.key })).body.status).toBe("expired");
    const expired = await h.api("GET", publicPath(made.body.token), { key: null });
    expect(expired.status).toBe(409);
    expect(expired.body.message).toContain("expired");
    const res = await h.api("POST", `/api/v1/invitations/${made.body.id}/resend`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe("pending");
  });
});

describe("public invitation by token (no credentials)", () => {
  it("shows what the invitee needs, without any credential", async () => {
    const email = freshEmail();
    const made = await invite(acme, { email, roleId: operatorRole });
    const res = await h.api("GET", publicPath(made.body.token), { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      email,
      organization: { id: acme.org.id, name: "Acme Invites" },
      role: { id: operatorRole, name: "operator", description: expect.any(String) },
      expiresAt: made.body.expiresAt,
      userExists: false,
    });
    expect((await h.api("GET", publicPath("fmi_doesNotExist0000000000000000000000000000"), { key: null })).status).toBe(404);
    expect((await h.api("GET", publicPath("short"), { key: null })).status).toBe(400);
  });

  it("accept creates the account and the membership; the invitee signs in with the invited role; a replay is 409", async () => {
    const email = freshEmail();
    const made = await invite(acme, { email, roleId: operatorRole });
    const accept = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body: { name: "  New Person ", password: "a-good-long-password" } });
    expect(accept.status).toBe(200);
    expect(accept.body).toMatchObject({ organizationId: acme.org.id, organizationName: "Acme Invites", email, role: { id: operatorRole, name: "operator" }, userCreated: true });

    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email } });
    expect(user).toMatchObject({ id: accept.body.userId, name: "New Person", status: "active", isSuperAdmin: false });
    expect(user.emailVerifiedAt).not.toBeNull();
    expect(await verifyPassword("a-good-long-password", user.passwordHash)).toBe(true);
    const membership = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: acme.org.id, userId: user.id } } });
    expect(membership.roleId).toBe(operatorRole);
    const stored = await h.services.prisma.invitation.findUniqueOrThrow({ where: { id: made.body.id } });
    expect(stored.acceptedById).toBe(user.id);
    expect(stored.acceptedAt).not.toBeNull();
    expect(await h.services.prisma.auditEntry.count({ where: { action: "invitations.accept", entityId: made.body.id, outcome: "success" } })).toBe(1);

    const token = await h.login(email, "a-good-long-password");
    const me = await h.api("GET", `/api/v1/organizations/${acme.org.id}/members/${user.id}`, { key: null, token });
    expect(me.status).toBe(200);
    expect(me.body.role.name).toBe("operator");

    const replay = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body: { name: "Again", password: "a-good-long-password" } });
    expect(replay.status).toBe(409);
    expect(replay.body.message).toContain("already been accepted");
    expect((await h.api("GET", publicPath(made.body.token), { key: null })).status).toBe(409);
    expect((await h.api("GET", `/api/v1/invitations/${made.body.id}`, { key: acme.key })).body.status).toBe("accepted");
    expect((await h.api("DELETE", `/api/v1/invitations/${made.body.id}`, { key: acme.key })).status).toBe(409);
  });

  it("a new account needs a name and a password of at least 12 characters (400 naming the field)", async () => {
    const made = await invite(acme, { email: freshEmail(), roleId: viewerRole });
    const accept = (body: unknown) => h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body });
    const noName = await accept({ password: "a-good-long-password" });
    expect(noName.status).toBe(400);
    expect(issuePaths(noName.body)).toEqual(["name"]);
    const shortPassword = await accept({ name: "Shorty", password: "short" });
    expect(shortPassword.status).toBe(400);
    expect(issuePaths(shortPassword.body)).toEqual(["password"]);
    const noPassword = await accept({ name: "Nopass" });
    expect(noPassword.status).toBe(400);
    expect(issuePaths(noPassword.body)).toEqual(["password"]);
    expect((await h.api("GET", publicPath(made.body.token), { key: null })).status).toBe(200);
  });

  it("an existing account must prove itself with its password; a wrong one is 401 and changes nothing", async () => {
    const outsider = await personWithRole(h, globex.org.id, "viewer");
    const made = await invite(acme, { email: outsider.email, roleId: viewerRole });
    expect((await h.api("GET", publicPath(made.body.token), { key: null })).body.userExists).toBe(true);
    const accept = (body: unknown) => h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body });

    const missing = await accept({});
    expect(missing.status).toBe(400);
    expect(issuePaths(missing.body)).toEqual(["password"]);
    const wrong = await accept({ password: "not-the-password" });
    expect(wrong.status).toBe(401);
    expect(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id, userId: outsider.userId } })).toBe(0);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "invitations.accept", outcome: "failure", entityId: outsider.userId } })).toBe(1);

    const ok = await accept({ name: "Ignored For Existing", password: outsider.password });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ userId: outsider.userId, userCreated: false });
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: outsider.userId } })).name).toBe("A viewer");
    expect(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id, userId: outsider.userId } })).toBe(1);
  });

  it("an existing account may prove itself with its own bearer token instead; someone else's is 403", async () => {
    const person = await personWithRole(h, globex.org.id, "viewer");
    const other = await personWithRole(h, globex.org.id, "viewer");
    const made = await invite(acme, { email: person.email, roleId: viewerRole });
    const wrongBearer = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, token: await h.login(other.email, other.password), body: {} });
    expect(wrongBearer.status).toBe(403);
    const res = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, token: await h.login(person.email, person.password), body: {} });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: person.userId, userCreated: false });
  });

  it("an expired invitation cannot be accepted (409)", async () => {
    const email = freshEmail();
    const made = await invite(acme, { email, roleId: viewerRole });
    await h.services.prisma.invitation.update({ where: { id: made.body.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body: { name: "Late", password: "a-good-long-password" } });
    expect(res.status).toBe(409);
    expect(res.body.message).toContain("expired");
    expect(await h.services.prisma.user.count({ where: { email } })).toBe(0);
  });

  it("two concurrent accepts of one invitation: exactly one wins", async () => {
    const email = freshEmail();
    const made = await invite(acme, { email, roleId: viewerRole });
    const body = { name: "Racer", password: "a-good-long-password" };
    const results = await Promise.all([1, 2, 3].map(() => h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body })));
    expect(results.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    expect(await h.services.prisma.user.count({ where: { email } })).toBe(1);
    expect(await h.services.prisma.membership.count({ where: { organizationId: acme.org.id, user: { email } } })).toBe(1);
  });

  it("gives the invited custom role", async () => {
    const role = await h.api("POST", "/api/v1/roles", { key: acme.key, body: { name: "Invited custom", permissions: ["devices:read"] } });
    const made = await invite(acme, { email: freshEmail(), roleId: role.body.id });
    const res = await h.api("POST", `${publicPath(made.body.token)}/accept`, { key: null, body: { name: "Custom", password: "a-good-long-password" } });
    expect(res.status).toBe(200);
    expect(res.body.role).toEqual({ id: role.body.id, name: "Invited custom", system: false });
  });
});

describe("security of every procedure", () => {
  it("401 / 403 / cross-tenant 404 on the authenticated operations", async () => {
    const made = await invite(acme, { email: freshEmail(), roleId: viewerRole });
    const item = `/api/v1/invitations/${made.body.id}`;
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/invitations", permission: "invitations:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/invitations", body: { email: freshEmail(), roleId: viewerRole }, permission: "invitations:write" });
    await expectSecured(h, acme, globex, { method: "GET", path: item, permission: "invitations:read", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "DELETE", path: item, permission: "invitations:write", foreignPath: item });
    await expectSecured(h, acme, globex, { method: "POST", path: `${item}/resend`, permission: "invitations:write", foreignPath: `${item}/resend` });
    const row = await h.services.prisma.invitation.findUniqueOrThrow({ where: { id: made.body.id } });
    expect(row).toMatchObject({ revokedAt: null, sendCount: 1 });
  });

  it("works through the typed tRPC client, the public procedures too", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const made = await client.invitations.create.mutate({ email: freshEmail(), roleId: viewerRole });
    const anonymous = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc` })] });
    const details = await anonymous.invitations.publicGet.query({ token: made.token });
    expect(details.email).toBe(made.email);
  });
});
