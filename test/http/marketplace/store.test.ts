// The marketplace store's configuration (one per organization): create or replace with PUT,
// get, enable/disable, remove; 400s naming the invalid fields; sync-history paging rules of
// spec op 1; tenant isolation, permissions and audit entries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let initech: Tenant;
const STORE_FIELDS = [
  "id", "organizationId", "enabled", "syncIntervalMinutes", "includeAllGlobalRegistries", "globalRegistryIds", "lastSyncAt", "lastSyncError",
  "syncing", "registries", "createdAt", "updatedAt",
];

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Store");
  globex = await h.createTenant("Globex Store");
  initech = await h.createTenant("Initech Store");
});
afterAll(async () => {
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, tenant: Tenant = acme) => h.api(method, `/api/v1/marketplace-store${path}`, { key: tenant.key, body });
const issuePaths = (res: { body: { issues?: Array<{ path: string[] }> } }) => (res.body.issues ?? []).map((i) => i.path.join("."));
const globalRegistry = async (body: Record<string, unknown>) => {
  const res = await h.api("POST", "/api/v1/global-registries/oci", { key: ADMIN_KEY, body: { url: "https://registry.example.com", ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; name: string };
};

describe("marketplace store configuration", () => {
  it("is 404 until created; PUT creates with defaults, replaces, and keeps one store per organization", async () => {
    expect((await api("GET", "")).status).toBe(404);
    const created = await api("PUT", "", {});
    expect(created.status, created.text).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual([...STORE_FIELDS].sort());
    expect(created.body).toMatchObject({
      organizationId: acme.org.id, enabled: true, syncIntervalMinutes: 60, includeAllGlobalRegistries: false, globalRegistryIds: [],
      lastSyncAt: null, lastSyncError: null, syncing: false, registries: [],
    });
    const optional = await globalRegistry({ name: "Optional vendor", priority: 3 });
    const replaced = await api("PUT", "", { enabled: false, syncIntervalMinutes: 0, globalRegistryIds: [optional.id, optional.id] });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body).toMatchObject({ id: created.body.id, enabled: false, syncIntervalMinutes: 0, globalRegistryIds: [optional.id] });
    expect(replaced.body.registries).toEqual([{ id: optional.id, kind: "global", name: "Optional vendor", mandatory: false, priority: 3 }]);
    // A replacement sets every field: what is left out takes its default again.
    const again = await api("PUT", "", { syncIntervalMinutes: 15 });
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id: created.body.id, enabled: true, syncIntervalMinutes: 15, globalRegistryIds: [] });
    expect((await api("GET", "")).body).toEqual(again.body);
    expect(await h.services.prisma.marketplaceStore.count({ where: { organizationId: acme.org.id } })).toBe(1);
    const audit = await h.services.prisma.auditEntry.findMany({ where: { organizationId: acme.org.id, entityType: "marketplace_store" }, orderBy: { createdAt: "asc" } });
    expect(audit.map((a) => a.message)).toEqual([
      "created the marketplace store", "replaced the marketplace store's configuration", "replaced the marketplace store's configuration",
    ]);
  });

  it("answers 400 naming every invalid field", async () => {
    const bad = await api("PUT", "", { enabled: "true", syncIntervalMinutes: -1, includeAllGlobalRegistries: 1, globalRegistryIds: ["not-a-uuid"] });
    expect(bad.status).toBe(400);
    expect(issuePaths(bad).sort()).toEqual(["enabled", "globalRegistryIds.0", "includeAllGlobalRegistries", "syncIntervalMinutes"]);
    for (const body of [{ syncIntervalMinutes: 10081 }, { syncIntervalMinutes: 1.5 }, { syncIntervalMinutes: "60" }]) {
      const res = await api("PUT", "", body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(issuePaths(res)).toEqual(["syncIntervalMinutes"]);
    }
    const known = await globalRegistry({ name: "Known vendor" });
    const unknown = await api("PUT", "", { globalRegistryIds: [known.id, "00000000-0000-4000-8000-000000000000"] });
    expect(unknown.status).toBe(400);
    expect(issuePaths(unknown)).toEqual(["globalRegistryIds.1"]);
    expect(unknown.body.issues[0].message).toContain("00000000-0000-4000-8000-000000000000");
    // Nothing was stored by the refused requests.
    expect((await api("GET", "")).body).toMatchObject({ syncIntervalMinutes: 15, globalRegistryIds: [] });
  });

  it("enables and disables; a disabled store refuses a sync (409)", async () => {
    const off = await api("POST", "/disable");
    expect(off.status, off.text).toBe(200);
    expect(off.body.enabled).toBe(false);
    expect((await h.services.prisma.marketplaceStore.findUniqueOrThrow({ where: { organizationId: acme.org.id } })).enabled).toBe(false);
    const sync = await api("POST", "/sync");
    expect(sync.status).toBe(409);
    expect(sync.body.message).toBe("Marketplace store is disabled");
    expect(await h.services.prisma.job.count({ where: { type: "marketplace-store.sync" } })).toBe(0);
    const on = await api("POST", "/enable");
    expect(on.body.enabled).toBe(true);
    expect((await api("POST", "/enable")).body.enabled).toBe(true);
  });

  it("pages the sync history as spec op 1 says: limit and offset required non-negative integers (400 naming them)", async () => {
    const ok = await api("GET", "/sync-history?limit=10&offset=0");
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toEqual({ data: [], total: 0, hasMore: false });
    const cases: Array<[string, string[]]> = [
      ["", ["limit", "offset"]],
      ["?limit=10", ["offset"]],
      ["?offset=0", ["limit"]],
      ["?limit=-1&offset=0", ["limit"]],
      ["?limit=10&offset=-5", ["offset"]],
      ["?limit=1.5&offset=0", ["limit"]],
      ["?limit=ten&offset=0", ["limit"]],
      ["?limit=10&offset=1e3", ["offset"]],
      ["?limit=201&offset=0", ["limit"]],
    ];
    for (const [query, fields] of cases) {
      const res = await api("GET", `/sync-history${query}`);
      expect(res.status, query).toBe(400);
      expect(issuePaths(res).sort(), query).toEqual(fields);
    }
    expect((await api("GET", "/sync-history?limit=0&offset=0")).status).toBe(200);
  });

  it("keeps organizations apart: another tenant has its own store or none (404)", async () => {
    expect((await api("GET", "", undefined, initech)).status).toBe(404);
    expect((await api("GET", "/sync-history?limit=5&offset=0", undefined, initech)).status).toBe(404);
    expect((await api("POST", "/sync", undefined, initech)).status).toBe(404);
    expect((await api("POST", "/enable", undefined, initech)).status).toBe(404);
    expect((await api("DELETE", "", undefined, initech)).status).toBe(404);
    expect((await h.api("GET", "/api/v1/marketplace-store/sync/progress", { key: initech.key })).status).toBe(404);
    const own = await api("PUT", "", { syncIntervalMinutes: 5 }, globex);
    expect(own.status).toBe(201);
    expect(own.body.organizationId).toBe(globex.org.id);
    expect(own.body.id).not.toBe((await api("GET", "")).body.id);
    expect((await api("GET", "")).body.syncIntervalMinutes).toBe(15);
  });

  it("secures every operation with registries:read / registries:write", async () => {
    const base = "/api/v1/marketplace-store";
    for (const c of [
      { method: "GET", path: base, permission: "registries:read" },
      { method: "PUT", path: base, body: { syncIntervalMinutes: 15 }, permission: "registries:write" },
      { method: "POST", path: `${base}/enable`, permission: "registries:write" },
      { method: "POST", path: `${base}/disable`, permission: "registries:write" },
      { method: "POST", path: `${base}/sync`, permission: "registries:write" },
      { method: "GET", path: `${base}/sync-history?limit=5&offset=0`, permission: "registries:read" },
      { method: "GET", path: `${base}/sync/progress`, permission: "registries:read" },
      { method: "DELETE", path: base, permission: "registries:write" },
    ]) await expectSecured(h, acme, globex, c);
    // A viewer reads but cannot change.
    const viewer = await h.createKey(acme.org.id, ["registries:read"], { role: "viewer" });
    expect((await h.api("GET", base, { key: viewer })).status).toBe(200);
    expect((await h.api("PUT", base, { key: viewer, body: {} })).status).toBe(403);
  });

  it("removes the store and its history; the organization's deletion removes it too", async () => {
    await api("PUT", "", {});
    const store = (await api("GET", "")).body;
    await h.services.prisma.marketplaceSyncRecord.create({ data: { organizationId: acme.org.id, storeId: store.id, status: "success" } });
    const del = await api("DELETE", "");
    expect(del.status, del.text).toBe(200);
    expect(del.body).toEqual({ id: store.id, deleted: true });
    expect((await api("GET", "")).status).toBe(404);
    expect(await h.services.prisma.marketplaceSyncRecord.count({ where: { storeId: store.id } })).toBe(0);
    expect((await api("DELETE", "")).status).toBe(404);

    const doomed = await h.createTenant("Doomed Store");
    await api("PUT", "", {}, doomed);
    const res = await h.api("DELETE", `/api/v1/organizations/${doomed.org.id}`, { key: ADMIN_KEY });
    expect(res.status, res.text).toBe(200);
    expect(await h.services.prisma.marketplaceStore.count({ where: { organizationId: doomed.org.id } })).toBe(0);
  });
});
