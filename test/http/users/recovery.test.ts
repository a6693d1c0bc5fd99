// Password resets, e-mail verification and the identity link: one-time codes stored hashed,
// sent through the mailer (the outbox by default, or any other plugged in).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { sha256Hex, verifyPassword } from "../../../src/lib/crypto.js";
import { setMailer, OutboxMailer, type MailMessage } from "../../../src/lib/mailer.js";
import { createPerson, issuePaths, lastMail, PASSWORD, randomId, tokenIn } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Recovery");
  globex = await h.createTenant("Globex Recovery");
});
afterAll(() => h?.close());

describe("POST /users/{id}/reset-password", () => {
  it("mails a one-time code (hashed at rest, expiring in an hour) that supersedes older ones", async () => {
    const p = await createPerson(h, { member: { organizationId: acme.org.id, role: "viewer" } });
    const first = await h.api("POST", `/api/v1/users/${p.id}/reset-password`);
    expect(first.status).toBe(200);
    const firstCode = tokenIn((await lastMail(h, p.email, "password-reset")).text, "fmp_");
    const second = await h.api("POST", `/api/v1/users/${p.id}/reset-password`);
    expect(second.body).toMatchObject({ userId: p.id, sent: true });
    const expires = new Date(second.body.expiresAt).getTime() - Date.now();
    expect(expires).toBeGreaterThan(55 * 60_000);
    expect(expires).toBeLessThanOrEqual(60 * 60_000);
    const code = tokenIn((await lastMail(h, p.email, "password-reset")).text, "fmp_");
    expect(code).not.toBe(firstCode);

    const rows = await h.services.prisma.passwordResetToken.findMany({ where: { userId: p.id } });
    expect(rows).toHaveLength(2);
    expect(rows.find((r) => r.tokenHash === sha256Hex(firstCode))?.usedAt).not.toBeNull();
    expect(JSON.stringify(rows)).not.toContain(code);

    const stale = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: firstCode, password: "new-password-123" } });
    expect(stale.status).toBe(400);
    const ok = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "new-password-123" } });
    expect(ok.status).toBe(200);
    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } });
    expect(await verifyPassword("new-password-123", user.passwordHash)).toBe(true);
    expect(h.logs.join("")).not.toContain(code);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "users.password-reset.complete", entityId: p.id } })).toBe(1);
  });

  it("refuses an expired code", async () => {
    const p = await createPerson(h);
    await h.api("POST", `/api/v1/users/${p.id}/reset-password`);
    const code = tokenIn((await lastMail(h, p.email, "password-reset")).text, "fmp_");
    await h.services.prisma.passwordResetToken.updateMany({ where: { userId: p.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await h.api("POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: code, password: "new-password-123" } });
    expect(res.status).toBe(400);
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } })).passwordHash).toBe(p.passwordHash);
  });

  it("answers 409 for a disabled user, 404 for unknown ones, 403 for non Super Admins", async () => {
    const off = await createPerson(h, { status: "disabled" });
    expect((await h.api("POST", `/api/v1/users/${off.id}/reset-password`)).status).toBe(409);
    expect((await h.api("POST", `/api/v1/users/${randomId()}/reset-password`)).status).toBe(404);
    expect((await h.api("POST", `/api/v1/users/${acme.user.id}/reset-password`, { key: acme.key })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/users/${acme.user.id}/reset-password`, permission: "platform:admin" });
  });

  it("sends through whichever mailer is plugged in", async () => {
    const sent: MailMessage[] = [];
    setMailer(h.services, { send: async (_db, message) => (sent.push(message), { id: "captured" }) });
    try {
      const p = await createPerson(h);
      expect((await h.api("POST", `/api/v1/users/${p.id}/reset-password`)).status).toBe(200);
      expect(sent).toHaveLength(1);
      expect(sent[0]).toMatchObject({ to: p.email, template: "password-reset" });
      expect(await h.services.prisma.mailOutbox.count({ where: { to: p.email } })).toBe(0);
    } finally {
      setMailer(h.services, new OutboxMailer(h.services));
    }
  });
});

describe("POST /users/{id}/resend-verification", () => {
  it("mails a fresh verification code; redeeming it verifies the address once", async () => {
    const p = await createPerson(h);
    const res = await h.api("POST", `/api/v1/users/${p.id}/resend-verification`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ userId: p.id, sent: true });
    const code = tokenIn((await lastMail(h, p.email, "email-verification")).text, "fmv_");
    const row = await h.services.prisma.emailVerificationToken.findFirstOrThrow({ where: { userId: p.id } });
    expect(row).toMatchObject({ tokenHash: sha256Hex(code), email: p.email, usedAt: null });

    const done = await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: { token: code } });
    expect(done.status).toBe(200);
    expect(done.body).toEqual({ userId: p.id, emailVerified: true });
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } })).emailVerifiedAt).not.toBeNull();
    expect((await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: { token: code } })).status).toBe(400);

    const already = await h.api("POST", `/api/v1/users/${p.id}/resend-verification`);
    expect(already.status).toBe(409);
    expect(already.body.message).toBe("E-mail address already verified");
  });

  it("a code for an address the user no longer has is void", async () => {
    const p = await createPerson(h);
    await h.api("POST", `/api/v1/users/${p.id}/resend-verification`);
    const code = tokenIn((await lastMail(h, p.email, "email-verification")).text, "fmv_");
    await h.services.prisma.user.update({ where: { id: p.id }, data: { email: `changed-${p.email}` } });
    expect((await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: { token: code } })).status).toBe(400);
  });

  it("rejects bad codes with 400 and is secured", async () => {
    const res = await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: {} });
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toContain("token");
    expect((await h.api("POST", "/api/v1/users/email-verification/complete", { key: null, body: { token: "fmv_nope" } })).status).toBe(400);
    expect((await h.api("POST", `/api/v1/users/${randomId()}/resend-verification`)).status).toBe(404);
    await expectSecured(h, acme, globex, { method: "POST", path: `/api/v1/users/${acme.user.id}/resend-verification`, permission: "platform:admin" });
  });
});

describe("DELETE /users/{id}/identity-link", () => {
  it("clears issuer and subject; the account and password stay", async () => {
    const p = await createPerson(h);
    await h.services.prisma.user.update({ where: { id: p.id }, data: { identityIssuer: "https://idp.example.test", identitySubject: "abc-123" } });
    expect((await h.api("GET", `/api/v1/users/${p.id}`)).body.identity).toEqual({ issuer: "https://idp.example.test", subject: "abc-123" });
    const res = await h.api("DELETE", `/api/v1/users/${p.id}/identity-link`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: p.id, identity: null, hasPassword: true });
    const row = await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } });
    expect(row).toMatchObject({ identityIssuer: null, identitySubject: null });
    expect(await h.login(p.email, PASSWORD)).toBeTruthy();
    expect((await h.api("DELETE", `/api/v1/users/${p.id}/identity-link`)).status).toBe(404);
  });

  it("is for Super Admins only", async () => {
    expect((await h.api("DELETE", `/api/v1/users/${acme.user.id}/identity-link`, { key: acme.key })).status).toBe(403);
    await expectSecured(h, acme, globex, { method: "DELETE", path: `/api/v1/users/${acme.user.id}/identity-link`, permission: "platform:admin" });
  });
});
