// No secret leaks: across a broad run of operations (API keys, users with passwords,
// invitations, Git and OCI registry credentials, enrollment tokens, sign-in and refresh
// tokens, CA private keys, webhook signing secrets, realtime tickets) every response (body
// and headers) and every log line is captured. A secret the service generates appears in
// exactly one response, the one that creates it; a secret the caller sends appears in none;
// no secret appears in any log line.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import WebSocket from "ws";
import { ADMIN_KEY, createHarness, type ApiResponse, type CallOptions, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { startOciRegistry } from "../../support/oci-registry.js";
import { peersAvailable } from "../../support/peers.js";
import { appYaml } from "../registries-git/support.js";
import { createCsr, generateDeviceKeys } from "../../../agent/src/core/identity.js";
import { makeCa } from "../pki/support.js";

interface Captured {
  label: string;
  text: string;
}

/** A secret and the label of the one response allowed to carry it (null: none may). */
interface Secret {
  what: string;
  value: string;
  createdBy: string | null;
}

let h: Harness;
let acme: Tenant;
let git: GitServer;
const responses: Captured[] = [];
const gitPassword = `git-password-${crypto.randomBytes(12).toString("hex")}`;
const ociPassword = `oci-password-${crypto.randomBytes(12).toString("hex")}`;
const secrets: Secret[] = [];

const unique = (prefix: string) => `${prefix}-${crypto.randomBytes(12).toString("hex")}`;

/** h.api, recording the whole answer (status line, headers, body) under a label. */
async function call(label: string, method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse> {
  const res = await h.api(method, path, opts);
  responses.push({ label, text: `${res.status}\n${JSON.stringify([...res.headers.entries()])}\n${res.text}` });
  return res;
}

function expectStatus(res: ApiResponse, status: number) {
  expect(res.status, res.text).toBe(status);
}

/** The base64 body of a PEM (what would leak even if the armour lines were stripped). */
function pemBody(pem: string): string[] {
  return pem
    .split("\n")
    .filter((line) => line && !line.startsWith("-----"))
    .filter((line) => line.length >= 40);
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Secrets");
  git = await startGitServer({ auth: { username: "git-user", password: gitPassword } });
});

afterAll(async () => {
  await git?.close();
  await h?.close();
});

describe("a broad run of operations", () => {
  it("API keys: created, read, updated, used", async () => {
    const created = await call("apiKey.create", "POST", `/api/v1/organizations/${acme.org.id}/api-keys`, {
      key: acme.key, body: { name: "leak check", permissions: ["devices:read", "registries:read"] },
    });
    expectStatus(created, 201);
    secrets.push({ what: "API key", value: created.body.key, createdBy: "apiKey.create" });
    expectStatus(await call("apiKey.list", "GET", `/api/v1/organizations/${acme.org.id}/api-keys`, { key: acme.key }), 200);
    expectStatus(await call("apiKey.get", "GET", `/api/v1/organizations/${acme.org.id}/api-keys/${created.body.id}`, { key: acme.key }), 200);
    expectStatus(await call("apiKey.update", "PUT", `/api/v1/organizations/${acme.org.id}/api-keys/${created.body.id}`, { key: acme.key, body: { name: "renamed" } }), 200);
    expectStatus(await call("apiKey.use", "GET", "/api/v1/devices", { key: created.body.key }), 200);
    expectStatus(await call("apiKey.denied", "GET", "/api/v1/audit", { key: created.body.key }), 403);
    // The tenant's own full key was made by the harness (never in a response): it must not show either.
    secrets.push({ what: "tenant API key", value: acme.key, createdBy: null });
    secrets.push({ what: "bootstrap API key", value: ADMIN_KEY, createdBy: null });
  });

  it("users with passwords: created, read, exported, signing in, changing the password", async () => {
    const password = unique("user-password");
    const created = await call("user.create", "POST", "/api/v1/users", { body: { email: `${unique("u")}@example.test`, name: "Leak Check", password } });
    expectStatus(created, 201);
    secrets.push({ what: "user password", value: password, createdBy: null });
    expectStatus(await call("user.get", "GET", `/api/v1/users/${created.body.id}`), 200);
    expectStatus(await call("user.list", "GET", "/api/v1/users?limit=200"), 200);
    expectStatus(await call("user.export", "POST", "/api/v1/users/export", { body: { format: "json" } }), 200);
    expectStatus(await call("user.export.csv", "POST", "/api/v1/users/export", { body: { format: "csv" } }), 200);
    const roles = await call("roles", "GET", "/api/v1/roles?limit=200", { key: acme.key });
    const viewer = roles.body.items.find((r: { name: string }) => r.name === "viewer") ?? roles.body.items[0];
    expectStatus(await call("user.addToOrg", "POST", `/api/v1/users/${created.body.id}/organizations`, { body: { organizationId: acme.org.id, roleId: viewer.id } }), 201);
    // A wrong password is refused without echoing what was sent.
    const wrong = unique("wrong-password");
    secrets.push({ what: "wrong password", value: wrong, createdBy: null });
    expectStatus(await call("login.wrong", "POST", "/api/v1/auth/login", { key: null, body: { email: created.body.email, password: wrong } }), 401);

    const login = await call("login", "POST", "/api/v1/auth/login", { key: null, body: { email: created.body.email, password } });
    expectStatus(login, 200);
    secrets.push({ what: "access token (login)", value: login.body.accessToken, createdBy: "login" });
    secrets.push({ what: "refresh token (login)", value: login.body.refreshToken, createdBy: "login" });

    const newPassword = unique("new-password");
    secrets.push({ what: "new password", value: newPassword, createdBy: null });
    const profilePaths = await call("profile.get", "GET", "/api/v1/profile", { key: null, token: login.body.accessToken });
    expectStatus(profilePaths, 200);
    const changed = await call("profile.password", "POST", "/api/v1/profile/password", {
      key: null, token: login.body.accessToken, body: { currentPassword: password, newPassword },
    });
    expectStatus(changed, 200);
    secrets.push({ what: "access token (after password change)", value: changed.body.accessToken, createdBy: "profile.password" });
  });

  it("one-time codes by mail (welcome, password reset): in the sealed outbox only, used once", async () => {
    const email = `${unique("mailed")}@example.test`;
    const created = await call("user.create.welcome", "POST", "/api/v1/users", { body: { email, name: "Mailed User" } });
    expectStatus(created, 201);
    expectStatus(await call("user.reset", "POST", `/api/v1/users/${created.body.id}/reset-password`), 200);
    const mails = await h.services.prisma.mailOutbox.findMany({ where: { to: email }, orderBy: { createdAt: "asc" } });
    expect(mails.map((m) => m.template)).toEqual(["welcome", "password-reset"]);
    const codes = mails.map((m) => /one-time code: (\S+)/.exec(h.services.secrets.decrypt(m.bodySealed))![1]);
    for (const [i, code] of codes.entries()) secrets.push({ what: `${mails[i].template} code`, value: code, createdBy: null });
    const password = unique("reset-password");
    secrets.push({ what: "password chosen with a reset code", value: password, createdBy: null });
    expectStatus(await call("reset.complete", "POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: codes[1], password } }), 200);
    const again = await call("reset.complete.again", "POST", "/api/v1/users/password-reset/complete", { key: null, body: { token: codes[1], password } });
    expect(again.status).toBeGreaterThanOrEqual(400);
  });

  it("sign-in sessions: refresh tokens rotate, each shown once; sessions listed; logout", async () => {
    const login = await call("login.owner", "POST", "/api/v1/auth/login", { key: null, body: { email: acme.user.email, password: acme.user.password } });
    expectStatus(login, 200);
    secrets.push({ what: "access token (owner)", value: login.body.accessToken, createdBy: "login.owner" });
    secrets.push({ what: "refresh token (owner)", value: login.body.refreshToken, createdBy: "login.owner" });
    secrets.push({ what: "tenant password", value: acme.user.password, createdBy: null });
    // Access tokens are JWTs with a one-second iat: within the same second a refresh would sign
    // the very same token again; wait so that "appears once" is about distinct tokens.
    await new Promise((r) => setTimeout(r, 1100));
    const refreshed = await call("refresh", "POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: login.body.refreshToken } });
    expectStatus(refreshed, 200);
    secrets.push({ what: "access token (refreshed)", value: refreshed.body.accessToken, createdBy: "refresh" });
    secrets.push({ what: "refresh token (refreshed)", value: refreshed.body.refreshToken, createdBy: "refresh" });
    expectStatus(await call("refresh.reuse", "POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: login.body.refreshToken } }), 401);
    expectStatus(await call("sessions", "GET", "/api/v1/profile/sessions", { key: null, token: refreshed.body.accessToken }), 200);
    expectStatus(await call("tenant.context", "GET", "/api/v1/tenant/context", { key: null, token: refreshed.body.accessToken }), 200);
    expectStatus(await call("logout", "POST", "/api/v1/auth/logout", { key: null, token: refreshed.body.accessToken }), 200);
    expectStatus(await call("after.logout", "GET", "/api/v1/tenant/context", { key: null, token: refreshed.body.accessToken }), 401);
  });

  it("invitations: created, listed, read, looked up and accepted by token", async () => {
    const roles = await call("roles", "GET", "/api/v1/roles?limit=200", { key: acme.key });
    const member = roles.body.items.find((r: { name: string }) => r.name !== "owner") ?? roles.body.items[0];
    const email = `${unique("invitee")}@example.test`;
    const created = await call("invitation.create", "POST", "/api/v1/invitations", { key: acme.key, body: { email, roleId: member.id } });
    expectStatus(created, 201);
    secrets.push({ what: "invitation token", value: created.body.token, createdBy: "invitation.create" });
    expectStatus(await call("invitation.list", "GET", "/api/v1/invitations", { key: acme.key }), 200);
    expectStatus(await call("invitation.get", "GET", `/api/v1/invitations/${created.body.id}`, { key: acme.key }), 200);
    expectStatus(await call("invitation.public", "GET", `/api/v1/public/invitations/${created.body.token}`, { key: null }), 200);
    const password = unique("invitee-password");
    secrets.push({ what: "invitee password", value: password, createdBy: null });
    const accepted = await call("invitation.accept", "POST", `/api/v1/public/invitations/${created.body.token}/accept`, {
      key: null, body: { name: "Invitee", password },
    });
    expect(accepted.status, accepted.text).toBeLessThan(300);
    expectStatus(await call("invitation.public.used", "GET", `/api/v1/public/invitations/${created.body.token}`, { key: null }), 409);
  });

  it("Git registry credentials: created, synced with them, read, replaced", async () => {
    const repo = await git.createRepo("secret-apps", { "apps/a/app.yaml": appYaml("secret-app", "1.0.0") });
    const credential = `git-user:${gitPassword}`;
    secrets.push({ what: "git password", value: gitPassword, createdBy: null });
    const created = await call("git.create", "POST", "/api/v1/registries/git", {
      key: acme.key, body: { name: "secret git", url: repo.url, authType: "BASIC", credential, syncIntervalMinutes: 0 },
    });
    expectStatus(created, 201);
    const synced = await call("git.sync", "POST", `/api/v1/registries/git/${created.body.id}/sync`, { key: acme.key });
    expectStatus(synced, 200);
    expect(synced.body.success, synced.text).toBe(true);
    expectStatus(await call("git.get", "GET", `/api/v1/registries/git/${created.body.id}`, { key: acme.key }), 200);
    expectStatus(await call("git.list", "GET", "/api/v1/registries/git", { key: acme.key }), 200);
    // A wrong credential: the failed sync reports the failure, not the credential.
    const wrong = unique("wrong-git-token");
    secrets.push({ what: "wrong git token", value: wrong, createdBy: null });
    expectStatus(await call("git.update", "PATCH", `/api/v1/registries/git/${created.body.id}`, { key: acme.key, body: { authType: "TOKEN", credential: wrong } }), 200);
    const failed = await call("git.sync.wrong", "POST", `/api/v1/registries/git/${created.body.id}/sync`, { key: acme.key });
    expect(failed.status, failed.text).toBeLessThan(500);
    expectStatus(await call("applications", "GET", "/api/v1/applications", { key: acme.key }), 200);
  });

  it.skipIf(!peersAvailable("docker-registry", "htpasswd"))("OCI registry credentials: created, checked and synced with them, read", async () => {
    const password = ociPassword;
    const oci = await startOciRegistry({ basic: { username: "oci-user", password } });
    onTestFinished(() => oci.close());
    secrets.push({ what: "oci password", value: password, createdBy: null });
    await oci.pushPackage("apps/secret-oci", "1.0.0", appYaml("secret-oci", "1.0.0"));
    const created = await call("oci.create", "POST", "/api/v1/registries/oci", {
      key: acme.key,
      body: { name: "secret oci", url: oci.url, authType: "BASIC", credential: `oci-user:${password}`, repositories: ["apps/secret-oci"], syncIntervalMinutes: 0, verifyTls: false },
    });
    expectStatus(created, 201);
    const health = await call("oci.health", "POST", `/api/v1/registries/oci/${created.body.id}/health-check`, { key: acme.key });
    expect(health.status, health.text).toBe(200);
    const synced = await call("oci.sync", "POST", `/api/v1/registries/oci/${created.body.id}/sync`, { key: acme.key });
    expect(synced.status, synced.text).toBe(200);
    expectStatus(await call("oci.get", "GET", `/api/v1/registries/oci/${created.body.id}`, { key: acme.key }), 200);
    expectStatus(await call("oci.list", "GET", "/api/v1/registries/oci", { key: acme.key }), 200);
    expectStatus(await call("oci.history", "GET", `/api/v1/registries/oci/${created.body.id}/sync-history`, { key: acme.key }), 200);
  });

  it("CA private keys: generated and uploaded CAs, read, downloaded, signing a device certificate", async () => {
    const generated = await call("ca.generate", "POST", "/api/v1/ca-certificates/generate", { key: acme.key, body: { name: "secret ca", commonName: "Secret CA" } });
    expectStatus(generated, 201);
    const row = await h.services.prisma.caCertificate.findUniqueOrThrow({ where: { id: generated.body.id } });
    const pem = h.services.secrets.decrypt(row.privateKeyEncrypted!);
    for (const line of pemBody(pem)) secrets.push({ what: "generated CA private key", value: line, createdBy: null });

    // An uploaded CA: its key (sent by us) must not come back either.
    const uploaded = await uploadedCa();
    for (const line of pemBody(uploaded.keyPem)) secrets.push({ what: "uploaded CA private key", value: line, createdBy: null });
    const up = await call("ca.upload", "POST", "/api/v1/ca-certificates", {
      key: acme.key, body: { name: "uploaded ca", certificatePem: uploaded.certPem, privateKeyPem: uploaded.keyPem },
    });
    expectStatus(up, 201);
    for (const id of [generated.body.id, up.body.id]) {
      expectStatus(await call("ca.get", "GET", `/api/v1/ca-certificates/${id}`, { key: acme.key }), 200);
      expectStatus(await call("ca.download", "GET", `/api/v1/ca-certificates/${id}/download`, { key: acme.key }), 200);
      expectStatus(await call("ca.crl", "GET", `/api/v1/ca-certificates/${id}/crl`, { key: acme.key }), 200);
    }
    expectStatus(await call("ca.list", "GET", "/api/v1/ca-certificates", { key: acme.key }), 200);
    expectStatus(await call("ca.renew", "POST", `/api/v1/ca-certificates/${generated.body.id}/renew`, { key: acme.key, body: {} }), 201);
  });

  it("enrollment tokens: created, read, used by a device; device certificates", async () => {
    const created = await call("enrollment.create", "POST", "/api/v1/enrollment-tokens", { key: acme.key, body: { name: "secret devices", labels: { site: "x" } } });
    expectStatus(created, 201);
    secrets.push({ what: "enrollment token", value: created.body.token, createdBy: "enrollment.create" });
    expectStatus(await call("enrollment.list", "GET", "/api/v1/enrollment-tokens", { key: acme.key }), 200);
    const keys = await generateDeviceKeys("ES256");
    const enrolled = await call("agent.enroll", "POST", "/api/v1/agent/enroll", {
      key: null, body: { enrollmentToken: created.body.token, reportedDeviceId: "secret-device-1", csr: await createCsr(keys, "secret-device-1") },
    });
    expectStatus(enrolled, 201);
    const wrongToken = `fme_${crypto.randomBytes(30).toString("base64url")}`;
    secrets.push({ what: "wrong enrollment token", value: wrongToken, createdBy: null });
    const refused = await call("agent.enroll.wrong", "POST", "/api/v1/agent/enroll", {
      key: null, body: { enrollmentToken: wrongToken, reportedDeviceId: "secret-device-2", csr: await createCsr(keys, "secret-device-2") },
    });
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expectStatus(await call("device.get", "GET", `/api/v1/devices/${enrolled.body.deviceId}`, { key: acme.key }), 200);
    expectStatus(await call("device.certs", "GET", `/api/v1/devices/${enrolled.body.deviceId}/certificates`, { key: acme.key }), 200);
    expectStatus(await call("device.activity", "GET", `/api/v1/devices/${enrolled.body.deviceId}/activity`, { key: acme.key }), 200);
  });

  it("webhook signing secrets: chosen and generated", async () => {
    const chosen = unique("webhook-secret");
    secrets.push({ what: "chosen webhook secret", value: chosen, createdBy: null });
    const withSecret = await call("target.create", "POST", "/api/v1/notification-targets", {
      key: acme.key, body: { name: "hook with secret", type: "webhook", url: "http://127.0.0.1:9/hook", secret: chosen },
    });
    expectStatus(withSecret, 201);
    const generated = await call("target.create.generated", "POST", "/api/v1/notification-targets", {
      key: acme.key, body: { name: "hook generated", type: "webhook", url: "http://127.0.0.1:9/hook2" },
    });
    expectStatus(generated, 201);
    expect(typeof generated.body.secret).toBe("string");
    secrets.push({ what: "generated webhook secret", value: generated.body.secret, createdBy: "target.create.generated" });
    const replaced = unique("webhook-secret-2");
    secrets.push({ what: "replaced webhook secret", value: replaced, createdBy: null });
    expectStatus(await call("target.update", "PATCH", `/api/v1/notification-targets/${withSecret.body.id}`, { key: acme.key, body: { secret: replaced } }), 200);
    expectStatus(await call("target.get", "GET", `/api/v1/notification-targets/${withSecret.body.id}`, { key: acme.key }), 200);
    expectStatus(await call("target.list", "GET", "/api/v1/notification-targets", { key: acme.key }), 200);
    // A webhook URL may carry a token in its query string: reads mask it.
    const urlToken = unique("url-token");
    secrets.push({ what: "webhook URL query token", value: urlToken, createdBy: null });
    const withQuery = await call("target.create.query", "POST", "/api/v1/notification-targets", {
      key: acme.key, body: { name: "hook query", type: "webhook", url: `http://127.0.0.1:9/hook3?token=${urlToken}`, secret: unique("s") },
    });
    expectStatus(withQuery, 201);
    expectStatus(await call("target.get.query", "GET", `/api/v1/notification-targets/${withQuery.body.id}`, { key: acme.key }), 200);
  });

  it("realtime tickets: issued once, used by a WebSocket", async () => {
    const issued = await call("ticket", "POST", "/api/v1/realtime/ticket", { key: acme.key });
    expectStatus(issued, 201);
    secrets.push({ what: "realtime ticket", value: issued.body.ticket, createdBy: "ticket" });
    await new Promise<void>((resolve, reject) => {
      const ws = new WebSocket(`${h.url.replace(/^http/, "ws")}/api/v1/realtime?ticket=${issued.body.ticket}`);
      ws.once("message", () => {
        ws.terminate();
        resolve();
      });
      ws.once("error", reject);
    });
  });

  it("the audit log, activity and their exports, read afterwards", async () => {
    for (let offset = 0; offset < 1000; offset += 200) {
      const page = await call("audit.list", "GET", `/api/v1/audit?limit=200&offset=${offset}`);
      expectStatus(page, 200);
      if (!page.body.hasMore) break;
    }
    for (let offset = 0; offset < 1000; offset += 200) {
      const page = await call("audit.list.acme", "GET", `/api/v1/audit?limit=200&offset=${offset}`, { key: acme.key });
      expectStatus(page, 200);
      if (!page.body.hasMore) break;
    }
    expectStatus(await call("audit.export", "POST", "/api/v1/audit/export", { key: acme.key, body: { format: "json" } }), 200);
    expectStatus(await call("audit.export.csv", "POST", "/api/v1/audit/export", { key: acme.key, body: { format: "csv" } }), 200);
    expectStatus(await call("activity", "GET", `/api/v1/activity/organizations/${acme.org.id}?limit=200`, { key: acme.key }), 200);
    expectStatus(await call("activity.export", "POST", "/api/v1/activity/export", { body: { format: "json" } }), 200);
  });
});

describe("where the secrets appear", () => {
  it("each generated secret in exactly one response, the one that created it; the caller's secrets in none", () => {
    expect(secrets.length).toBeGreaterThan(25);
    const problems: string[] = [];
    for (const secret of secrets) {
      const seenIn = responses.filter((r) => r.text.includes(secret.value)).map((r) => r.label);
      const expected = secret.createdBy ? [secret.createdBy] : [];
      if (JSON.stringify(seenIn) !== JSON.stringify(expected)) {
        problems.push(`${secret.what}: expected in ${JSON.stringify(expected)}, found in ${JSON.stringify(seenIn)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("no secret in any log line", () => {
    expect(h.logs.length).toBeGreaterThan(50);
    const problems: string[] = [];
    for (const secret of secrets) {
      const lines = h.logs.filter((line) => line.includes(secret.value));
      if (lines.length) problems.push(`${secret.what}: ${lines.length} log line(s), e.g. ${lines[0].slice(0, 300)}`);
    }
    expect(problems).toEqual([]);
  });
});

// --- helpers -----------------------------------------------------------------------------

async function uploadedCa(): Promise<{ certPem: string; keyPem: string }> {
  const ca = await makeCa();
  return { certPem: ca.certificatePem, keyPem: ca.privateKeyPem };
}
