// The caller's own profile over HTTP: read and update, notification preferences, password
// change (other sessions end, older tokens die, this session goes on), sessions (list, end
// one, end all others) and own activity.
import crypto from "node:crypto";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { hashPassword } from "../../../src/lib/crypto.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Profile Acme");
  globex = await h.createTenant("Profile Globex");
});
afterAll(() => h?.close());

/** A fresh owner of acme with a password, so that tests do not disturb one another. */
async function person(password = "first-password-123") {
  const prisma = h.services.prisma;
  const owner = await prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "owner" } });
  const user = await prisma.user.create({
    data: { email: `p-${crypto.randomBytes(4).toString("hex")}@profile.example.test`, name: "Pat", passwordHash: await hashPassword(password) },
  });
  await prisma.membership.create({ data: { organizationId: acme.org.id, userId: user.id, roleId: owner.id } });
  return { ...user, password };
}

async function signIn(email: string, password: string, userAgent: string) {
  const res = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email, password }, headers: { "user-agent": userAgent } });
  expect(res.status).toBe(200);
  return res.body as { accessToken: string; refreshToken: string };
}

const FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
const SAFARI = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";

describe("profile", () => {
  it("answers the caller's profile, with a key too (its creator's)", async () => {
    const p = await person();
    const { accessToken } = await signIn(p.email, p.password, FIREFOX);
    const res = await h.api("GET", "/api/v1/profile", { key: null, token: accessToken });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: p.id, email: p.email, name: "Pat", status: "active", isSuperAdmin: false, hasPassword: true,
      federatedIdentity: null, organization: { id: acme.org.id, slug: acme.org.slug }, role: "owner",
    });
    expect(res.body).not.toHaveProperty("passwordHash");
    const viaKey = await h.api("GET", "/api/v1/profile", { key: acme.key });
    expect(viaKey.body.id).toBe(acme.user.id);
  });

  it("updates the name; the e-mail only with the current password; records the changed fields", async () => {
    const p = await person();
    const { accessToken: token } = await signIn(p.email, p.password, FIREFOX);
    const renamed = await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { name: "Patricia" } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe("Patricia");
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "profile.update", entityId: p.id } });
    expect(entry.changes).toEqual({ name: { from: "Pat", to: "Patricia" } });

    const newEmail = `new-${crypto.randomBytes(3).toString("hex")}@profile.example.test`;
    expect((await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { email: newEmail } })).status).toBe(400);
    expect((await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { email: newEmail, currentPassword: "wrong" } })).status).toBe(400);
    const moved = await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { email: newEmail.toUpperCase(), currentPassword: p.password } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ email: newEmail, emailVerified: false });
    // someone else's address: conflict, and nothing changes
    const taken = await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { email: acme.user.email, currentPassword: p.password } });
    expect(taken.status).toBe(409);
    expect((await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } })).email).toBe(newEmail);
    expect((await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { name: "" } })).status).toBe(400);
  });
});

describe("notification preferences", () => {
  it("answers defaults, replaces them with PUT and keeps them", async () => {
    const p = await person();
    const { accessToken: token } = await signIn(p.email, p.password, FIREFOX);
    const initial = await h.api("GET", "/api/v1/profile/notification-preferences", { key: null, token });
    expect(initial.status).toBe(200);
    expect(initial.body).toEqual({
      email: true, inApp: true, digest: "off", quietHours: null,
      categories: { alerts: true, deployments: true, devices: false, certificates: true, security: true },
    });
    const put = await h.api("PUT", "/api/v1/profile/notification-preferences", {
      key: null, token, body: { email: false, categories: { alerts: false }, digest: "weekly", quietHours: { start: "22:00", end: "07:00", timezone: "Europe/Berlin" } },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ email: false, inApp: true, digest: "weekly", categories: { alerts: false, security: true } });
    const read = await h.api("GET", "/api/v1/profile/notification-preferences", { key: null, token });
    expect(read.body).toEqual(put.body);
    const stored = await h.services.prisma.user.findUniqueOrThrow({ where: { id: p.id } });
    expect(stored.notificationPreferences).toMatchObject({ digest: "weekly", quietHours: { start: "22:00" } });
    for (const body of [{ digest: "hourly" }, { email: "false" }, { quietHours: { start: "25:00", end: "07:00" } }]) {
      expect((await h.api("PUT", "/api/v1/profile/notification-preferences", { key: null, token, body })).status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe("password", () => {
  it("needs the current password, ends the other sessions and hands this one a new token", async () => {
    const p = await person();
    const laptop = await signIn(p.email, p.password, FIREFOX);
    const phone = await signIn(p.email, p.password, SAFARI);

    const wrong = await h.api("POST", "/api/v1/profile/password", { key: null, token: laptop.accessToken, body: { currentPassword: "nope", newPassword: "second-password-456" } });
    expect(wrong.status).toBe(400);
    expect((await h.api("POST", "/api/v1/profile/password", { key: null, token: laptop.accessToken, body: { currentPassword: p.password, newPassword: "short" } })).status).toBe(400);

    const changed = await h.api("POST", "/api/v1/profile/password", { key: null, token: laptop.accessToken, body: { currentPassword: p.password, newPassword: "second-password-456" } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ changed: true, sessionsEnded: 1, tokenType: "Bearer" });

    // Old tokens are dead everywhere; the new one works; the other session is gone for good.
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: laptop.accessToken })).status).toBe(401);
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: phone.accessToken })).status).toBe(401);
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: changed.body.accessToken })).status).toBe(200);
    expect((await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: phone.refreshToken } })).status).toBe(401);
    expect((await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: laptop.refreshToken } })).status).toBe(200);
    // New password in, old one out.
    expect((await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: p.email, password: p.password } })).status).toBe(401);
    await signIn(p.email, "second-password-456", FIREFOX);

    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "profile.changePassword", entityId: p.id } });
    expect(JSON.stringify(entry.changes)).not.toContain("second-password-456");
    expect(entry.changes).toEqual({ changed: "password", sessionsEnded: 1 });
  });

  it("is refused to API keys (403): a key has no session", async () => {
    const res = await h.api("POST", "/api/v1/profile/password", { key: acme.key, body: { currentPassword: acme.user.password, newPassword: "another-password-789" } });
    expect(res.status).toBe(403);
  });
});

describe("sessions", () => {
  it("lists open sessions with device, address and last use; ends one, then all others", async () => {
    const p = await person();
    const laptop = await signIn(p.email, p.password, FIREFOX);
    const phone = await signIn(p.email, p.password, SAFARI);
    const third = await signIn(p.email, p.password, "curl/8.5.0");

    const list = await h.api("GET", "/api/v1/profile/sessions", { key: null, token: laptop.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.total).toBe(3);
    const devices = list.body.items.map((s: { device: string }) => s.device).sort();
    expect(devices).toEqual(["Firefox on Linux", "Safari on iOS", "curl"]);
    const current = list.body.items.find((s: { current: boolean }) => s.current);
    expect(current).toMatchObject({ device: "Firefox on Linux", ipAddress: expect.any(String), lastUsedAt: expect.any(String), organizationId: acme.org.id });
    const phoneSession = list.body.items.find((s: { device: string }) => s.device === "Safari on iOS");

    const one = await h.api("DELETE", `/api/v1/profile/sessions?id=${phoneSession.id}`, { key: null, token: laptop.accessToken });
    expect(one.status).toBe(200);
    expect(one.body).toEqual({ terminated: 1, currentEnded: false });
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: phone.accessToken })).status).toBe(401);
    expect((await h.api("DELETE", `/api/v1/profile/sessions?id=${phoneSession.id}`, { key: null, token: laptop.accessToken })).status).toBe(404);
    // someone else's session is not found
    const otherToken = await h.login(acme.user.email, acme.user.password);
    expect((await h.api("DELETE", `/api/v1/profile/sessions?id=${current.id}`, { key: null, token: otherToken })).status).toBe(404);

    const others = await h.api("DELETE", "/api/v1/profile/sessions", { key: null, token: laptop.accessToken });
    expect(others.body).toEqual({ terminated: 1, currentEnded: false });
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: third.accessToken })).status).toBe(401);
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: laptop.accessToken })).status).toBe(200);
    const after = await h.api("GET", "/api/v1/profile/sessions", { key: null, token: laptop.accessToken });
    expect(after.body.items.map((s: { id: string }) => s.id)).toEqual([current.id]);

    // naming the current session signs out
    const self = await h.api("DELETE", `/api/v1/profile/sessions?id=${current.id}`, { key: null, token: laptop.accessToken });
    expect(self.body).toEqual({ terminated: 1, currentEnded: true });
    expect((await h.api("GET", "/api/v1/profile", { key: null, token: laptop.accessToken })).status).toBe(401);
  });
});

describe("own activity", () => {
  it("lists the caller's own activity across organizations, newest first", async () => {
    const p = await person();
    const { accessToken: token } = await signIn(p.email, p.password, FIREFOX);
    await h.api("PATCH", "/api/v1/profile", { key: null, token, body: { name: "Active Pat" } });
    const res = await h.api("GET", "/api/v1/profile/activity", { key: null, token });
    expect(res.status).toBe(200);
    expect(res.body.items.map((i: { type: string; action: string }) => [i.type, i.action])).toEqual([["change", "profile.update"], ["login", "auth.login"]]);
    expect(res.body.items.every((i: { userId: string }) => i.userId === p.id)).toBe(true);
    const logins = await h.api("GET", "/api/v1/profile/activity?types=login", { key: null, token });
    expect(logins.body.total).toBe(1);
  });
});

describe("security", () => {
  it("secures every profile procedure", async () => {
    const cases: { method: string; path: string; body?: unknown }[] = [
      { method: "GET", path: "/api/v1/profile" },
      { method: "PATCH", path: "/api/v1/profile", body: { name: "X" } },
      { method: "GET", path: "/api/v1/profile/notification-preferences" },
      { method: "PUT", path: "/api/v1/profile/notification-preferences", body: {} },
      { method: "POST", path: "/api/v1/profile/password", body: { currentPassword: "a", newPassword: "bbbbbbbbbbbb" } },
      { method: "GET", path: "/api/v1/profile/sessions" },
      { method: "DELETE", path: "/api/v1/profile/sessions" },
      { method: "GET", path: "/api/v1/profile/activity" },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
  });

  it("is reachable through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    expect((await client.profile.get.query()).id).toBe(acme.user.id);
  });
});
