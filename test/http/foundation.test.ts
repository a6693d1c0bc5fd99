import zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_EMAIL, ADMIN_KEY, ADMIN_PASSWORD, createHarness, type Harness, type Tenant } from "../support/harness.js";
import { expectSecured } from "../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme");
  globex = await h.createTenant("Globex");
});
afterAll(() => h?.close());

describe("health and documents", () => {
  it("answers /healthz and /readyz without credentials", async () => {
    expect((await h.api("GET", "/healthz", { key: null })).status).toBe(200);
    const ready = await h.api("GET", "/readyz", { key: null });
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: "ready" });
  });

  it("serves the OpenAPI document and the docs page without credentials", async () => {
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toMatch(/^3\./);
    expect(doc.body.paths["/organizations/by-slug/{slug}"].get).toBeDefined();
    expect(doc.body.components.securitySchemes.ApiKey).toEqual({ type: "apiKey", in: "header", name: "X-API-Key" });
    const page = await h.api("GET", "/api/v1/docs", { key: null });
    expect(page.status).toBe(200);
    expect(page.text).toContain("/api/v1/docs/assets/swagger-ui-bundle.js");
    const asset = await h.api("GET", "/api/v1/docs/assets/swagger-ui-bundle.js", { key: null });
    expect(asset.status).toBe(200);
    expect(asset.text.length).toBeGreaterThan(100_000);
    // the page names the console's icon (a page without one makes the browser ask for /favicon.ico: 404)
    const icon = /<link rel="icon" href="([^"]+)"/.exec(page.text)?.[1];
    expect(icon).toBe("/favicon.svg");
    const svg = await h.api("GET", icon!, { key: null });
    expect(svg.status).toBe(200);
    expect(svg.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
  });

  it("documents each operation's success under the status it answers (201 for creations, 202 for accepted work)", async () => {
    const { paths } = (await h.api("GET", "/api/v1/openapi.json", { key: null })).body;
    const createKey = paths["/organizations/{orgId}/api-keys"].post.responses;
    expect(Object.keys(createKey)).toContain("201");
    expect(createKey["200"]).toBeUndefined();
    expect(createKey["201"].content["application/json"].schema).toBeDefined();
    expect(Object.keys(paths["/marketplace-store/sync"].post.responses)).toContain("202");
    expect(Object.keys(paths["/organizations/by-slug/{slug}"].get.responses)).toContain("200");
    // and the service answers what the document says
    const created = await h.api("POST", `/api/v1/organizations/${h.defaultOrgId}/api-keys`, { body: { name: "documented status", permissions: ["devices:read"] } });
    expect(created.status).toBe(201);
  });

  it("puts a request id on every response and keeps a sane incoming one", async () => {
    const a = await h.api("GET", "/healthz", { key: null });
    expect(a.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const b = await h.api("GET", "/api/v1/organizations/by-slug/default", { headers: { "x-request-id": "trace-123" } });
    expect(b.headers.get("x-request-id")).toBe("trace-123");
    const c = await h.api("GET", "/healthz", { key: null, headers: { "x-request-id": "bad id with spaces" } });
    expect(c.headers.get("x-request-id")).not.toBe("bad id with spaces");
  });

  it("sends security headers", async () => {
    const res = await h.api("GET", "/healthz", { key: null });
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-powered-by")).toBeNull();
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    const policy = res.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'self'");
    // The docs page must load over plain HTTP too (a service inside a network, no TLS in front).
    expect(policy).not.toContain("upgrade-insecure-requests");
  });
});

describe("the first operation: organization by slug", () => {
  it("reads the default organization with the bootstrap key", async () => {
    const res = await h.api("GET", "/api/v1/organizations/by-slug/default");
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ slug: "default", status: "active", active: true, settings: {}, branding: {} });
    expect(res.body.id).toBe(h.defaultOrgId);
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it("answers 404 with the error shape for an unknown slug", async () => {
    const res = await h.api("GET", "/api/v1/organizations/by-slug/nope");
    expect(res.status).toBe(404);
    expect(res.body).toMatchObject({ code: "NOT_FOUND", message: "Organization not found" });
    expect(res.body.data.requestId).toBe(res.headers.get("x-request-id"));
    expect(res.text).not.toMatch(/stack|at \w+ \(/);
  });

  it("is secured: 401 without or with bad credentials, 403 without permission, 404 across tenants", async () => {
    await expectSecured(h, acme, globex, {
      method: "GET",
      path: `/api/v1/organizations/by-slug/${acme.org.slug}`,
      permission: "organizations:read",
      foreignPath: `/api/v1/organizations/by-slug/${acme.org.slug}`,
    });
  });

  it("lets a tenant read its own organization and a Super Admin read any", async () => {
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key: acme.key })).status).toBe(200);
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key: ADMIN_KEY })).status).toBe(200);
  });

  it("records a refused key and a permission denial in the audit log", async () => {
    const weak = await h.createKey(acme.org.id, ["devices:read"]);
    await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key: weak });
    const denied = await h.services.prisma.auditEntry.findFirst({ where: { action: "permission.denied", organizationId: acme.org.id } });
    expect(denied?.outcome).toBe("denied");
    expect(denied?.actorType).toBe("api_key");
  });
});

describe("API keys as credentials", () => {
  it("refuses an expired key and a revoked key with 401", async () => {
    const key = await h.createKey(acme.org.id, ["*"]);
    const { sha256Hex } = await import("../../src/lib/crypto.js");
    await h.services.prisma.apiKey.update({ where: { keyHash: sha256Hex(key) }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const expired = await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toBe("API key has expired");
    await h.services.prisma.apiKey.update({ where: { keyHash: sha256Hex(key) }, data: { expiresAt: null, revokedAt: new Date() } });
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key })).status).toBe(401);
  });

  it("never exceeds its creator: a * key of a viewer cannot do what a viewer cannot", async () => {
    const key = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${acme.org.slug}`, { key })).status).toBe(200);
    const { can } = await import("../../src/trpc/principal.js");
    const { authenticate } = await import("../../src/trpc/auth.js");
    const principal = await authenticate(h.services, { "x-api-key": key });
    expect(can(principal, "organizations:read")).toBe(true);
    expect(can(principal, "devices:write")).toBe(false);
    expect(principal.isSuperAdmin).toBe(false);
  });

  it("stops working once its creator is disabled", async () => {
    const key = await h.createKey(globex.org.id, ["*"]);
    const { sha256Hex } = await import("../../src/lib/crypto.js");
    const record = await h.services.prisma.apiKey.findUniqueOrThrow({ where: { keyHash: sha256Hex(key) } });
    await h.services.prisma.user.update({ where: { id: record.createdById! }, data: { status: "disabled" } });
    expect((await h.api("GET", `/api/v1/organizations/by-slug/${globex.org.slug}`, { key })).status).toBe(401);
  });

  it("is refused in a suspended organization, with a message saying so", async () => {
    const t = await h.createTenant("Suspended Co");
    await h.services.prisma.organization.update({ where: { id: t.org.id }, data: { status: "suspended" } });
    const res = await h.api("GET", `/api/v1/organizations/by-slug/${t.org.slug}`, { key: t.key });
    expect(res.status).toBe(403);
    expect(res.body.message).toContain("suspended");
  });
});

describe("sign-in with bearer tokens", () => {
  it("logs in, calls with the bearer token, refreshes once, and logs out", async () => {
    const login = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: ADMIN_EMAIL, password: ADMIN_PASSWORD } });
    expect(login.status).toBe(200);
    expect(login.body.tokenType).toBe("Bearer");
    expect(login.body.refreshToken).toMatch(/^fmr_/);
    const { accessToken, refreshToken } = login.body;

    const read = await h.api("GET", "/api/v1/organizations/by-slug/default", { key: null, token: accessToken });
    expect(read.status).toBe(200);

    const refreshed = await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken } });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refreshToken).not.toBe(refreshToken);
    const replay = await h.api("POST", "/api/v1/auth/refresh", { key: null, body: { refreshToken } });
    expect(replay.status).toBe(401);

    const out = await h.api("POST", "/api/v1/auth/logout", { key: null, token: refreshed.body.accessToken });
    expect(out.status).toBe(200);
    expect(out.body).toEqual({ revoked: 1 });
    const after = await h.api("GET", "/api/v1/organizations/by-slug/default", { key: null, token: refreshed.body.accessToken });
    expect(after.status).toBe(401);
    const logins = await h.services.prisma.auditEntry.count({ where: { action: "auth.login", outcome: "success" } });
    expect(logins).toBeGreaterThan(0);
  });

  it("answers 401 without saying which part was wrong, and records the failure", async () => {
    const wrongPassword = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: ADMIN_EMAIL, password: "nope-nope" } });
    const unknownUser = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: "who@example.test", password: "nope-nope" } });
    expect(wrongPassword.status).toBe(401);
    expect(unknownUser.status).toBe(401);
    expect(wrongPassword.body.message).toBe(unknownUser.body.message);
    const failures = await h.services.prisma.auditEntry.count({ where: { action: "auth.login", outcome: "failure" } });
    expect(failures).toBeGreaterThanOrEqual(2);
  });

  it("rejects a tampered token", async () => {
    const token = await h.login(ADMIN_EMAIL, ADMIN_PASSWORD);
    const tampered = token.slice(0, -4) + (token.endsWith("AAAA") ? "BBBB" : "AAAA");
    expect((await h.api("GET", "/api/v1/organizations/by-slug/default", { key: null, token: tampered })).status).toBe(401);
  });
});

describe("errors", () => {
  it("names the invalid field in a 400 and changes nothing", async () => {
    const res = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: "x" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_REQUEST");
    const paths = res.body.issues.map((i: { path: string[] }) => i.path.join("."));
    expect(paths).toEqual(expect.arrayContaining(["email", "password"]));
    // named in the message too, the same on tRPC; the issues once (REST: at the top; tRPC: data.issues)
    expect(res.body.message).toMatch(/^Invalid input: (?=.*email: )(?=.*password: required)/);
    expect(res.body.data.issues).toBeUndefined();
    const trpc = await h.api("POST", "/trpc/auth.login", { key: null, body: { email: "x" } });
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.message).toBe(res.body.message);
    expect(trpc.body.error.data.issues).toEqual(res.body.issues);
  });

  it("answers malformed JSON with 400 and a wrong content type with 415", async () => {
    const broken = await h.api("POST", "/api/v1/auth/login", { key: null, raw: "{not json", headers: { "content-type": "application/json" } });
    expect(broken.status).toBe(400);
    expectErrorBody(broken, "PARSE_ERROR", 400);
    // where it broke: line and column (from 1) and the offset, on REST and tRPC alike
    const text = '{\n  "email": "a@example.test",\n  "password": "x",\n}';
    const trailing = await h.api("POST", "/api/v1/auth/login", { key: null, raw: text, headers: { "content-type": "application/json" } });
    expect(trailing.status).toBe(400);
    expect(trailing.body.message).toBe('Malformed JSON at line 4, column 1 (offset 50): unexpected "}"');
    const cut = await h.api("POST", "/trpc/auth.login", { key: null, raw: '{"email": "a@example.test", "pass', headers: { "content-type": "application/json" } });
    expect(cut.status).toBe(400);
    expect(cut.body.error.message).toBe("Malformed JSON at line 1, column 34 (offset 33): the text ends too early");
    const wrongType = await h.api("POST", "/api/v1/auth/login", { key: null, raw: "a=b", headers: { "content-type": "text/plain" } });
    expect(wrongType.status).toBe(415);
    expectErrorBody(wrongType, "UNSUPPORTED_MEDIA_TYPE", 415);
    expect(wrongType.body.message).toBe("Send the body as application/json");
  });

  it("reads every JSON body once, with the same rules on REST, tRPC and the lean agent route: a __proto__ key is a parse error, gzip and a charset are understood", async () => {
    const poisoned = '{"name":"x","labels":{"__proto__":{"polluted":true}}}';
    for (const path of ["/api/v1/organizations", "/api/v1/agent/heartbeat"]) {
      const res = await h.api("POST", path, { raw: poisoned, headers: { "content-type": "application/json" } });
      expect(res.status, path).toBe(400);
      expectErrorBody(res, "PARSE_ERROR", 400);
    }
    const trpc = await h.api("POST", "/trpc/organizations.create", { raw: poisoned, headers: { "content-type": "application/json" } });
    expect(trpc.status).toBe(400);
    expect(trpc.body.error.data).toMatchObject({ code: "PARSE_ERROR", httpStatus: 400 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const gzipped = await h.api("POST", "/api/v1/organizations", {
      raw: zlib.gzipSync(JSON.stringify({ name: "Gzipped Org" })) as unknown as string,
      headers: { "content-type": "application/json; charset=utf-8", "content-encoding": "gzip" },
    });
    expect(gzipped.status, gzipped.text).toBe(201);
    expect(gzipped.body.name).toBe("Gzipped Org");
  });

  it("refuses bodies over the size limit with 413", async () => {
    const res = await h.api("POST", "/api/v1/auth/login", { key: null, body: { email: "a@b.c", password: "x".repeat(2 * 1024 * 1024) } });
    expect(res.status).toBe(413);
    expectErrorBody(res, "PAYLOAD_TOO_LARGE", 413);
  });

  it("answers unknown paths with a JSON 404 in the error shape, under /api/v1 and outside it", async () => {
    const res = await h.api("GET", "/api/v1/does-not-exist");
    expect(res.status).toBe(404);
    expectErrorBody(res, "NOT_FOUND", 404);
    const outside = await h.api("GET", "/nowhere", { key: null });
    expect(outside.status).toBe(404);
    expectErrorBody(outside, "NOT_FOUND", 404);
  });

  it("masks unexpected failures: no stack, no SQL, no internal message", async () => {
    const { t } = await import("../../src/trpc/init.js");
    const { TRPCError } = await import("@trpc/server");
    const formatter = (t as any)._config.errorFormatter;
    const shape = formatter({
      shape: { code: -32603, message: "relation \"Secret\" does not exist", data: { httpStatus: 500, stack: "at x" } },
      error: new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "relation \"Secret\" does not exist" }),
      ctx: { services: h.services, request: { requestId: "r1" } },
    });
    expect(JSON.stringify(shape)).not.toMatch(/Secret|stack/);
    expect(shape.message).toBe("Internal server error");
  });
});

describe("database errors", () => {
  it("turns a unique violation into 409, inside a transaction as well as outside", async () => {
    const { translateDatabaseError } = await import("../../src/trpc/errors.js");
    const db = h.services.prisma;
    const outside = await db.organization.create({ data: { name: "Dup", slug: "default" } }).catch((e: unknown) => e);
    const inside = await db.$transaction((tx) => tx.organization.create({ data: { name: "Dup", slug: "default" } })).catch((e: unknown) => e);
    expect(translateDatabaseError(outside)?.code).toBe("CONFLICT");
    expect(translateDatabaseError(inside)?.code).toBe("CONFLICT");
    expect(translateDatabaseError(inside)?.message).toBe("A Organization with this slug already exists");
    expect(translateDatabaseError(new Error("something else"))).toBeNull();
  });
});

describe("logs", () => {
  it("do not carry secrets from paths or query strings", async () => {
    await h.api("GET", "/api/v1/public/invitations/fmi_pathSecret0123456789", { key: null });
    await h.api("GET", "/api/v1/organizations/by-slug/default?ticket=querySecret0123456789");
    const all = h.logs.join("\n");
    expect(all).toContain("/api/v1/public/invitations/[redacted]");
    expect(all).not.toContain("fmi_pathSecret0123456789");
    expect(all).not.toContain("querySecret0123456789");
  });

  it("never contain the credentials used in this file", () => {
    const all = h.logs.join("\n");
    expect(all).not.toContain(ADMIN_KEY);
    expect(all).not.toContain(ADMIN_PASSWORD);
    expect(all).not.toContain(acme.key);
  });
});

/** Errors met before a request has its context (path, content type, body) carry the request id too. */
function expectErrorBody(res: { body: any; headers: Headers }, code: string, httpStatus: number) {
  expect(res.body).toMatchObject({ code, message: expect.any(String), data: { code, httpStatus, requestId: res.headers.get("x-request-id") } });
  expect(res.body.data.requestId).toMatch(/^[0-9a-f-]{36}$/);
}
