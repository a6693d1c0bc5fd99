// Global OCI registries (Super Admin): list, create, get (spec op 10), update, delete, with
// mandatory and priority; credentials never returned; refused to tenants.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
const URL_A = "https://registry.example.com";
const FIELDS = [
  "id", "name", "description", "url", "registryType", "authType", "hasCredentials", "verifyTls", "lastHealthCheck", "healthStatus",
  "lastSyncAt", "lastSyncError", "syncIntervalMinutes", "enabled", "repositories", "mandatory", "priority", "createdAt", "updatedAt",
];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Global");
  globex = await h.createTenant("Globex Global");
});
afterAll(async () => {
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, key: string = ADMIN_KEY) => h.api(method, `/api/v1/global-registries/oci${path}`, { key, body });

describe("global OCI registries", () => {
  it("creates with defaults and every field; get (op 10) answers the spec's fields without organizationId", async () => {
    const res = await api("POST", "", { name: "Platform apps", url: URL_A });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...FIELDS].sort());
    expect(res.body).toMatchObject({ mandatory: false, priority: 0, authType: "NONE", registryType: "GENERIC", verifyTls: true, enabled: true, repositories: [] });
    const full = await api("POST", "", {
      name: "Vendor apps", description: "mandatory vendor catalog", url: URL_A, authType: "TOKEN", credential: "global-token-secret",
      mandatory: true, priority: 5, repositories: ["vendor/app"], verifyTls: false,
    });
    expect(full.status, full.text).toBe(201);
    expect(full.body).toMatchObject({ mandatory: true, priority: 5, hasCredentials: true, repositories: ["vendor/app"], verifyTls: false });
    const get = await api("GET", `/${full.body.id}`);
    expect(get.status).toBe(200);
    expect(get.body).toEqual(full.body);
    for (const r of [full, get, await api("GET", "")]) expect(r.text).not.toContain("global-token-secret");
    expect(h.logs.join("\n")).not.toContain("global-token-secret");
  });

  it("validates like an OCI registry: 400 for bad bodies and BASIC without colon, 409 for a duplicate name", async () => {
    expect((await api("POST", "", { name: "x", url: URL_A })).status).toBe(400);
    expect((await api("POST", "", { name: "No url" })).status).toBe(400);
    expect((await api("POST", "", { name: "Bad prio", url: URL_A, priority: -1 })).status).toBe(400);
    expect((await api("POST", "", { name: "Bad mandatory", url: URL_A, mandatory: "true" })).status).toBe(400);
    expect((await api("POST", "", { name: "Basic", url: URL_A, authType: "BASIC", credential: "nocolon" })).status).toBe(400);
    await api("POST", "", { name: "Twice", url: URL_A });
    expect((await api("POST", "", { name: "Twice", url: URL_A })).status).toBe(409);
  });

  it("lists in priority order, updates and deletes; unknown ids are 404", async () => {
    const late = (await api("POST", "", { name: "Late", url: URL_A, priority: 900 })).body;
    const early = (await api("POST", "", { name: "Early", url: URL_A, priority: 1 })).body;
    const names = (await api("GET", "?limit=200")).body.items.map((r: { name: string }) => r.name);
    expect(names.indexOf("Early")).toBeLessThan(names.indexOf("Late"));
    const upd = await api("PATCH", `/${late.id}`, { priority: 0, mandatory: true, description: "now first" });
    expect(upd.status, upd.text).toBe(200);
    expect(upd.body).toMatchObject({ priority: 0, mandatory: true, description: "now first" });
    expect((await api("DELETE", `/${early.id}`)).body).toEqual({ id: early.id, deleted: true });
    expect((await api("GET", `/${early.id}`)).status).toBe(404);
    expect((await api("GET", "/00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });

  it("is Super Admin only: tenants' owners get 403, and every operation is secured", async () => {
    const reg = (await api("POST", "", { name: "Secured", url: URL_A })).body;
    const item = `/api/v1/global-registries/oci/${reg.id}`;
    expect((await h.api("GET", item, { key: acme.key })).status).toBe(403);
    expect((await h.api("POST", "/api/v1/global-registries/oci", { key: acme.key, body: { name: "Tenant try", url: URL_A } })).status).toBe(403);
    for (const c of [
      { method: "GET", path: "/api/v1/global-registries/oci" },
      { method: "POST", path: "/api/v1/global-registries/oci", body: { name: "Sec create", url: URL_A } },
      { method: "GET", path: item },
      { method: "PATCH", path: item, body: { priority: 3 } },
      { method: "DELETE", path: item },
    ]) await expectSecured(h, acme, globex, { ...c, permission: "platform:admin" });
  });
});
