// Federated sign-in against a JWKS server on loopback with keys generated here: a provider
// ID token becomes our token pair (user created or linked, group mappings applied); a wrong
// signature, issuer, audience or expiry is a 401. Group mappings: CRUD, disable, reconcile.
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { exportJWK, generateKeyPair, SignJWT, type JWK } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { hashPassword } from "../../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

const ISSUER = "https://idp.example.test/realms/fleet";
const AUDIENCE = "fleet-manager";
const KID = "test-key-1";
type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>["privateKey"];

let h: Harness;
let jwks: http.Server;
let jwksRequests = 0;
let signingKey: PrivateKey;
let strangerKey: PrivateKey;
let acme: Tenant;
let globex: Tenant;
let initech: Tenant;
const roles: Record<string, string> = {};

beforeAll(async () => {
  const pair = await generateKeyPair("RS256", { extractable: true });
  signingKey = pair.privateKey;
  strangerKey = (await generateKeyPair("RS256")).privateKey;
  const publicJwk: JWK = { ...(await exportJWK(pair.publicKey)), kid: KID, alg: "RS256", use: "sig" };
  jwks = http.createServer((req, res) => {
    jwksRequests++;
    if (req.url !== "/jwks") return void res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [publicJwk] }));
  });
  await new Promise<void>((resolve) => jwks.listen(0, "127.0.0.1", resolve));
  const port = (jwks.address() as AddressInfo).port;
  h = await createHarness({
    OIDC_ISSUER: ISSUER,
    OIDC_JWKS_URL: `http://127.0.0.1:${port}/jwks`,
    OIDC_AUDIENCE: AUDIENCE,
    OIDC_GROUPS_CLAIM: "realm_access.roles",
  });
  acme = await h.createTenant("Fed Acme");
  globex = await h.createTenant("Fed Globex");
  initech = await h.createTenant("Fed Initech");
  for (const r of await h.services.prisma.role.findMany({ where: { organizationId: null } })) roles[r.name] = r.id;
});
afterAll(async () => {
  await h?.close();
  await new Promise((r) => jwks?.close(r));
});

interface TokenOptions {
  sub?: string;
  email?: string;
  emailVerified?: boolean;
  groups?: string[];
  issuer?: string;
  audience?: string;
  expiresIn?: string | number;
  key?: PrivateKey;
}

function idToken(o: TokenOptions = {}) {
  return new SignJWT({
    email: o.email,
    email_verified: o.emailVerified ?? true,
    name: "Federated Fran",
    realm_access: { roles: o.groups ?? [] },
  })
    .setProtectedHeader({ alg: "RS256", kid: KID })
    .setIssuer(o.issuer ?? ISSUER)
    .setAudience(o.audience ?? AUDIENCE)
    .setSubject(o.sub ?? crypto.randomUUID())
    .setIssuedAt()
    .setExpirationTime(o.expiresIn ?? "5m")
    .sign(o.key ?? signingKey);
}

const signIn = async (o: TokenOptions, organizationId?: string) =>
  h.api("POST", "/api/v1/auth/oidc", { key: null, body: { idToken: await idToken(o), organizationId } });

async function createMapping(group: string, org: Tenant, role: string) {
  const res = await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group, organizationId: org.org.id, roleId: roles[role] } });
  expect(res.status).toBe(201);
  return res.body as { id: string };
}

async function rolesOf(userId: string) {
  const rows = await h.services.prisma.membership.findMany({ where: { userId }, include: { role: true } });
  return Object.fromEntries(rows.map((m) => [m.organizationId, m.role.name]));
}

describe("sign-in with an ID token", () => {
  it("creates the user, applies the group mappings and answers the same token pair as login", async () => {
    await createMapping("fleet-operators", acme, "operator");
    const email = `fran-${crypto.randomBytes(3).toString("hex")}@idp.example.test`;
    const sub = crypto.randomUUID();
    const res = await signIn({ sub, email, groups: ["fleet-operators", "unmapped"] });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ tokenType: "Bearer", accessToken: expect.any(String), refreshToken: expect.stringMatching(/^fmr_/), expiresAt: expect.any(String) });
    expect(jwksRequests).toBeGreaterThan(0);

    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email }, include: { federatedIdentity: true } });
    expect(user).toMatchObject({ identityIssuer: ISSUER, identitySubject: sub, passwordHash: null, name: "Federated Fran" });
    expect(user.federatedIdentity?.groups).toEqual(["fleet-operators", "unmapped"]);
    expect(await rolesOf(user.id)).toEqual({ [acme.org.id]: "operator" });

    const profile = await h.api("GET", "/api/v1/profile", { key: null, token: res.body.accessToken });
    expect(profile.status).toBe(200);
    expect(profile.body).toMatchObject({ hasPassword: false, federatedIdentity: { issuer: ISSUER, subject: sub }, organization: { id: acme.org.id }, role: "operator" });
    expect((await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: res.body.refreshToken } })).status).toBe(200);

    // The second sign-in finds the same user by issuer and subject.
    const again = await signIn({ sub, email: "changed@idp.example.test", groups: ["fleet-operators"] });
    expect(again.status).toBe(200);
    expect(await h.services.prisma.user.count({ where: { identitySubject: sub } })).toBe(1);
    const logins = await h.services.prisma.auditEntry.findMany({ where: { action: "auth.login", userId: user.id, outcome: "success" } });
    expect(logins).toHaveLength(2);
    expect(logins[0].message).toBe("via OIDC");
  });

  it("links an existing account by a provider-verified e-mail, never an unverified one", async () => {
    const prisma = h.services.prisma;
    const email = `linked-${crypto.randomBytes(3).toString("hex")}@example.test`;
    const existing = await prisma.user.create({ data: { email, name: "Lee", passwordHash: await hashPassword("lee-password-123") } });
    await prisma.membership.create({ data: { organizationId: globex.org.id, userId: existing.id, roleId: roles.viewer } });

    const unverified = await signIn({ email, emailVerified: false });
    expect(unverified.status).toBe(409);
    expect((await prisma.user.findUniqueOrThrow({ where: { id: existing.id } })).identitySubject).toBeNull();

    const sub = crypto.randomUUID();
    const linked = await signIn({ sub, email: email.toUpperCase() });
    expect(linked.status).toBe(200);
    expect(await prisma.user.findUniqueOrThrow({ where: { id: existing.id } })).toMatchObject({ identityIssuer: ISSUER, identitySubject: sub });
    // another subject claiming the same address cannot take the account over
    expect((await signIn({ email })).status).toBe(409);
    // the password still works: linking adds a way in, it does not remove one
    expect((await h.api("POST", "/api/v1/auth/login", { key: null, body: { email, password: "lee-password-123" } })).status).toBe(200);
  });

  it("refuses a wrong signature, issuer, audience or expiry with 401, and records each", async () => {
    const email = `refused-${crypto.randomBytes(3).toString("hex")}@idp.example.test`;
    const before = await h.services.prisma.auditEntry.count({ where: { action: "auth.login", outcome: "failure", message: { startsWith: "OIDC:" } } });
    const cases: [string, TokenOptions][] = [
      ["signature", { email, key: strangerKey }],
      ["issuer", { email, issuer: "https://evil.example.test" }],
      ["audience", { email, audience: "someone-else" }],
      ["expiry", { email, expiresIn: Math.floor(Date.now() / 1000) - 600 }],
    ];
    for (const [what, options] of cases) {
      const res = await signIn(options);
      expect(res.status, what).toBe(401);
      expect(res.body).toMatchObject({ code: "UNAUTHORIZED", message: "Invalid ID token" });
    }
    expect((await h.api("POST", "/api/v1/auth/oidc", { key: null, body: { idToken: "not.a.jwt" } })).status).toBe(401);
    expect((await h.api("POST", "/api/v1/auth/oidc", { key: null, body: {} })).status).toBe(400);
    expect(await h.services.prisma.user.count({ where: { email } })).toBe(0);
    const after = await h.services.prisma.auditEntry.count({ where: { action: "auth.login", outcome: "failure", message: { startsWith: "OIDC:" } } });
    expect(after - before).toBe(5);
  });

  it("is documented next to login", async () => {
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    expect(doc.body.paths["/auth/oidc"].post.requestBody.content["application/json"].schema.required).toEqual(["idToken"]);
  });
});

describe("group mappings", () => {
  it("creates, lists, gets, updates and disables", async () => {
    const created = await h.api("POST", "/api/v1/federation/group-mappings", {
      key: ADMIN_KEY, body: { group: "crud-group", organizationId: globex.org.id, roleId: roles.viewer, description: "readers" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ group: "crud-group", organizationId: globex.org.id, organizationName: globex.org.name, roleName: "viewer", enabled: true, description: "readers" });
    const id = created.body.id;

    expect((await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "crud-group", organizationId: globex.org.id, roleId: roles.admin } })).status).toBe(409);
    const customRole = await h.services.prisma.role.create({ data: { organizationId: acme.org.id, name: `custom-${crypto.randomBytes(2).toString("hex")}`, permissions: ["devices:read"] } });
    // a custom role of another organization cannot be mapped
    expect((await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "x", organizationId: globex.org.id, roleId: customRole.id } })).status).toBe(404);
    expect((await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "x", organizationId: acme.org.id, roleId: customRole.id } })).status).toBe(201);
    expect((await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "x", organizationId: crypto.randomUUID(), roleId: roles.viewer } })).status).toBe(404);

    const list = await h.api("GET", `/api/v1/federation/group-mappings?organizationId=${globex.org.id}&enabled=true`, { key: ADMIN_KEY });
    expect(list.status).toBe(200);
    expect(list.body.items.map((m: { id: string }) => m.id)).toContain(id);
    expect(list.body.items.every((m: { organizationId: string }) => m.organizationId === globex.org.id)).toBe(true);
    expect((await h.api("GET", "/api/v1/federation/group-mappings?group=crud-group", { key: ADMIN_KEY })).body.total).toBe(1);

    expect((await h.api("GET", `/api/v1/federation/group-mappings/${id}`, { key: ADMIN_KEY })).body.id).toBe(id);
    expect((await h.api("GET", `/api/v1/federation/group-mappings/${crypto.randomUUID()}`, { key: ADMIN_KEY })).status).toBe(404);

    const updated = await h.api("PATCH", `/api/v1/federation/group-mappings/${id}`, { key: ADMIN_KEY, body: { roleId: roles.operator, description: null } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ roleName: "operator", description: null });
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "federation.update", entityId: id } });
    expect(entry.changes).toEqual({ roleId: { from: roles.viewer, to: roles.operator }, description: { from: "readers", to: null } });

    const disabled = await h.api("POST", `/api/v1/federation/group-mappings/${id}/disable`, { key: ADMIN_KEY });
    expect(disabled.status).toBe(200);
    expect(disabled.body.enabled).toBe(false);
    expect((await h.api("POST", `/api/v1/federation/group-mappings/${id}/disable`, { key: ADMIN_KEY })).status).toBe(409);
    expect((await h.api("GET", "/api/v1/federation/group-mappings?enabled=false", { key: ADMIN_KEY })).body.items.map((m: { id: string }) => m.id)).toContain(id);
  });

  it("reconciles linked users from the groups of their last ID token, and reports what changed", async () => {
    const admins = await createMapping("rec-admins", globex, "admin");
    const readers = await createMapping("rec-readers", initech, "viewer");
    await createMapping("rec-readers", acme, "viewer");
    const email = `rec-${crypto.randomBytes(3).toString("hex")}@idp.example.test`;
    expect((await signIn({ email, groups: ["rec-admins", "rec-readers"] })).status).toBe(200);
    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email } });
    expect(await rolesOf(user.id)).toEqual({ [globex.org.id]: "admin", [initech.org.id]: "viewer", [acme.org.id]: "viewer" });

    // By hand: acme makes the user an owner. Mappings never touch that membership.
    await h.services.prisma.membership.update({ where: { organizationId_userId: { organizationId: acme.org.id, userId: user.id } }, data: { roleId: roles.owner } });
    await h.services.prisma.federationGrant.delete({ where: { organizationId_userId: { organizationId: acme.org.id, userId: user.id } } });

    await h.api("PATCH", `/api/v1/federation/group-mappings/${admins.id}`, { key: ADMIN_KEY, body: { roleId: roles.operator } });
    await h.api("POST", `/api/v1/federation/group-mappings/${readers.id}/disable`, { key: ADMIN_KEY });

    const dry = await h.api("POST", "/api/v1/federation/group-mappings/reconcile", { key: ADMIN_KEY, body: { dryRun: true } });
    expect(dry.status).toBe(200);
    expect(dry.body.dryRun).toBe(true);
    expect(await rolesOf(user.id)).toEqual({ [globex.org.id]: "admin", [initech.org.id]: "viewer", [acme.org.id]: "owner" });

    const res = await h.api("POST", "/api/v1/federation/group-mappings/reconcile", { key: ADMIN_KEY });
    expect(res.status).toBe(200);
    const mine = (list: { userId: string }[]) => list.filter((c) => c.userId === user.id);
    expect(mine(res.body.updated)).toEqual([{ userId: user.id, email, organizationId: globex.org.id, role: "operator", previousRole: "admin" }]);
    expect(mine(res.body.removed)).toEqual([{ userId: user.id, email, organizationId: initech.org.id, role: null, previousRole: "viewer" }]);
    expect(mine(res.body.added)).toEqual([]);
    expect(mine(res.body.skipped)).toEqual([expect.objectContaining({ organizationId: acme.org.id, role: "viewer", previousRole: "owner" })]);
    expect(dry.body.updated).toEqual(res.body.updated);
    expect(res.body.usersChecked).toBeGreaterThanOrEqual(1);
    expect(await rolesOf(user.id)).toEqual({ [globex.org.id]: "operator", [acme.org.id]: "owner" });
    // a second run has nothing left to do
    const again = await h.api("POST", "/api/v1/federation/group-mappings/reconcile", { key: ADMIN_KEY });
    expect(mine(again.body.updated).length + mine(again.body.removed).length + mine(again.body.added).length).toBe(0);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "federation.reconcile", requestId: res.headers.get("x-request-id")! } });
    expect(entry.outcome).toBe("success");
  });

  it("is for Super Admins only, through REST and tRPC", async () => {
    const mapping = await createMapping(`sec-${crypto.randomBytes(2).toString("hex")}`, acme, "viewer");
    const base = "/api/v1/federation/group-mappings";
    const cases = [
      { method: "GET", path: base },
      { method: "POST", path: base, body: { group: "g", organizationId: acme.org.id, roleId: roles.viewer } },
      { method: "GET", path: `${base}/${mapping.id}` },
      { method: "PATCH", path: `${base}/${mapping.id}`, body: { description: "x" } },
      { method: "POST", path: `${base}/${mapping.id}/disable` },
      { method: "POST", path: `${base}/reconcile` },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, { ...c, permission: "platform:admin" });
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": ADMIN_KEY } })] });
    expect((await client.federation.get.query({ id: mapping.id })).group).toMatch(/^sec-/);
  });
});
