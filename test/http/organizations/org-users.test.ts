// Members managed from the organization's side (users:write): bulk operations and
// password resets, including redeeming the mailed code.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { createPerson, issuePaths, lastMail, randomId, systemRole, tokenIn } from "../users/support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Members");
  globex = await h.createTenant("Globex Members");
});
afterAll(() => h?.close());

const resetPath = (orgId: string, userId: string) => `/api/v1/organizations/${orgId}/users/${userId}/reset-password`;
const bulkPath = (orgId: string) => `/api/v1/organizations/${orgId}/users/bulk`;

describe("POST /organizations/{id}/users/{userId}/reset-password", () => {
  it("mails a member a one-time code stored only as a hash; the code sets a new password once", async () => {
    const member = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    const token = await h.login(member.email, "a-long-enough-password");
    const res = await h.api("POST", resetPath(acme.org.id, member.id), { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: member.id, sent: true });
    expect(new Date(res.body.expiresAt).getTime()).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(JSON.stringify(res.body)).not.toMatch(/fmp_/);

    const mail = await lastMail(h, member.email, "password-reset");
    const code = tokenIn(mail.text, "fmp_");
    expect(mail.bodySealed).not.toContain(code); // sealed at rest
    const row = await h.services.prisma.passwordResetToken.findFirstOrThrow({ where: { userId: member.id, usedAt: null } });
    expect(row.tokenHash).toBe(sha256Hex(code));
    expect(row.requestedById).toBe(acme.user.id);
    expect(h.logs.join("")).not.toContain(code);

    // Too short a password is refused and the code survives.
    const short = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "short" } });
    expect(short.status).toBe(400);
    expect(issuePaths(short.body)).toContain("password");

    const done = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "a-brand-new-password" } });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ userId: member.id, passwordChanged: true });
    expect((await h.api("GET", `/api/v1/organizations/${acme.org.id}`, { key: null, token })).status).toBe(401); // old session ended
    expect(await h.login(member.email, "a-brand-new-password")).toBeTruthy();
    const replay = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "yet-another-password" } });
    expect(replay.status).toBe(400);
    expect(replay.body.message).toBe("The code is invalid, expired or already used");
  });

  it("answers 404 for someone who is not a member (whoever they are) and across tenants", async () => {
    const outsider = await createPerson(h, { member: { organizationId: globex.org.id, role: "viewer" } });
    expect((await h.api("POST", resetPath(acme.org.id, outsider.id), { key: acme.key })).status).toBe(404);
    expect((await h.api("POST", resetPath(acme.org.id, randomId()), { key: acme.key })).status).toBe(404);
    expect((await h.api("POST", resetPath(globex.org.id, outsider.id), { key: acme.key })).status).toBe(404);
    const bad = await h.api("POST", resetPath(acme.org.id, "nope"), { key: acme.key });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad.body)).toContain("userId");
  });

  it("answers 409 for a disabled member", async () => {
    const member = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" }, status: "disabled" });
    expect((await h.api("POST", resetPath(acme.org.id, member.id), { key: acme.key })).status).toBe(409);
  });

  it("is secured (users:write)", async () => {
    const member = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    await expectSecured(h, acme, globex, {
      method: "POST", path: resetPath(acme.org.id, member.id), permission: "users:write", foreignPath: resetPath(acme.org.id, member.id),
    });
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("POST", resetPath(acme.org.id, member.id), { key: viewer })).status).toBe(403);
  });
});

describe("POST /organizations/{id}/users/bulk", () => {
  it("removes members with an outcome each, never the last owner", async () => {
    const t = await h.createTenant("Bulk Remove");
    const a = await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" } });
    const b = await createPerson(h, { member: { organizationId: t.org.id, role: "operator" } });
    const bKey = await h.createKey(t.org.id, ["*"], { userId: b.id });
    const stranger = await createPerson(h, { member: { organizationId: globex.org.id, role: "viewer" } });
    const res = await h.api("POST", bulkPath(t.org.id), { key: t.key, body: { action: "remove", userIds: [a.id, b.id, stranger.id, t.user.id] } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ action: "remove", succeeded: 2, failed: 2 });
    const byId = Object.fromEntries(res.body.results.map((r: { id: string }) => [r.id, r]));
    expect(byId[a.id]).toEqual({ id: a.id, outcome: "done" });
    expect(byId[stranger.id].outcome).toBe("not_found");
    expect(byId[t.user.id]).toMatchObject({ outcome: "refused", message: expect.stringContaining("last owner") });
    expect(await h.services.prisma.membership.count({ where: { organizationId: t.org.id } })).toBe(1);
    expect(await h.services.prisma.user.count({ where: { id: { in: [a.id, b.id] } } })).toBe(2); // accounts stay
    expect((await h.api("GET", `/api/v1/organizations/${t.org.id}`, { key: bKey })).status).toBe(401);

    // Of two owners removed together, the second is the last one and stays.
    const second = await createPerson(h, { member: { organizationId: t.org.id, role: "owner" } });
    const both = await h.api("POST", bulkPath(t.org.id), { body: { action: "remove", userIds: [second.id, t.user.id] } });
    expect(both.body.results.map((r: { outcome: string }) => r.outcome)).toEqual(["done", "refused"]);
  });

  it("sets a role, refusing roles beyond the caller and members above them", async () => {
    const t = await h.createTenant("Bulk Roles");
    const admin = await createPerson(h, { member: { organizationId: t.org.id, role: "admin" } });
    const adminKey = await h.createKey(t.org.id, ["*"], { userId: admin.id });
    const v = await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" } });
    const operator = await systemRole(h, "operator");
    const owner = await systemRole(h, "owner");

    const res = await h.api("POST", bulkPath(t.org.id), { key: adminKey, body: { action: "set-role", roleId: operator.id, userIds: [v.id, t.user.id] } });
    expect(res.status).toBe(200);
    const byId = Object.fromEntries(res.body.results.map((r: { id: string }) => [r.id, r]));
    expect(byId[v.id].outcome).toBe("done");
    expect(byId[t.user.id]).toMatchObject({ outcome: "refused", message: expect.stringContaining("which you do not hold") });
    const m = await h.services.prisma.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId: t.org.id, userId: v.id } } });
    expect(m.roleId).toBe(operator.id);

    const escalate = await h.api("POST", bulkPath(t.org.id), { key: adminKey, body: { action: "set-role", roleId: owner.id, userIds: [admin.id] } });
    expect(escalate.status).toBe(403);

    const again = await h.api("POST", bulkPath(t.org.id), { key: t.key, body: { action: "set-role", roleId: operator.id, userIds: [v.id] } });
    expect(again.body.results[0].outcome).toBe("skipped");
    const demoteLastOwner = await h.api("POST", bulkPath(t.org.id), { key: t.key, body: { action: "set-role", roleId: operator.id, userIds: [t.user.id] } });
    expect(demoteLastOwner.body.results[0]).toMatchObject({ outcome: "refused", message: expect.stringContaining("last owner") });
  });

  it("mails reset codes to each active member", async () => {
    const t = await h.createTenant("Bulk Reset");
    const a = await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" } });
    const off = await createPerson(h, { member: { organizationId: t.org.id, role: "viewer" }, status: "disabled" });
    const res = await h.api("POST", bulkPath(t.org.id), { key: t.key, body: { action: "reset-password", userIds: [a.id, off.id] } });
    expect(res.body).toMatchObject({ succeeded: 1, failed: 1 });
    tokenIn((await lastMail(h, a.email, "password-reset")).text, "fmp_");
    expect(await h.services.prisma.mailOutbox.count({ where: { to: off.email } })).toBe(0);
  });

  it("answers 400 naming the field, 404 for a missing role or another tenant, and is secured", async () => {
    const noRole = await h.api("POST", bulkPath(acme.org.id), { key: acme.key, body: { action: "set-role", userIds: [acme.user.id] } });
    expect(noRole.status).toBe(400);
    expect(issuePaths(noRole.body)).toContain("roleId");
    const badAction = await h.api("POST", bulkPath(acme.org.id), { key: acme.key, body: { action: "explode", userIds: [acme.user.id] } });
    expect(issuePaths(badAction.body)).toContain("action");
    const noIds = await h.api("POST", bulkPath(acme.org.id), { key: acme.key, body: { action: "remove", userIds: [] } });
    expect(issuePaths(noIds.body)).toContain("userIds");
    const missingRole = await h.api("POST", bulkPath(acme.org.id), { key: acme.key, body: { action: "set-role", roleId: randomId(), userIds: [acme.user.id] } });
    expect(missingRole.status).toBe(404);
    const noMembersWrite = await h.createKey(acme.org.id, ["users:write"]);
    const denied = await h.api("POST", bulkPath(acme.org.id), { key: noMembersWrite, body: { action: "remove", userIds: [acme.user.id] } });
    expect(denied.status).toBe(403);
    expect(denied.body.message).toBe("Missing permission members:write");
    const body = { action: "reset-password", userIds: [acme.user.id] };
    await expectSecured(h, acme, globex, { method: "POST", path: bulkPath(acme.org.id), body, permission: "users:write", foreignPath: bulkPath(acme.org.id) });
  });
});
