// "Sign in with <provider>" for the browser, against a real OpenID Connect provider on loopback
// (test/support/oidc-provider.ts): the service redirects with PKCE S256, state and nonce,
// exchanges the code itself and ends in the console's cookie session, the user provisioned as
// POST /auth/oidc does. Every refusal (forged, replayed or expired state, wrong nonce, the
// provider's own refusal, a disabled user, an off-site `next`) lands on /sign-in?error=<code>
// with nothing created, and no code, token or secret reaches a URL or a log.
import crypto from "node:crypto";
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { clientSettingsOf, startOidcProvider, type OidcProvider } from "../../support/oidc-provider.js";

const CALLBACK = "/api/v1/auth/oidc/callback";

let h: Harness;
let provider: OidcProvider;
let acme: Tenant;
/** every state and verifier the service handed out, for the leak check */
const handedOut: string[] = [];

beforeAll(async () => {
  provider = await startOidcProvider();
  h = await createHarness(clientSettingsOf(provider));
  provider.redirectUris.add(h.url + CALLBACK);
  acme = await h.createTenant("Browser Fed Acme");
  const operator = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "operator" } });
  const mapping = await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "console-operators", organizationId: acme.org.id, roleId: operator.id } });
  expect(mapping.status).toBe(201);
});
afterAll(async () => {
  await h?.close();
  await provider?.close();
});

function cookiesOf(res: Response): Record<string, string> {
  return Object.fromEntries(res.headers.getSetCookie().map((c) => [c.slice(0, c.indexOf("=")), c]));
}
const valueOf = (setCookie: string) => setCookie.slice(setCookie.indexOf("=") + 1, setCookie.indexOf(";"));

/** GET /authorize as a browser would: the provider's URL and the verifier cookie. */
async function start(next = "/devices") {
  const res = await fetch(`${h.url}/api/v1/auth/oidc/authorize?next=${encodeURIComponent(next)}`, { redirect: "manual" });
  const location = res.headers.get("location") ?? "";
  const setCookie = cookiesOf(res).fm_oidc;
  const verifier = setCookie ? valueOf(setCookie) : "";
  const state = location.startsWith(provider.issuer) ? new URL(location).searchParams.get("state") ?? "" : "";
  handedOut.push(verifier, state);
  return { res, location, setCookie, verifier, state, cookie: `fm_oidc=${verifier}` };
}

/** The provider's answer: where it sends the browser back to. */
async function atProvider(location: string): Promise<string> {
  const res = await fetch(location, { redirect: "manual" });
  expect(res.status).toBe(302);
  return res.headers.get("location")!;
}

async function callback(url: string, cookie?: string) {
  return fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
}

/** Where a refusal sends the browser: /sign-in?error=<code>[&next=...]. */
function refusalOf(res: Response) {
  expect(res.status).toBe(302);
  const location = res.headers.get("location")!;
  expect(location.startsWith("/sign-in?")).toBe(true);
  const params = new URL(location, h.url).searchParams;
  return { error: params.get("error"), next: params.get("next"), location };
}

const sessionsOf = (userId: string) => h.services.prisma.session.count({ where: { userId } });
const newUser = (tag: string) => ({ sub: crypto.randomUUID(), email: `${tag}-${crypto.randomBytes(3).toString("hex")}@idp.example.test` });

describe("sign-in with the provider from a browser", () => {
  it("says which ways to sign in are offered", async () => {
    const res = await h.api("GET", "/api/v1/auth/providers", { key: null });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ password: true, oidc: { name: "Test IdP", startUrl: "/api/v1/auth/oidc/authorize" } });
  });

  it("redirects with PKCE, state and nonce, exchanges the code, and ends in a cookie session for the mapped user", async () => {
    provider.user = { ...newUser("fran"), name: "Fran Federated", groups: ["console-operators"] };
    const s = await start("/devices?status=online");

    // To the provider's authorization endpoint, with everything the code flow needs.
    expect(s.res.status).toBe(302);
    expect(s.res.headers.get("cache-control")).toBe("no-store");
    const authorize = new URL(s.location);
    expect(authorize.origin + authorize.pathname).toBe(`${provider.issuer}/authorize`);
    const p = authorize.searchParams;
    expect(Object.fromEntries([...p].filter(([k]) => !["state", "nonce", "code_challenge"].includes(k)))).toEqual({
      response_type: "code",
      client_id: provider.clientId,
      redirect_uri: h.url + CALLBACK,
      scope: "openid email profile",
      code_challenge_method: "S256",
    });
    expect(p.get("state")!.length).toBeGreaterThanOrEqual(32);
    expect(p.get("nonce")!.length).toBeGreaterThanOrEqual(32);
    // The verifier is in the browser's cookie only; the challenge is its SHA-256 (S256).
    expect(s.setCookie).toMatch(/^fm_oidc=[A-Za-z0-9_-]{43,}; Max-Age=600; Path=\/api\/v1\/auth\/oidc\/callback; HttpOnly; SameSite=Lax$/);
    expect(crypto.createHash("sha256").update(s.verifier).digest("base64url")).toBe(p.get("code_challenge"));
    const attempt = await h.services.prisma.oidcSignInAttempt.findUniqueOrThrow({ where: { stateHash: sha256Hex(s.state) } });
    expect(attempt).toMatchObject({ returnTo: "/devices?status=online", redirectUri: h.url + CALLBACK, nonce: p.get("nonce"), consumedAt: null });
    expect(JSON.stringify(attempt)).not.toContain(s.verifier);
    expect(JSON.stringify(attempt)).not.toContain(s.state);

    // Back from the provider: signed in, by a page of ours that moves on to `next`.
    const back = await atProvider(s.location);
    expect(back.startsWith(h.url + CALLBACK + "?")).toBe(true);
    const res = await callback(back, s.cookie);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const page = await res.text();
    expect(page).toContain('<meta http-equiv="refresh" content="0;url=/devices?status=online">');
    expect(page).not.toMatch(/<script/i);
    const cookies = cookiesOf(res);
    expect(cookies.fm_oidc).toMatch(/^fm_oidc=; Max-Age=0; Path=\/api\/v1\/auth\/oidc\/callback; HttpOnly; SameSite=Lax$/);
    expect(cookies.fm_session).toMatch(/^fm_session=fmc_[^;]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Strict$/);
    const secret = valueOf(cookies.fm_session);

    // The code went back to the provider with the client's credentials and the right verifier.
    expect(provider.tokenRequests.at(-1)).toEqual({ clientAuthenticated: true, verifierMatched: true, redirectUri: h.url + CALLBACK, outcome: "issued" });

    // The user, provisioned as POST /auth/oidc does, and the session the cookie names.
    const prisma = h.services.prisma;
    const user = await prisma.user.findUniqueOrThrow({ where: { email: provider.user.email }, include: { federatedIdentity: true } });
    expect(user).toMatchObject({ identityIssuer: provider.issuer, identitySubject: provider.user.sub, name: "Fran Federated", passwordHash: null });
    expect(user.federatedIdentity?.groups).toEqual(["console-operators"]);
    const session = await prisma.session.findUniqueOrThrow({ where: { cookieTokenHash: sha256Hex(secret) } });
    expect(session).toMatchObject({ userId: user.id, organizationId: acme.org.id, revokedAt: null });
    expect((await prisma.oidcSignInAttempt.findUniqueOrThrow({ where: { id: attempt.id } })).consumedAt).not.toBeNull();
    const entry = await prisma.auditEntry.findFirstOrThrow({ where: { action: "auth.login", outcome: "success", entityId: session.id } });
    expect(entry).toMatchObject({ userId: user.id, organizationId: acme.org.id, message: "via OIDC" });

    // The cookie works: the console's first call answers the user, acting as the mapping says.
    const context = await h.api("GET", "/api/v1/tenant/context", { key: null, headers: { cookie: `fm_session=${secret}` } });
    expect(context.status).toBe(200);
    expect(context.body).toMatchObject({ credential: "session", userId: user.id, email: provider.user.email, organization: { id: acme.org.id }, role: "operator" });

    // The same answer again (a replay, even with the cookie) is refused: the attempt is spent.
    const replay = await callback(back, s.cookie);
    expect(refusalOf(replay)).toMatchObject({ error: "state_used", next: null });
    expect(cookiesOf(replay).fm_session).toBeUndefined();
    expect(await sessionsOf(user.id)).toBe(1);
    expect(provider.tokenRequests.at(-1)?.outcome).toBe("issued"); // the replay never reached the token endpoint
  });

  it("refuses an answer meant for another browser, or naming no attempt, and leaves the attempt to its own browser", async () => {
    provider.user = newUser("mallory-victim");
    const mine = await start();
    const theirs = await start();
    const theirAnswer = await atProvider(theirs.location);
    const tokenCalls = provider.tokenRequests.length;

    expect(refusalOf(await callback(theirAnswer, mine.cookie))).toMatchObject({ error: "state_mismatch", next: null });
    expect(refusalOf(await callback(theirAnswer))).toMatchObject({ error: "state_mismatch" });
    const forged = new URL(theirAnswer);
    forged.searchParams.set("state", crypto.randomBytes(32).toString("base64url"));
    expect(refusalOf(await callback(forged.href, theirs.cookie))).toMatchObject({ error: "state_mismatch" });
    expect(refusalOf(await callback(h.url + CALLBACK, theirs.cookie))).toMatchObject({ error: "state_mismatch" });
    expect(provider.tokenRequests.length).toBe(tokenCalls);
    expect(await h.services.prisma.user.count({ where: { email: provider.user.email } })).toBe(0);
    const failures = await h.services.prisma.auditEntry.count({ where: { action: "auth.login", outcome: "failure", message: { startsWith: "OIDC: the sign-in attempt belongs to another browser" } } });
    expect(failures).toBe(2); // another browser's cookie, and none

    // The browser it belongs to still signs in with it.
    const res = await callback(theirAnswer, theirs.cookie);
    expect(res.status).toBe(200);
    expect(cookiesOf(res).fm_session).toMatch(/^fm_session=fmc_/);
  });

  it("refuses an attempt that expired, without calling the provider", async () => {
    provider.user = newUser("slow");
    const s = await start("/groups");
    const back = await atProvider(s.location);
    await h.services.prisma.oidcSignInAttempt.update({ where: { stateHash: sha256Hex(s.state) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const tokenCalls = provider.tokenRequests.length;
    expect(refusalOf(await callback(back, s.cookie))).toMatchObject({ error: "state_expired", next: null });
    expect(provider.tokenRequests.length).toBe(tokenCalls);
    expect(await h.services.prisma.user.count({ where: { email: provider.user.email } })).toBe(0);
  });

  it("refuses an ID token with another nonce, and the provider's own refusal, creating nothing", async () => {
    provider.user = newUser("nonce");
    provider.tamper = (claims) => ({ ...claims, nonce: crypto.randomBytes(32).toString("base64url") });
    try {
      const s = await start("/devices");
      const res = await callback(await atProvider(s.location), s.cookie);
      expect(refusalOf(res)).toMatchObject({ error: "invalid_response", next: "/devices" });
      expect(cookiesOf(res).fm_session).toBeUndefined();
      expect(provider.tokenRequests.at(-1)?.outcome).toBe("issued");
    } finally {
      provider.tamper = null;
    }
    expect(await h.services.prisma.user.count({ where: { email: provider.user.email } })).toBe(0);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "auth.login", outcome: "failure" }, orderBy: { createdAt: "desc" } });
    expect(entry.message).toMatch(/^OIDC: the ID token was refused: .* \(nonce\)$/);

    provider.answer = { error: "access_denied", description: "The user said no (do-not-echo-this-description)" };
    try {
      const s = await start("/enrollment-tokens");
      const tokenCalls = provider.tokenRequests.length;
      const res = await callback(await atProvider(s.location), s.cookie);
      const refusal = refusalOf(res);
      expect(refusal).toMatchObject({ error: "denied", next: "/enrollment-tokens" });
      expect(refusal.location).not.toContain("do-not-echo");
      expect(provider.tokenRequests.length).toBe(tokenCalls);
    } finally {
      provider.answer = "sign-in";
    }
    provider.answer = { error: "server_error" };
    try {
      const s = await start("/");
      expect(refusalOf(await callback(await atProvider(s.location), s.cookie))).toMatchObject({ error: "provider_error", next: null });
    } finally {
      provider.answer = "sign-in";
    }
    expect(await h.services.prisma.user.count({ where: { email: provider.user.email } })).toBe(0);
    expect(h.logs.join("\n")).not.toContain("do-not-echo");
  });

  it("refuses a disabled user, and an e-mail it may not link, opening no session", async () => {
    const prisma = h.services.prisma;
    provider.user = newUser("disabled");
    const disabled = await prisma.user.create({
      data: { email: provider.user.email!, name: "Dee", passwordHash: null, identityIssuer: provider.issuer, identitySubject: provider.user.sub, status: "disabled" },
    });
    const s = await start("/devices");
    expect(refusalOf(await callback(await atProvider(s.location), s.cookie))).toMatchObject({ error: "user_disabled", next: "/devices" });
    expect(await sessionsOf(disabled.id)).toBe(0);
    expect(await prisma.auditEntry.count({ where: { action: "auth.login", outcome: "failure", entityId: disabled.id, message: "OIDC: user is disabled" } })).toBe(1);

    // An existing account whose address the provider has not verified is not handed over.
    const existing = await prisma.user.create({ data: { email: `kept-${crypto.randomBytes(3).toString("hex")}@example.test`, name: "Kim", passwordHash: null } });
    provider.user = { sub: crypto.randomUUID(), email: existing.email, emailVerified: false };
    const t = await start();
    expect(refusalOf(await callback(await atProvider(t.location), t.cookie))).toMatchObject({ error: "account_conflict" });
    expect((await prisma.user.findUniqueOrThrow({ where: { id: existing.id } })).identitySubject).toBeNull();
    expect(await sessionsOf(existing.id)).toBe(0);
  });

  it("says the provider is unavailable when its token endpoint fails", async () => {
    provider.user = newUser("down");
    provider.tokenEndpointDown = true;
    try {
      const s = await start("/groups");
      expect(refusalOf(await callback(await atProvider(s.location), s.cookie))).toMatchObject({ error: "unavailable", next: "/groups" });
    } finally {
      provider.tokenEndpointDown = false;
    }
    expect(await h.services.prisma.user.count({ where: { email: provider.user.email } })).toBe(0);
  });

  it("refuses a `next` outside the console before anything is created", async () => {
    const before = await h.services.prisma.oidcSignInAttempt.count();
    for (const next of ["https://evil.example.test/", "//evil.example.test/x", "/\\evil.example.test", "http:/evil.example.test", "/api/v1/devices", "/trpc/devices.list", "javascript:alert(1)", "/devices\nSet-Cookie: x=1"]) {
      const res = await fetch(`${h.url}/api/v1/auth/oidc/authorize?next=${encodeURIComponent(next)}`, { redirect: "manual" });
      expect(res.status, next).toBe(302);
      expect(res.headers.get("location"), next).toBe("/sign-in?error=invalid_next");
      expect(res.headers.getSetCookie(), next).toEqual([]);
    }
    expect(await h.services.prisma.oidcSignInAttempt.count()).toBe(before);
    // The sign-in page itself is not a destination: the overview is.
    const s = await start("/sign-in?next=/devices");
    expect((await h.services.prisma.oidcSignInAttempt.findUniqueOrThrow({ where: { stateHash: sha256Hex(s.state) } })).returnTo).toBe("/");
  });

  it("is documented in openapi.json", async () => {
    const doc = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body;
    expect(doc.paths["/auth/providers"].get.responses["200"]).toBeDefined();
    expect(doc.paths["/auth/oidc/authorize"].get.responses["302"]).toBeDefined();
    expect(doc.paths["/auth/oidc/callback"].get.responses["200"].content["text/html"]).toBeDefined();
    expect(doc.paths["/auth/oidc/callback"].get.security).toEqual([]);
  });

  it("keeps the client secret, codes, tokens, states and verifiers out of every log line and audit entry", async () => {
    const secrets = [provider.clientSecret, ...provider.codesIssued, ...provider.idTokensIssued, ...handedOut.filter(Boolean)];
    expect(secrets.length).toBeGreaterThan(10);
    const logs = h.logs.join("\n");
    const audit = JSON.stringify(await h.services.prisma.auditEntry.findMany({ where: { action: "auth.login" } }));
    for (const secret of secrets) {
      expect(logs.includes(secret)).toBe(false);
      expect(audit.includes(secret)).toBe(false);
    }
  });
});

describe("other configurations: PUBLIC_URL, an unreachable provider, no client", () => {
  let hp: Harness;
  const publicUrl = "http://fleet.localhost:8443";
  beforeAll(async () => {
    hp = await createHarness({ ...clientSettingsOf(provider), PUBLIC_URL: `${publicUrl}/` });
  });
  afterAll(async () => hp?.close());

  /** GET with an explicit Host header (fetch may not set one). */
  function getWithHost(path: string, host: string): Promise<http.IncomingMessage> {
    return new Promise((resolve, reject) => {
      http.get(hp.url + path, { headers: { host } }, (res) => {
        res.resume();
        resolve(res);
      }).on("error", reject);
    });
  }

  it("sends a browser that came another way to the public address first, and registers the public redirect URI", async () => {
    const path = "/api/v1/auth/oidc/authorize?next=%2Fdevices";
    const elsewhere = await getWithHost(path, new URL(hp.url).host);
    expect(elsewhere.statusCode).toBe(302);
    expect(elsewhere.headers.location).toBe(publicUrl + path);
    expect(elsewhere.headers["set-cookie"]).toBeUndefined();

    const here = await getWithHost(path, new URL(publicUrl).host);
    expect(here.statusCode).toBe(302);
    const authorize = new URL(here.headers.location!);
    expect(authorize.searchParams.get("redirect_uri")).toBe(`${publicUrl}${CALLBACK}`);
    expect(here.headers["set-cookie"]?.[0]).toMatch(/^fm_oidc=/);
  });

  it("says the provider is unavailable when its discovery document cannot be read, and stores nothing", async () => {
    const gone = await startOidcProvider();
    const settings = clientSettingsOf(gone);
    await gone.close(); // its port now refuses connections
    const down = await createHarness(settings);
    try {
      const res = await fetch(`${down.url}/api/v1/auth/oidc/authorize?next=/groups`, { redirect: "manual" });
      expect(res.headers.get("location")).toBe("/sign-in?error=unavailable&next=%2Fgroups");
      expect(res.headers.getSetCookie()).toEqual([]);
      expect(await down.services.prisma.oidcSignInAttempt.count()).toBe(0);
      expect(down.logs.join("\n")).toContain("OIDC discovery failed");
    } finally {
      await down.close();
    }
  });

  it("is off without a client: providers says so and the start says why", async () => {
    const off = await createHarness({ OIDC_ISSUER: provider.issuer, OIDC_JWKS_URL: `${provider.issuer}/jwks`, OIDC_AUDIENCE: "fleet" });
    try {
      expect((await off.api("GET", "/api/v1/auth/providers", { key: null })).body).toEqual({ password: true, oidc: null });
      const res = await fetch(`${off.url}/api/v1/auth/oidc/authorize?next=/devices`, { redirect: "manual" });
      expect(res.headers.get("location")).toBe("/sign-in?error=not_configured&next=%2Fdevices");
    } finally {
      await off.close();
    }
  });
});
