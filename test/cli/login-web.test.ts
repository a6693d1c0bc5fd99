// `fleet login URL --web`: the browser sign-in of a native client (RFC 8252) through the
// service's OpenID Connect provider, for people who sign in only there. The CLI runs as a
// subprocess (cli/bin/fleet.js) against a service on loopback with a real provider on loopback
// (test/support/oidc-provider.ts); this test plays the browser: it opens the address the CLI
// prints, goes through the provider as the console's OIDC tests do (the fm_oidc cookie kept), and
// lets the service's redirect reach the CLI's loopback callback. Then the saved context must
// work. The service's side is checked at HTTP level too: the one-time code works once, for 60 s,
// with its PKCE verifier and redirect_uri only, and a non-loopback redirect_uri is refused at
// once; every refusal is a 4xx naming the problem, with nothing issued.
import { spawn, type ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { sha256Hex } from "../../src/lib/crypto.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../support/harness.js";
import { clientSettingsOf, startOidcProvider, type OidcProvider } from "../support/oidc-provider.js";
import { eventually, ROOT } from "../support/server-process.js";

const BIN = path.join(ROOT, "cli", "bin", "fleet.js");
const CALLBACK = "/api/v1/auth/oidc/callback";
const AUTHORIZE = "/api/v1/auth/oidc/authorize";

let h: Harness;
let provider: OidcProvider;
let acme: Tenant;
/** every code and verifier handed out, for the leak check */
const secrets: string[] = [];

beforeAll(async () => {
  provider = await startOidcProvider();
  h = await createHarness(clientSettingsOf(provider));
  provider.redirectUris.add(h.url + CALLBACK);
  acme = await h.createTenant("CLI Web Acme");
  const operator = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: null, name: "operator" } });
  const mapping = await h.api("POST", "/api/v1/federation/group-mappings", { key: ADMIN_KEY, body: { group: "cli-operators", organizationId: acme.org.id, roleId: operator.id } });
  expect(mapping.status).toBe(201);
  await h.services.prisma.device.create({ data: { organizationId: acme.org.id, name: "gw-web-01" } });
});
afterAll(async () => {
  await h?.close();
  await provider?.close();
});

interface Running {
  child: ChildProcess;
  err: () => string;
  exited: Promise<number | null>;
}

function home(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "fleet-cli-web-"));
}

/** No DISPLAY, no BROWSER: nothing to open a browser with, as on a server. */
const envOf = (dir: string, extra: Record<string, string> = {}) => ({ PATH: process.env.PATH ?? "", HOME: dir, XDG_CONFIG_HOME: path.join(dir, ".config"), ...extra });

function start(dir: string, args: string[], extra: Record<string, string> = {}): Running {
  const child = spawn(process.execPath, [BIN, ...args], { env: envOf(dir, extra), stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stdout!.resume();
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, err: () => stderr, exited };
}

async function fleet(dir: string, args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: envOf(dir), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on("data", (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stdout, stderr };
}

/** The address the CLI prints for the browser. */
async function printedUrl(run: Running): Promise<URL> {
  const line = await eventually(async () => /^ {2}(http\S+)$/m.exec(run.err())?.[1], 20_000, `the sign-in address on fleet's stderr (so far: ${run.err()})`);
  return new URL(line);
}

/**
 * The browser's way from the service's authorize address through the provider back to the
 * service's callback; answers the callback's response (not followed).
 */
async function throughProvider(authorizeUrl: string): Promise<Response> {
  const started = await fetch(authorizeUrl, { redirect: "manual" });
  expect(started.status, await started.clone().text()).toBe(302);
  const verifierCookie = started.headers.getSetCookie().find((c) => c.startsWith("fm_oidc="))!;
  const cookie = verifierCookie.slice(0, verifierCookie.indexOf(";"));
  const atProvider = await fetch(started.headers.get("location")!, { redirect: "manual" });
  expect(atProvider.status).toBe(302);
  const back = atProvider.headers.get("location")!;
  expect(back.startsWith(h.url + CALLBACK + "?")).toBe(true);
  return fetch(back, { redirect: "manual", headers: { cookie } });
}

const newUser = (tag: string) => ({ sub: crypto.randomUUID(), email: `${tag}-${crypto.randomBytes(3).toString("hex")}@idp.example.test`, emailVerified: true, groups: ["cli-operators"] });

describe("fleet login --web", () => {
  it("signs in through the browser with PKCE on a loopback callback, ignores an answer with another state, and saves a context that works", async () => {
    provider.user = newUser("wendy");
    const dir = home();
    const run = start(dir, ["login", h.url, "--web", "--no-browser", "--name", "web"]);
    const url = await printedUrl(run);

    // The service's authorize address, with what a native client sends (RFC 8252, RFC 7636).
    expect(url.origin + url.pathname).toBe(h.url + AUTHORIZE);
    const redirectUri = url.searchParams.get("redirect_uri")!;
    expect(redirectUri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const state = url.searchParams.get("state")!;
    expect(state.length).toBeGreaterThanOrEqual(43);
    expect(run.err()).toContain("Open this address in a browser");

    // Back from the provider, the service sends the browser to the CLI's loopback address with
    // a one-time code and the CLI's state; the session behind it is dormant until the exchange.
    const callback = await throughProvider(url.href);
    expect(callback.status).toBe(302);
    expect(callback.headers.get("set-cookie") ?? "").not.toContain("fm_session");
    const toCli = new URL(callback.headers.get("location")!);
    expect(toCli.origin + toCli.pathname).toBe(redirectUri);
    expect(toCli.searchParams.get("state")).toBe(state);
    const code = toCli.searchParams.get("code")!;
    expect(code).toMatch(/^fmo_[A-Za-z0-9_-]+$/);
    secrets.push(code);
    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email: provider.user.email } });
    const pending = await h.services.prisma.session.findFirstOrThrow({ where: { userId: user.id } });
    expect(pending).toMatchObject({ organizationId: acme.org.id, revokedAt: null, cookieTokenHash: null });
    expect(pending.expiresAt.getTime() - Date.now()).toBeLessThanOrEqual(60_000);

    // A page of another site sending the browser to the CLI's callback (CSRF) is not taken.
    const forged = new URL(redirectUri);
    forged.search = new URLSearchParams({ code, state: "someone-elses-state-0123456789" }).toString();
    const refused = await fetch(forged);
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("state does not match");
    expect(run.err()).toContain("Ignored an answer on the loopback callback that is not for this sign-in");

    // The real answer: the CLI exchanges the code and says so to the browser.
    const answer = await fetch(toCli);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toContain("fleet is signed in");
    expect(await run.exited, run.err()).toBe(0);
    expect(run.err()).toContain(`Signed in to ${h.url} as ${provider.user.email} in ${acme.org.slug} (operator)`);

    // The saved context: a session's tokens, in the 0600 file, and they work.
    const file = path.join(dir, ".config", "fleet", "config.yaml");
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    const saved = parseYaml(fs.readFileSync(file, "utf8"));
    expect(saved.currentContext).toBe("web");
    expect(saved.contexts.web).toMatchObject({ server: h.url, user: provider.user.email, organization: { id: acme.org.id, slug: acme.org.slug } });
    expect(saved.contexts.web.refreshToken).toMatch(/^fmr_/);
    const devices = await fleet(dir, ["get", "devices", "-o", "json"]);
    expect(devices.code, devices.stderr).toBe(0);
    expect(JSON.parse(devices.stdout)).toMatchObject({ items: [{ name: "gw-web-01" }], total: 1 });

    // The session is now the CLI's: a full life, the refresh token's hash, audited at the sign-in.
    const active = await h.services.prisma.session.findUniqueOrThrow({ where: { id: pending.id } });
    expect(active.refreshTokenHash).toBe(sha256Hex(saved.contexts.web.refreshToken));
    expect(active.expiresAt.getTime() - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const entry = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "auth.login", outcome: "success", entityId: pending.id } });
    expect(entry).toMatchObject({ userId: user.id, organizationId: acme.org.id, message: "via OIDC, for a native client (one-time code)" });
    // and the refresh token refreshes, as a password session's does
    const refreshed = await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken: saved.contexts.web.refreshToken } });
    expect(refreshed.status).toBe(200);
  });

  it("reports the provider's refusal and saves nothing", async () => {
    provider.answer = { error: "access_denied" };
    try {
      const dir = home();
      const run = start(dir, ["login", h.url, "--web", "--no-browser"]);
      const url = await printedUrl(run);
      const callback = await throughProvider(url.href);
      expect(callback.status).toBe(302);
      const toCli = new URL(callback.headers.get("location")!);
      expect(Object.fromEntries(toCli.searchParams)).toEqual({ error: "denied", state: url.searchParams.get("state") });
      const answer = await fetch(toCli);
      expect(answer.status).toBe(400);
      expect(await run.exited).toBe(3);
      expect(run.err()).toContain("error: browser sign-in failed: the provider refused the sign-in (access denied)");
      expect(fs.existsSync(path.join(dir, ".config", "fleet", "config.yaml"))).toBe(false);
    } finally {
      provider.answer = "sign-in";
    }
  });

  it("signs in through the browser by default when no credential is given and a browser can be opened ($BROWSER)", async () => {
    provider.user = newUser("bea");
    const dir = home();
    // The "browser": follows the address it is given as a browser does, keeping the fm_oidc
    // cookie, into the CLI's loopback callback; it records where it went.
    const trail = path.join(dir, "browser-trail.txt");
    const browser = path.join(dir, "browser.mjs");
    fs.writeFileSync(browser, `import fs from "node:fs";
let url = process.argv[2], cookie = "";
for (let hops = 0; hops < 6; hops++) {
  fs.appendFileSync(${JSON.stringify(trail)}, url + "\\n");
  const res = await fetch(url, { redirect: "manual", headers: cookie ? { cookie } : {} });
  const set = res.headers.getSetCookie().find((c) => c.startsWith("fm_oidc=") && !c.startsWith("fm_oidc=;"));
  if (set) cookie = set.slice(0, set.indexOf(";"));
  if (res.status !== 302) { fs.appendFileSync(${JSON.stringify(trail)}, res.status + " " + (await res.text()) + "\\n"); break; }
  url = new URL(res.headers.get("location"), url).href;
}
`);
    const run = start(dir, ["login", h.url, "--name", "default-web"], { BROWSER: `${process.execPath} ${browser}` });
    expect(await run.exited, run.err()).toBe(0);
    expect(run.err()).toContain("Opening the browser to sign in; if it does not open, visit this address:");
    expect(run.err()).toContain(`Signed in to ${h.url} as ${provider.user.email} in ${acme.org.slug} (operator)`);
    const went = fs.readFileSync(trail, "utf8").trim().split("\n");
    expect(went[0].startsWith(h.url + AUTHORIZE + "?")).toBe(true);
    expect(went.at(-2)).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?code=fmo_/);
    expect(went.at(-1)).toContain("200 ");
    expect(went.at(-1)).toContain("fleet is signed in");
    const me = await fleet(dir, ["context", "current", "-o", "json"]);
    expect(me.code, me.stderr).toBe(0);
    expect(JSON.parse(me.stdout)).toMatchObject({ context: "default-web", user: provider.user.email, organization: acme.org.slug, credential: "session" });

    // Without a browser to open (no $BROWSER, no desktop) and no terminal: nothing is asked, as before.
    const headless = await fleet(home(), ["login", h.url]);
    expect(headless.code).toBe(2);
    expect(headless.stderr).toContain("nothing is asked when stdin is not a terminal");
  });

  it("takes --web with no password or key only", async () => {
    const run = await fleet(home(), ["login", h.url, "--web", "--email", "someone@example.com"]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--web signs in through the browser: it takes no --email, --password-stdin or --api-key");
  });
});

describe("the native client's code at the service", () => {
  const verifier = () => crypto.randomBytes(32).toString("base64url");
  const challengeOf = (v: string) => crypto.createHash("sha256").update(v).digest("base64url");
  const LOOPBACK = "http://127.0.0.1:49152/callback";

  /** A sign-in as a native client (no listener needed: the loopback redirect is read, not followed). */
  async function codeFor(v: string, redirectUri = LOOPBACK) {
    provider.user = newUser("nate");
    const state = crypto.randomBytes(24).toString("base64url");
    const q = new URLSearchParams({ redirect_uri: redirectUri, code_challenge: challengeOf(v), code_challenge_method: "S256", state });
    const res = await throughProvider(`${h.url}${AUTHORIZE}?${q}`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get("location")!);
    expect(location.searchParams.get("state")).toBe(state);
    const code = location.searchParams.get("code")!;
    secrets.push(code, v);
    const user = await h.services.prisma.user.findUniqueOrThrow({ where: { email: provider.user.email } });
    const session = await h.services.prisma.session.findFirstOrThrow({ where: { userId: user.id } });
    return { code, session };
  }

  const exchange = (body: Record<string, string>) => h.api("POST", "/api/v1/auth/oidc/token", { key: null, body });
  const unchanged = async (session: { id: string; refreshTokenHash: string; expiresAt: Date }) =>
    expect(await h.services.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).toMatchObject({ refreshTokenHash: session.refreshTokenHash, expiresAt: session.expiresAt });

  it("exchanges a code once, with its verifier and redirect_uri only", async () => {
    const v = verifier();
    const { code, session } = await codeFor(v);

    const wrongVerifier = await exchange({ code, codeVerifier: verifier(), redirectUri: LOOPBACK });
    expect(wrongVerifier.status).toBe(400);
    expect(wrongVerifier.body).toMatchObject({
      code: "BAD_REQUEST",
      message: "Invalid input: codeVerifier: Does not match the code_challenge of the sign-in (PKCE S256)",
      issues: [{ path: ["codeVerifier"], message: "Does not match the code_challenge of the sign-in (PKCE S256)" }],
    });
    const otherRedirect = await exchange({ code, codeVerifier: v, redirectUri: "http://127.0.0.1:49153/callback" });
    expect(otherRedirect.status).toBe(400);
    expect(otherRedirect.body.issues).toEqual([expect.objectContaining({ path: ["redirectUri"], message: "Not the redirect_uri the code was issued to" })]);
    const notOurs = await exchange({ code: code.slice(0, -4) + "AAAA", codeVerifier: v, redirectUri: LOOPBACK });
    expect(notOurs.status).toBe(400);
    expect(notOurs.body.issues).toEqual([expect.objectContaining({ path: ["code"], message: "Not a sign-in code of this service" })]);
    await unchanged(session); // nothing issued, the code still good

    const tokens = await exchange({ code, codeVerifier: v, redirectUri: LOOPBACK });
    expect(tokens.status).toBe(200);
    expect(tokens.body).toEqual({ accessToken: expect.any(String), tokenType: "Bearer", expiresAt: expect.any(String), refreshToken: expect.stringMatching(/^fmr_/) });
    const me = await h.api("GET", "/api/v1/tenant/context", { key: null, token: tokens.body.accessToken });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: provider.user.email, organization: { id: acme.org.id } });

    const reused = await exchange({ code, codeVerifier: v, redirectUri: LOOPBACK });
    expect(reused.status).toBe(400);
    expect(reused.body.issues).toEqual([expect.objectContaining({ path: ["code"], message: "The code has already been used; sign in again" })]);
    // the session keeps the tokens of the first exchange
    expect((await h.services.prisma.session.findUniqueOrThrow({ where: { id: session.id } })).refreshTokenHash).toBe(sha256Hex(tokens.body.refreshToken));
  });

  it("gives tokens to exactly one of two exchanges of a code at once", async () => {
    const v = verifier();
    const { code } = await codeFor(v);
    const both = await Promise.all([1, 2].map(() => exchange({ code, codeVerifier: v, redirectUri: LOOPBACK })));
    expect(both.map((r) => r.status).sort()).toEqual([200, 400]);
    expect(both.find((r) => r.status === 400)!.body.issues).toEqual([expect.objectContaining({ path: ["code"], message: "The code has already been used; sign in again" })]);
  });

  it("refuses a code after its minute, and one whose session ended, issuing nothing", async () => {
    const v = verifier();
    const { code, session } = await codeFor(v);
    // The code's own expiry (the content as sealed, with its time passed)...
    const content = JSON.parse(h.services.secrets.decrypt(Buffer.from(code.slice(4), "base64url").toString("utf8")));
    const stale = "fmo_" + Buffer.from(h.services.secrets.encrypt(JSON.stringify({ ...content, exp: Date.now() - 1 }))).toString("base64url");
    const old = await exchange({ code: stale, codeVerifier: v, redirectUri: LOOPBACK });
    expect(old.status).toBe(400);
    expect(old.body.issues).toEqual([expect.objectContaining({ path: ["code"], message: "The code has expired (it is valid for 60 s after the browser sign-in); sign in again" })]);
    // ...and the dormant session's (the minute passed for the row)
    const past = new Date(Date.now() - 1000);
    await h.services.prisma.session.update({ where: { id: session.id }, data: { expiresAt: past } });
    const expired = await exchange({ code, codeVerifier: v, redirectUri: LOOPBACK });
    expect(expired.status).toBe(400);
    expect(expired.body.message).toBe("Invalid input: code: The code has expired (it is valid for 60 s after the browser sign-in); sign in again");
    await unchanged({ ...session, expiresAt: past });

    // signed out everywhere (or disabled) between the browser sign-in and the exchange
    const v2 = verifier();
    const second = await codeFor(v2);
    const revokedAt = new Date();
    await h.services.prisma.session.update({ where: { id: second.session.id }, data: { revokedAt } });
    const ended = await exchange({ code: second.code, codeVerifier: v2, redirectUri: LOOPBACK });
    expect(ended.status).toBe(400);
    expect(ended.body.issues).toEqual([expect.objectContaining({ path: ["code"], message: "The session of this sign-in has ended (signed out, or the account was disabled)" })]);
    await unchanged(second.session);
  });

  it("refuses a redirect_uri that is not a loopback http address, and bad PKCE parameters, before anything starts", async () => {
    const attempts = await h.services.prisma.oidcSignInAttempt.count();
    const base = { redirect_uri: LOOPBACK, code_challenge: challengeOf(verifier()), code_challenge_method: "S256", state: crypto.randomBytes(24).toString("base64url") };
    const cases: [Record<string, string>, string, string][] = [
      [{ redirect_uri: "https://evil.example/callback" }, "redirect_uri", "redirect_uri must be an http:// loopback address (RFC 8252), not https://"],
      [{ redirect_uri: "http://evil.example:8080/callback" }, "redirect_uri", "redirect_uri must name the loopback address 127.0.0.1 or [::1] (with any port), not evil.example"],
      [{ redirect_uri: "http://localhost:8080/callback" }, "redirect_uri", "redirect_uri must name the loopback address 127.0.0.1 or [::1] (with any port), not localhost"],
      [{ redirect_uri: "http://127.0.0.1.evil.example/callback" }, "redirect_uri", "redirect_uri must name the loopback address 127.0.0.1 or [::1] (with any port), not 127.0.0.1.evil.example"],
      [{ code_challenge_method: "plain" }, "code_challenge_method", "code_challenge_method must be S256 (plain is not accepted)"],
      [{ code_challenge: "short" }, "code_challenge", "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)"],
      [{ state: "" }, "state", "Required: a native client's sign-in needs redirect_uri, code_challenge, code_challenge_method=S256 and state"],
    ];
    for (const [change, field, message] of cases) {
      const res = await fetch(`${h.url}${AUTHORIZE}?${new URLSearchParams({ ...base, ...change })}`, { redirect: "manual" });
      expect(res.status, JSON.stringify(change)).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(await res.json()).toMatchObject({ code: "BAD_REQUEST", issues: [{ path: [field], message }] });
    }
    // [::1] is a loopback address too
    const v6 = await fetch(`${h.url}${AUTHORIZE}?${new URLSearchParams({ ...base, redirect_uri: "http://[::1]:50000/cb" })}`, { redirect: "manual" });
    expect(v6.status).toBe(302);
    expect(v6.headers.get("location")!.startsWith(provider.issuer)).toBe(true);
    expect(await h.services.prisma.oidcSignInAttempt.count()).toBe(attempts + 1);
  });

  it("writes no code or verifier to the log", () => {
    expect(secrets.length).toBeGreaterThan(4);
    const log = h.logs.join("");
    for (const secret of secrets) expect(log).not.toContain(secret);
  });
});
