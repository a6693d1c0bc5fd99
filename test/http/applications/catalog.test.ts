// The application catalog filled by a real Git sync: list and filters, categories, vendors,
// get, versions in SemVer order, deployments (none yet), the icon with its ETag, and delete.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml, component, composeProfile, createRegistry, OUR_FORMAT_YAML, PNG, SVG, syncOk } from "../registries-git/support.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;
let registryId: string;
let otherRegistryId: string;
let commit: string;
const ids: Record<string, string> = {};

const VERSIONS = ["1.0.0", "1.10.0", "1.2.0", "2.0.0-rc.1", "2.0.0", "0.9.0"];

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Catalog");
  globex = await h.createTenant("Globex Catalog");
  const files: Record<string, string | Buffer> = {
    "vision/app.yaml": OUR_FORMAT_YAML,
    "vision/icon.png": PNG,
    "dashboard/app.yaml": appYaml("dashboard", "3.1.0", {
      name: "Fleet Dashboard", description: "Charts for the shop floor", category: "Monitoring", tags: ["ui", "charts"],
      icon: "./logo.svg", vendor: { name: "Globex Tools" },
      profiles: [composeProfile("web", { components: [component("web", { timeout: "1m0s" })] })],
      parameters: { port: { value: 8080, targets: [{ pointer: "PORT", components: ["web"] }] } },
    }),
    "dashboard/logo.svg": SVG,
    "plain/app.yaml": appYaml("plain", "0.1.0", { category: "monitoring", vendor: { name: "Acme Industrial", site: "https://acme.example" } }),
    "bad-icon/app.yaml": appYaml("bad-icon", "1.0.0", { icon: "../../outside.png" }),
  };
  for (const [i, version] of VERSIONS.entries()) files[`multi/v${i}/app.yaml`] = appYaml("multi", version, { description: `release ${version}` });
  const repo = await git.createRepo("catalog", files);
  commit = repo.commit;
  registryId = (await createRegistry(h, acme, { name: "Catalog", url: repo.url })).id;
  expect(await syncOk(h, acme, registryId)).toMatchObject({ applicationsImported: 4 + VERSIONS.length, errors: [] });
  const other = await git.createRepo("second", { "app.yaml": appYaml("from-second", "1.0.0", { category: "Tools" }) });
  otherRegistryId = (await createRegistry(h, acme, { name: "Second", url: other.url })).id;
  await syncOk(h, acme, otherRegistryId);
  const all = await h.api("GET", "/api/v1/applications?limit=200", { key: acme.key });
  for (const app of all.body.items) ids[app.key] = app.id;
});
afterAll(async () => {
  await git?.close();
  await h?.close();
});

const get = (path: string, tenant: Tenant = acme, headers?: Record<string, string>) => h.api("GET", `/api/v1/applications${path}`, { key: tenant.key, headers });
const keys = (res: { body: { items: Array<{ key: string }> } }) => res.body.items.map((a) => a.key).sort();

describe("list", () => {
  it("lists the organization's applications with paging, newest first", async () => {
    const all = await get("");
    expect(all.status).toBe(200);
    expect(all.body.total).toBe(6);
    expect(all.body.items[0].key).toBe("from-second");
    const page = await get("?limit=2&offset=1");
    expect(page.body).toMatchObject({ total: 6, hasMore: true });
    expect(page.body.items).toHaveLength(2);
    expect((await get("", globex)).body).toEqual({ items: [], total: 0, hasMore: false });
  });

  it("describes each application by its latest version", async () => {
    const multi = (await get("?q=multi")).body.items[0];
    expect(multi).toMatchObject({ key: "multi", latestVersion: "2.0.0", versionCount: VERSIONS.length, description: "release 2.0.0", hasIcon: false });
    expect(multi.iconUrl).toBeUndefined();
    expect(multi.source).toEqual({ type: "git", registryId, registryName: "Catalog", path: "multi/v4/app.yaml", revision: commit });
    const vision = (await get("?q=vision-gateway")).body.items[0];
    expect(vision).toMatchObject({ hasIcon: true, iconUrl: `/api/v1/applications/${ids["vision-gateway"]}/icon`, vendor: { name: "Acme Industrial", site: "https://acme.example" } });
  });

  it("filters by category and vendor (case-insensitive), source registry, exact tag and text", async () => {
    expect(keys(await get("?category=monitoring"))).toEqual(["dashboard", "plain"]);
    expect(keys(await get("?category=vision"))).toEqual(["vision-gateway"]);
    expect(keys(await get("?vendor=acme%20industrial"))).toEqual(["plain", "vision-gateway"]);
    expect(keys(await get(`?registryId=${otherRegistryId}`))).toEqual(["from-second"]);
    expect(keys(await get("?q=shop%20floor"))).toEqual(["dashboard"]);
    expect(keys(await get("?q=charts"))).toEqual(["dashboard"]);
    expect(keys(await get("?q=GATEWAY"))).toEqual(["vision-gateway"]);
    expect(keys(await get("?category=monitoring&vendor=Globex%20Tools"))).toEqual(["dashboard"]);
    // A tag is matched exactly (not as text), and combines with the text search.
    expect(keys(await get("?tag=ui"))).toEqual(["dashboard"]);
    expect(keys(await get("?tag=u"))).toEqual([]);
    expect(keys(await get("?tag=ui&q=shop"))).toEqual(["dashboard"]);
    expect(keys(await get("?tag=ui&q=gateway"))).toEqual([]);
    expect((await get("?registryId=not-a-uuid")).status).toBe(400);
  });
});

describe("categories and vendors", () => {
  it("lists categories with their application counts", async () => {
    const res = await get("/categories");
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      items: [
        { name: "Monitoring", applicationCount: 1 },
        { name: "Tools", applicationCount: 1 },
        { name: "monitoring", applicationCount: 1 },
        { name: "vision", applicationCount: 1 },
      ],
      total: 4,
      hasMore: false,
    });
    expect((await get("/categories?limit=1")).body).toMatchObject({ total: 4, hasMore: true, items: [{ name: "Monitoring" }] });
  });

  it("lists vendors from the manifests' first organization entry", async () => {
    const res = await get("/vendors");
    expect(res.body).toEqual({
      items: [
        { name: "Acme Industrial", site: "https://acme.example", applicationCount: 2 },
        { name: "Globex Tools", applicationCount: 1 },
      ],
      total: 2,
      hasMore: false,
    });
    expect((await get("/vendors", globex)).body.total).toBe(0);
  });
});

describe("get", () => {
  it("answers the application with its latest version's profiles, parameters and source", async () => {
    const res = await get(`/${ids.dashboard}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: ids.dashboard,
      key: "dashboard",
      name: "Fleet Dashboard",
      latestVersion: "3.1.0",
      category: "Monitoring",
      tags: ["ui", "charts"],
      vendor: { name: "Globex Tools" },
      hasIcon: true,
      warnings: [],
      source: { type: "git", registryId, registryName: "Catalog", path: "dashboard/app.yaml", revision: commit },
    });
    expect(res.body.profiles).toEqual([
      { id: "web", type: "compose", components: [{ name: "web", properties: { repository: "oci://registry.example/web", revision: "1.0.0", timeout: "1m0s" } }] },
    ]);
    expect(res.body.parameters).toEqual({ port: { value: 8080, schema: { type: "integer" }, targets: [{ pointer: "PORT", components: ["web"] }] } });
  });

  it("keeps a warning when the icon path leaves the repository", async () => {
    const res = await get(`/${ids["bad-icon"]}`);
    expect(res.body.hasIcon).toBe(false);
    expect(res.body.warnings).toEqual(["icon ignored: ../../outside.png leaves the repository"]);
  });

  it("answers 404 for an unknown application and for another tenant's", async () => {
    expect((await get("/00000000-0000-4000-8000-000000000000")).status).toBe(404);
    const foreign = await get(`/${ids.dashboard}`, globex);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe("Application not found");
  });

  it("is reachable through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const app = await client.applications.get.query({ id: ids.multi! });
    expect(app.latestVersion).toBe("2.0.0");
    const versions = await client.applications.versions.query({ id: ids.multi!, limit: 2 });
    expect(versions.items.map((v) => v.version)).toEqual(["2.0.0", "2.0.0-rc.1"]);
  });
});

describe("versions", () => {
  it("lists versions in SemVer order, newest first, with paging", async () => {
    const res = await get(`/${ids.multi}/versions`);
    expect(res.status).toBe(200);
    expect(res.body.items.map((v: { version: string }) => v.version)).toEqual(["2.0.0", "2.0.0-rc.1", "1.10.0", "1.2.0", "1.0.0", "0.9.0"]);
    expect(res.body).toMatchObject({ total: 6, hasMore: false });
    const page = await get(`/${ids.multi}/versions?limit=2&offset=2`);
    expect(page.body.items.map((v: { version: string }) => v.version)).toEqual(["1.10.0", "1.2.0"]);
    expect(page.body).toMatchObject({ total: 6, hasMore: true });
    const version = res.body.items[2];
    expect(version).toMatchObject({
      applicationId: ids.multi, version: "1.10.0", apiVersion: "fleet.app/v1alpha1", description: "release 1.10.0",
      hasIcon: false, warnings: [], source: { type: "git", registryId, path: "multi/v1/app.yaml", revision: commit },
    });
    expect(version.manifestDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(version.profiles[0].id).toBe("compose");
    expect((await get(`/${ids.multi}/versions`, globex)).status).toBe(404);
  });
});

describe("deployments", () => {
  it("lists no deployments until deployments exist", async () => {
    const versions = await get(`/${ids.multi}/versions`);
    const versionId = versions.body.items[0].id;
    expect((await get(`/${ids.multi}/deployments`)).body).toEqual({ items: [], total: 0, hasMore: false });
    expect((await get(`/${ids.multi}/versions/${versionId}/deployments`)).body).toEqual({ items: [], total: 0, hasMore: false });
    expect((await get(`/${ids.dashboard}/versions/${versionId}/deployments`)).status).toBe(404);
    expect((await get(`/${ids.multi}/deployments`, globex)).status).toBe(404);
    expect((await get(`/${ids.multi}/versions/${versionId}/deployments`, globex)).status).toBe(404);
  });
});

describe("icon", () => {
  it("serves a PNG with its content type and a strong ETag, and 304 when it matches", async () => {
    const res = await fetch(`${h.url}/api/v1/applications/${ids["vision-gateway"]}/icon`, { headers: { "x-api-key": acme.key } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(Buffer.from(await res.arrayBuffer())).toEqual(PNG);
    const etag = res.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
    expect(res.headers.get("cache-control")).toBe("private, no-cache");

    for (const header of [etag, `W/${etag}`, `"other", ${etag}`]) {
      const again = await fetch(`${h.url}/api/v1/applications/${ids["vision-gateway"]}/icon`, { headers: { "x-api-key": acme.key, "if-none-match": header } });
      expect(again.status, header).toBe(304);
      expect(await again.text()).toBe("");
    }
    const stale = await fetch(`${h.url}/api/v1/applications/${ids["vision-gateway"]}/icon`, { headers: { "x-api-key": acme.key, "if-none-match": '"stale"' } });
    expect(stale.status).toBe(200);
  });

  it("serves an SVG as image/svg+xml in a sandbox", async () => {
    const res = await get(`/${ids.dashboard}/icon`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^image\/svg\+xml/);
    expect(res.headers.get("content-security-policy")).toContain("sandbox");
    expect(res.text).toBe(SVG);
  });

  it("answers 404 when the application has no icon, or is unknown or another tenant's", async () => {
    const none = await get(`/${ids.multi}/icon`);
    expect(none.status).toBe(404);
    expect(none.body).toMatchObject({ code: "NOT_FOUND", message: "Application icon not found" });
    expect((await get("/00000000-0000-4000-8000-000000000000/icon")).status).toBe(404);
    expect((await get(`/${ids.dashboard}/icon`, globex)).status).toBe(404);
    expect((await get("/not-a-uuid/icon")).status).toBe(400);
  });

  it("is listed in the OpenAPI document", async () => {
    const doc = await h.api("GET", "/api/v1/openapi.json", { key: null });
    expect(doc.body.paths["/applications/{id}/icon"].get.responses["304"]).toBeDefined();
    for (const p of ["/applications", "/applications/categories", "/applications/vendors", "/applications/{id}", "/applications/{id}/versions",
      "/applications/{id}/deployments", "/applications/{id}/versions/{versionId}/deployments", "/registries/git", "/registries/git/{id}",
      "/registries/git/{id}/enable", "/registries/git/{id}/disable", "/registries/git/{id}/sync"]) {
      expect(doc.body.paths[p], p).toBeDefined();
    }
  });
});

describe("delete package", () => {
  it("deletes the application with all its versions; a later sync imports it again", async () => {
    expect((await h.api("DELETE", `/api/v1/applications/${ids.multi}`, { key: globex.key })).status).toBe(404);
    const res = await h.api("DELETE", `/api/v1/applications/${ids.multi}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: ids.multi, deleted: true, deletedVersions: VERSIONS.length });
    expect((await get(`/${ids.multi}`)).status).toBe(404);
    expect(await h.services.prisma.applicationVersion.count({ where: { applicationId: ids.multi } })).toBe(0);
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { action: "applications.delete", entityId: ids.multi } });
    expect(audit).toMatchObject({ outcome: "success", entityType: "application" });
    expect(await syncOk(h, acme, registryId)).toMatchObject({ applicationsImported: VERSIONS.length, applicationsUpdated: 0 });
  });
});

describe("security", () => {
  it("secures every operation: 401 without credentials, 403 without the permission, 404 across tenants", async () => {
    const app = `/api/v1/applications/${ids.dashboard}`;
    const versions = await get(`/${ids.dashboard}/versions`);
    const versionId = versions.body.items[0].id;
    const cases = [
      { method: "GET", path: "/api/v1/applications", permission: "applications:read" },
      { method: "GET", path: "/api/v1/applications/categories", permission: "applications:read" },
      { method: "GET", path: "/api/v1/applications/vendors", permission: "applications:read" },
      { method: "GET", path: app, permission: "applications:read", foreignPath: app },
      { method: "GET", path: `${app}/versions`, permission: "applications:read", foreignPath: `${app}/versions` },
      { method: "GET", path: `${app}/deployments`, permission: "applications:read", foreignPath: `${app}/deployments` },
      { method: "GET", path: `${app}/versions/${versionId}/deployments`, permission: "applications:read", foreignPath: `${app}/versions/${versionId}/deployments` },
      { method: "GET", path: `${app}/icon`, permission: "applications:read", foreignPath: `${app}/icon` },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    const plain = `/api/v1/applications/${ids.plain}`;
    await expectSecured(h, acme, globex, { method: "DELETE", path: plain, permission: "applications:write", foreignPath: plain });
    // The icon route audits a denial like the procedures do.
    const denied = await h.services.prisma.auditEntry.findFirst({ where: { action: "permission.denied", message: { startsWith: "applications.icon" } } });
    expect(denied).not.toBeNull();
  });
});
