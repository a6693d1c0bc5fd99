// OCI registries as resources: create (spec op 2, every rule), list, get, update, delete,
// enable, disable and the health check against a real registry (Debian's docker-registry),
// with credentials never in a response or a log, and secured like every other operation.
// Only the health checks need the registry: without docker-registry (and htpasswd) they skip
// and the rest runs.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peerAvailable, peersAvailable } from "../../support/peers.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
const URL_A = "https://registry.example.com";
const PASSWORD = "s3cret-registry-pass";

const FIELDS = [
  "id", "organizationId", "name", "description", "url", "registryType", "authType", "hasCredentials", "verifyTls",
  "lastHealthCheck", "healthStatus", "lastSyncAt", "lastSyncError", "syncIntervalMinutes", "enabled", "repositories",
  "managedBy", "managedCommit", "createdAt", "updatedAt",
];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme OCI");
  globex = await h.createTenant("Globex OCI");
}, 60_000);
afterAll(async () => {
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, tenant: Tenant = acme) => h.api(method, `/api/v1/registries/oci${path}`, { key: tenant.key, body });
let counter = 0;
async function create(body: Record<string, unknown>, tenant: Tenant = acme) {
  counter += 1;
  const res = await api("POST", "", { name: `oci-${counter}`, ...body }, tenant);
  expect(res.status, res.text).toBe(201);
  return res.body;
}

describe("create (spec op 2)", () => {
  it("answers 201 with every spec field and the defaults", async () => {
    const res = await api("POST", "", { name: "Main OCI", url: URL_A });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...FIELDS].sort());
    expect(res.body).toMatchObject({
      organizationId: acme.org.id, name: "Main OCI", description: null, url: URL_A, registryType: "GENERIC", authType: "NONE",
      hasCredentials: false, verifyTls: true, enabled: true, repositories: [], healthStatus: null, lastHealthCheck: null,
      lastSyncAt: null, lastSyncError: null, syncIntervalMinutes: 60,
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("takes every field; BASIC and TOKEN credentials are sealed and never returned", async () => {
    const basic = await api("POST", "", {
      name: "Private OCI", description: "edge apps", url: "http://registry.internal:5000/", registryType: "GENERIC", authType: "BASIC",
      credential: `robot:${PASSWORD}`, verifyTls: false, enabled: false, repositories: ["apps/web", "team/apps/db", "apps/web"],
    });
    expect(basic.status, basic.text).toBe(201);
    expect(basic.body).toMatchObject({
      description: "edge apps", url: "http://registry.internal:5000", authType: "BASIC", hasCredentials: true, verifyTls: false, enabled: false,
      repositories: ["apps/web", "team/apps/db"],
    });
    const token = await api("POST", "", { name: "Token OCI", url: URL_A, authType: "TOKEN", credential: "raw-token-without-colon" });
    expect(token.status, token.text).toBe(201);
    expect(token.body).toMatchObject({ authType: "TOKEN", hasCredentials: true });
    const row = await h.services.prisma.ociRegistry.findUniqueOrThrow({ where: { id: basic.body.id } });
    expect(row.credentialSealed).not.toContain(PASSWORD);
    expect(h.services.secrets.decrypt(row.credentialSealed!)).toBe(`robot:${PASSWORD}`);
    for (const res of [basic, token, await api("GET", `/${basic.body.id}`), await api("GET", "")]) {
      expect(res.text).not.toContain(PASSWORD);
      expect(res.text).not.toContain("raw-token-without-colon");
    }
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { entityId: basic.body.id, action: "registries.oci.create" } });
    expect(audit).toMatchObject({ outcome: "success", entityType: "oci_registry" });
    expect(JSON.stringify(audit!.changes)).not.toContain(PASSWORD);
  });

  it("refuses invalid bodies with 400 naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ url: URL_A }, "name"],
      [{ name: "x", url: URL_A }, "name"],
      [{ name: "x".repeat(101), url: URL_A }, "name"],
      [{ name: "No URL" }, "url"],
      [{ name: "Bad URL", url: "ftp://registry.example.com" }, "url"],
      [{ name: "Long description", url: URL_A, description: "d".repeat(501) }, "description"],
      [{ name: "Bad type", url: URL_A, registryType: "HARBOR" }, "registryType"],
      [{ name: "Bad auth", url: URL_A, authType: "OAUTH" }, "authType"],
      [{ name: "Bad TLS", url: URL_A, verifyTls: "false" }, "verifyTls"],
      [{ name: "Bad enabled", url: URL_A, enabled: "yes" }, "enabled"],
      [{ name: "Bad repo", url: URL_A, repositories: ["nonamespace"] }, "repositories"],
      [{ name: "Bad repo case", url: URL_A, repositories: ["Apps/Web"] }, "repositories"],
    ];
    for (const [body, field] of cases) {
      const res = await api("POST", "", body);
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.issues.map((i: { path: string }) => i.path).join(","), JSON.stringify(body)).toContain(field);
    }
    expect((await api("POST", "", { name: "Exactly 500", url: URL_A, description: "d".repeat(500) })).status).toBe(201);
    expect((await api("POST", "", { name: "ab", url: URL_A })).status).toBe(201);
  });

  it("checks the credential against the auth type (400), never echoing it", async () => {
    const noColon = await api("POST", "", { name: "Basic without colon", url: URL_A, authType: "BASIC", credential: "just-a-secret-value" });
    expect(noColon.status, noColon.text).toBe(400);
    expect(noColon.text).toContain("username:password");
    expect(noColon.text).not.toContain("just-a-secret-value");
    expect((await api("POST", "", { name: "Basic missing", url: URL_A, authType: "BASIC" })).status).toBe(400);
    expect((await api("POST", "", { name: "Token missing", url: URL_A, authType: "TOKEN" })).status).toBe(400);
    expect((await api("POST", "", { name: "None with one", url: URL_A, credential: "a:b" })).status).toBe(400);
  });

  it("refuses metadata addresses (400) and duplicate names in the organization (409), not across tenants", async () => {
    expect((await api("POST", "", { name: "Metadata", url: "http://169.254.169.254" })).status).toBe(400);
    await create({ name: "Shared name", url: URL_A });
    const dup = await api("POST", "", { name: "Shared name", url: URL_A });
    expect(dup.status, dup.text).toBe(409);
    expect(dup.body.code).toBe("CONFLICT");
    await create({ name: "Shared name", url: URL_A }, globex);
  });
});

describe("list, get, update, enable, disable, delete", () => {
  it("lists the tenant's own registries with paging and the enabled filter", async () => {
    const a = await create({ url: URL_A }, globex);
    const b = await create({ url: URL_A, enabled: false }, globex);
    const page = await api("GET", "?limit=1", undefined, globex);
    expect(page.status).toBe(200);
    expect(page.body.items).toHaveLength(1);
    expect(page.body.hasMore).toBe(true);
    const all = await api("GET", "?limit=200", undefined, globex);
    expect(all.body.items.every((r: { organizationId: string }) => r.organizationId === globex.org.id)).toBe(true);
    const disabled = await api("GET", "?enabled=false&limit=200", undefined, globex);
    expect(disabled.body.items.map((r: { id: string }) => r.id)).toContain(b.id);
    expect(disabled.body.items.map((r: { id: string }) => r.id)).not.toContain(a.id);
  });

  it("updates fields, keeps the credential unless the server changes, and enables/disables", async () => {
    const reg = await create({ url: URL_A, authType: "BASIC", credential: "robot:pw" });
    const upd = await api("PATCH", `/${reg.id}`, { description: "now described", repositories: ["apps/one"], verifyTls: false, syncIntervalMinutes: 0 });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toMatchObject({ description: "now described", repositories: ["apps/one"], verifyTls: false, syncIntervalMinutes: 0, hasCredentials: true });
    const elsewhere = await api("PATCH", `/${reg.id}`, { url: "https://other.example.com" });
    expect(elsewhere.status, elsewhere.text).toBe(400);
    const none = await api("PATCH", `/${reg.id}`, { authType: "NONE" });
    expect(none.body).toMatchObject({ authType: "NONE", hasCredentials: false });
    const cleared = await api("PATCH", `/${reg.id}`, { description: null });
    expect(cleared.body.description).toBeNull();
    expect((await api("POST", `/${reg.id}/disable`)).body.enabled).toBe(false);
    expect((await api("POST", `/${reg.id}/enable`)).body.enabled).toBe(true);
    const other = await create({ url: URL_A });
    expect((await api("PATCH", `/${reg.id}`, { name: other.name })).status).toBe(409);
  });

  it("deletes; another tenant's registry is not found", async () => {
    const reg = await create({ url: URL_A });
    expect((await api("GET", `/${reg.id}`, undefined, globex)).status).toBe(404);
    expect((await api("DELETE", `/${reg.id}`, undefined, globex)).status).toBe(404);
    const del = await api("DELETE", `/${reg.id}`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: reg.id, deleted: true });
    expect((await api("GET", `/${reg.id}`)).status).toBe(404);
  });
});

describe.skipIf(!peersAvailable("docker-registry", "htpasswd"))("health check", () => {
  let open: OciRegistryServer;
  let locked: OciRegistryServer;
  beforeAll(async () => {
    [open, locked] = await Promise.all([startOciRegistry(), startOciRegistry({ basic: { username: "robot", password: PASSWORD } })]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([open?.close(), locked?.close()]);
  });

  it("is healthy for a reachable registry and records the time", async () => {
    const reg = await create({ url: open.url });
    const res = await api("POST", `/${reg.id}/health-check`);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ registryId: reg.id, healthStatus: "healthy", httpStatus: 200 });
    const after = await api("GET", `/${reg.id}`);
    expect(after.body.healthStatus).toBe("healthy");
    expect(after.body.lastHealthCheck).toBe(res.body.lastHealthCheck);
  });

  it("uses BASIC credentials; a wrong password or none is unhealthy; the password never appears in responses or logs", async () => {
    const good = await create({ url: locked.url, authType: "BASIC", credential: `robot:${PASSWORD}` });
    const ok = await api("POST", `/${good.id}/health-check`);
    expect(ok.body, ok.text).toMatchObject({ healthStatus: "healthy" });
    const wrong = await create({ url: locked.url, authType: "BASIC", credential: "robot:wrong-password-123" });
    const bad = await api("POST", `/${wrong.id}/health-check`);
    expect(bad.body).toMatchObject({ healthStatus: "unhealthy", httpStatus: 401, message: "the registry refused the credential" });
    const anonymous = await create({ url: locked.url });
    expect((await api("POST", `/${anonymous.id}/health-check`)).body.healthStatus).toBe("unhealthy");
    const logs = h.logs.join("\n");
    expect(logs).not.toContain(PASSWORD);
    expect(logs).not.toContain("wrong-password-123");
    expect(logs).not.toContain(Buffer.from(`robot:${PASSWORD}`).toString("base64"));
    const audits = await h.services.prisma.auditEntry.findMany({ where: { action: "registries.oci.healthCheck", entityId: { in: [good.id, wrong.id] } } });
    expect(audits).toHaveLength(2);
    expect(JSON.stringify(audits)).not.toContain(PASSWORD);
  });

  it("is unhealthy when nothing listens, and when the URL is not a registry", async () => {
    const gone = await startOciRegistry();
    const url = gone.url;
    await gone.close();
    const reg = await create({ url });
    const res = await api("POST", `/${reg.id}/health-check`);
    expect(res.body).toMatchObject({ healthStatus: "unhealthy", message: "connection refused" });
    // (The service's own root is a registry now: /v2/, the devices' pull-grant proxy.)
    const notRegistry = await create({ url: `${h.url}/not-a-registry` });
    const res2 = await api("POST", `/${notRegistry.id}/health-check`);
    expect(res2.body).toMatchObject({ healthStatus: "unhealthy", httpStatus: 404 });
  });
});

describe("security", () => {
  it("secures every operation: 401 without credentials, 403 without the permission, 404 across tenants", async () => {
    const reg = await create({ url: URL_A });
    const item = `/api/v1/registries/oci/${reg.id}`;
    const cases = [
      { method: "GET", path: "/api/v1/registries/oci", permission: "registries:read" },
      { method: "POST", path: "/api/v1/registries/oci", permission: "registries:write", body: { name: "Secured create", url: URL_A } },
      { method: "GET", path: item, permission: "registries:read", foreignPath: item },
      { method: "PATCH", path: item, permission: "registries:write", foreignPath: item, body: { description: "x" } },
      { method: "POST", path: `${item}/enable`, permission: "registries:write", foreignPath: `${item}/enable` },
      { method: "POST", path: `${item}/disable`, permission: "registries:write", foreignPath: `${item}/disable` },
      { method: "POST", path: `${item}/health-check`, permission: "registries:write", foreignPath: `${item}/health-check` },
      { method: "DELETE", path: item, permission: "registries:write", foreignPath: item },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("GET", item, { key: viewer })).status).toBe(200);
    expect((await h.api("POST", `${item}/health-check`, { key: viewer })).status).toBe(403);
  });
});

describe.skipIf(!peerAvailable("docker-registry"))("verifyTls", () => {
  it("verifies certificates unless verifyTls is false, for that registry only", async () => {
    const tls = await startOciRegistry({ tls: true });
    try {
      const verified = await create({ url: tls.url });
      const unverified = await create({ url: tls.url, verifyTls: false });
      const refused = await api("POST", `/${verified.id}/health-check`);
      expect(refused.body, refused.text).toMatchObject({ healthStatus: "unhealthy" });
      expect(refused.body.message).toMatch(/TLS verification failed/);
      const ok = await api("POST", `/${unverified.id}/health-check`);
      expect(ok.body, ok.text).toMatchObject({ healthStatus: "healthy", httpStatus: 200 });
      // The other registry still verifies after the unverified one ran.
      expect((await api("POST", `/${verified.id}/health-check`)).body.healthStatus).toBe("unhealthy");
    } finally {
      await tls.close();
    }
  });
});
