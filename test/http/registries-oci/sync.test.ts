// OCI registry sync against a real registry (Debian's docker-registry): only the listed
// repositories, tags with Link paging, manifests by digest, application packages recognised by
// artifactType + layer media type and imported with the shared ingest, other tags skipped with
// a reason, a sync record per run, credentials never in a response or a log.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peersAvailable } from "../../support/peers.js";
import { expectSecured } from "../../support/security.js";
import { appYaml } from "../registries-git/support.js";

let h: Harness;
let open: OciRegistryServer;
let locked: OciRegistryServer;
let tokenAuth: OciRegistryServer;
let acme: Tenant;
let globex: Tenant;
const PASSWORD = "pull-secret-4711";

const RECORD_FIELDS = [
  "id", "registryId", "scope", "organizationId", "status", "repositoriesFound", "applicationsFound", "applicationsImported",
  "applicationsUpdated", "errors", "syncDurationMs", "perRepository", "skipped", "triggeredBy", "createdAt",
];

beforeAll(async () => {
  [h, open, locked, tokenAuth] = await Promise.all([
    createHarness(), startOciRegistry(), startOciRegistry({ basic: { username: "puller", password: PASSWORD } }),
    startOciRegistry({ token: { username: "tokenuser", password: PASSWORD } }),
  ]);
  acme = await h.createTenant("Acme OCI Sync");
  globex = await h.createTenant("Globex OCI Sync");
  await open.pushPackage("edge/vision", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision" }));
  await open.pushPackage("edge/vision", "1.1.0", appYaml("vision", "1.1.0", { name: "Vision" }), "application/vnd.fleet.app.v1+json");
  await open.pushImage("edge/vision", "latest");
  await open.pushPackage("edge/vision", "2.0.0", appYaml("vision", "1.9.9")); // tag != metadata.version
  await open.pushPackage("edge/vision", "3.0.0", appYaml("vision", "3.0.0"), "application/vnd.example.other+json");
  await open.pushPackage("edge/broken", "0.1.0", "apiVersion: [unclosed\n");
  await open.pushPackage("edge/unlisted", "1.0.0", appYaml("unlisted", "1.0.0"));
  await locked.pushPackage("private/metrics", "0.5.0", appYaml("metrics", "0.5.0"));
  await tokenAuth.pushPackage("tok/app", "2.1.0", appYaml("tok-app", "2.1.0"));
}, 60_000);
afterAll(async () => {
  await Promise.all([open?.close(), locked?.close(), tokenAuth?.close()]);
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, tenant: Tenant = acme) => h.api(method, `/api/v1/registries/oci${path}`, { key: tenant.key, body });
let counter = 0;
async function create(body: Record<string, unknown>, tenant: Tenant = acme) {
  counter += 1;
  const res = await api("POST", "", { name: `sync-${counter}`, ...body }, tenant);
  expect(res.status, res.text).toBe(201);
  return res.body;
}
const apps = async (tenant: Tenant) => (await h.api("GET", "/api/v1/applications?limit=200", { key: tenant.key })).body.items as Array<{ key: string; latestVersion: string; versionCount: number; source: Record<string, string> }>;

describe.skipIf(!peersAvailable("docker-registry", "htpasswd"))("sync", () => {
  it("imports the application packages of the listed repositories and skips the rest with reasons", async () => {
    const reg = await create({ url: open.url, repositories: ["edge/vision", "edge/broken"] });
    const res = await api("POST", `/${reg.id}/sync`);
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([...RECORD_FIELDS].sort());
    expect(res.body).toMatchObject({
      registryId: reg.id, scope: "tenant", organizationId: acme.org.id, status: "success", repositoriesFound: 2,
      applicationsFound: 3, applicationsImported: 2, applicationsUpdated: 0, triggeredBy: acme.user.id,
    });
    const vision = res.body.perRepository.find((r: { repository: string }) => r.repository === "edge/vision");
    expect(vision).toMatchObject({ tagCount: 5, found: 3, imported: 2, updated: 0, errors: [] });
    const reasons = Object.fromEntries(res.body.skipped.map((s: { repository: string; tag: string; reason: string }) => [`${s.repository}:${s.tag}`, s.reason]));
    expect(reasons["edge/vision:latest"]).toMatch(/not an application package: artifactType application\/vnd.oci.image.config.v1\+json/);
    expect(reasons["edge/vision:3.0.0"]).toMatch(/artifactType application\/vnd.example.other\+json/);
    expect(reasons["edge/vision:2.0.0"]).toMatch(/tag differs from metadata.version 1.9.9/);
    expect(reasons["edge/broken:0.1.0"]).toBeTruthy();
    const catalog = await apps(acme);
    const app = catalog.find((a) => a.key === "vision")!;
    expect(app).toMatchObject({ latestVersion: "1.1.0", versionCount: 2 });
    expect(app.source).toMatchObject({ type: "oci", registryId: reg.id, registryName: reg.name, path: "edge/vision:1.1.0" });
    expect(app.source.revision).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(catalog.find((a) => a.key === "unlisted")).toBeUndefined();
    expect(catalog.find((a) => a.key === "vision")).toBeDefined();
    expect((await apps(globex)).find((a) => a.key === "vision")).toBeUndefined();

    const after = await api("GET", `/${reg.id}`);
    expect(after.body.lastSyncAt).toBeTruthy();
    expect(after.body.lastSyncError).toBeNull();
    // A second run finds the same versions and imports nothing new.
    const again = await api("POST", `/${reg.id}/sync`);
    expect(again.body).toMatchObject({ status: "success", applicationsImported: 0, applicationsUpdated: 0 });
    const history = await api("GET", `/${reg.id}/sync-history?limit=1&offset=0`);
    expect(history.status).toBe(200);
    expect(history.body).toMatchObject({ total: 2, hasMore: true });
    expect(history.body.data[0].id).toBe(again.body.id);
    expect((await api("GET", `/${reg.id}/sync-history?limit=5&offset=1`)).body.data[0].id).toBe(res.body.id);
  });

  it("syncs nothing for an empty repository list", async () => {
    const reg = await create({ url: open.url });
    const res = await api("POST", `/${reg.id}/sync`);
    expect(res.body).toMatchObject({ status: "success", repositoriesFound: 0, applicationsFound: 0, perRepository: [], skipped: [] });
  });

  it("uses BASIC credentials and never shows them; a refused credential is a failed run with lastSyncError", async () => {
    const reg = await create({ url: locked.url, authType: "BASIC", credential: `puller:${PASSWORD}`, repositories: ["private/metrics"] });
    const res = await api("POST", `/${reg.id}/sync`);
    expect(res.body, res.text).toMatchObject({ status: "success", applicationsImported: 1 });
    const wrong = await create({ url: locked.url, authType: "BASIC", credential: "puller:not-the-password", repositories: ["private/metrics"] });
    const bad = await api("POST", `/${wrong.id}/sync`);
    expect(bad.status).toBe(200);
    expect(bad.body).toMatchObject({ status: "failed", errors: ["private/metrics: tags: the registry refused the credential (401)"] });
    expect((await api("GET", `/${wrong.id}`)).body.lastSyncError).toBe("private/metrics: tags: the registry refused the credential (401)");
    const down = await startOciRegistry();
    await down.close();
    const gone = await create({ url: down.url, repositories: ["a/b"] });
    const failed = await api("POST", `/${gone.id}/sync`);
    expect(failed.body).toMatchObject({ status: "failed", errors: ["connection refused"] });
    expect((await api("GET", `/${gone.id}`)).body.lastSyncError).toBe("connection refused");
    const all = [res.text, bad.text, (await api("GET", `/${reg.id}/sync-history`)).text, h.logs.join("\n")].join("\n");
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain("not-the-password");
    expect(all).not.toContain(Buffer.from(`puller:${PASSWORD}`).toString("base64"));
  });

  it("answers a Bearer challenge with the token exchange (health check and sync), credential only to the realm", async () => {
    const reg = await create({ url: tokenAuth.url, authType: "BASIC", credential: `tokenuser:${PASSWORD}`, repositories: ["tok/app"] });
    const health = await api("POST", `/${reg.id}/health-check`);
    expect(health.body, health.text).toMatchObject({ healthStatus: "healthy", httpStatus: 200 });
    const res = await api("POST", `/${reg.id}/sync`);
    expect(res.body, res.text).toMatchObject({ status: "success", applicationsImported: 1 });
    const requests = tokenAuth.tokenRequests!.filter((r) => r.scope !== "repository:tok/app:pull,push");
    expect(requests.some((r) => r.scope === "repository:tok/app:pull" && r.service === "test-registry" && r.authorized)).toBe(true);
    const wrong = await create({ url: tokenAuth.url, authType: "BASIC", credential: "tokenuser:wrong-token-pass" });
    const bad = await api("POST", `/${wrong.id}/health-check`);
    expect(bad.body).toMatchObject({ healthStatus: "unhealthy", httpStatus: 401, message: "the token service answered 401 (credential refused)" });
    const anonymous = await create({ url: tokenAuth.url });
    expect((await api("POST", `/${anonymous.id}/health-check`)).body.healthStatus).toBe("unhealthy");
    expect(h.logs.join("\n")).not.toContain("wrong-token-pass");
  });

  it("follows Link paging of the tag list", async () => {
    // docker-registry 2.8 ignores n/last on tags/list: this proxy in front of the real registry
    // pages its answer (2 tags per page, RFC 5988 Link header) and forwards everything else.
    const pages: string[] = [];
    const proxy = http.createServer(async (req, res) => {
      const url = new URL(req.url!, open.url);
      const upstream = await fetch(new URL(url.pathname + (url.pathname.endsWith("/tags/list") ? "" : url.search), open.url), {
        method: req.method, headers: { accept: String(req.headers.accept ?? "*/*") },
      });
      if (url.pathname.endsWith("/tags/list")) {
        pages.push(url.search);
        const { name, tags } = (await upstream.json()) as { name: string; tags: string[] };
        tags.sort();
        const last = url.searchParams.get("last");
        const from = last ? tags.indexOf(last) + 1 : 0;
        const page = tags.slice(from, from + 2);
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (from + 2 < tags.length) headers.link = `<${url.pathname}?n=2&last=${page[page.length - 1]}>; rel="next"`;
        res.writeHead(200, headers).end(JSON.stringify({ name, tags: page }));
        return;
      }
      const headers: Record<string, string> = {};
      upstream.headers.forEach((v, k) => { if (!["content-length", "transfer-encoding", "content-encoding"].includes(k)) headers[k] = v; });
      res.writeHead(upstream.status, headers).end(Buffer.from(await upstream.arrayBuffer()));
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      const reg = await create({ url: `http://127.0.0.1:${(proxy.address() as { port: number }).port}`, repositories: ["edge/vision"] }, globex);
      const res = await api("POST", `/${reg.id}/sync`, undefined, globex);
      expect(res.body, res.text).toMatchObject({ status: "success", applicationsImported: 2 });
      expect(res.body.perRepository[0].tagCount).toBe(5);
      expect(pages).toHaveLength(3);
    } finally {
      proxy.close();
    }
  });

  it("refuses a disabled registry (409)", async () => {
    const reg = await create({ url: open.url, enabled: false });
    const res = await api("POST", `/${reg.id}/sync`);
    expect(res.status).toBe(409);
  });

  it("secures sync and sync history", async () => {
    const reg = await create({ url: open.url });
    const item = `/api/v1/registries/oci/${reg.id}`;
    for (const c of [
      { method: "POST", path: `${item}/sync`, permission: "registries:write", foreignPath: `${item}/sync` },
      { method: "GET", path: `${item}/sync-history`, permission: "registries:read", foreignPath: `${item}/sync-history` },
    ]) await expectSecured(h, acme, globex, c);
  });
});
