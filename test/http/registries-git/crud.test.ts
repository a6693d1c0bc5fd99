// Git registries as resources: create, list, get (spec op 6), update, delete, enable (spec op
// 7) and disable, with exactly the spec's fields, and secured like every other operation.
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AppRouter } from "../../../src/index.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml, createRegistry, REGISTRY_FIELDS, SYNCED_FIELDS, syncOk } from "./support.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;
const URL_A = "https://git.example.com/acme/catalog.git";

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Registries");
  globex = await h.createTenant("Globex Registries");
});
afterAll(async () => {
  await git?.close();
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, tenant: Tenant = acme) => h.api(method, `/api/v1/registries/git${path}`, { key: tenant.key, body });

describe("create", () => {
  it("answers 201 with the spec's fields and the documented defaults", async () => {
    const res = await api("POST", "", { name: "Main catalog", url: URL_A });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual([...REGISTRY_FIELDS].sort());
    expect(res.body).toMatchObject({
      organizationId: acme.org.id,
      name: "Main catalog",
      url: URL_A,
      branch: "main",
      path: "/",
      authType: "NONE",
      hasCredentials: false,
      syncIntervalMinutes: 60,
      enabled: true,
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
  });

  it("takes every field, normalizes the path and seals the credential", async () => {
    const res = await api("POST", "", {
      name: "Private", url: "http://git.internal:8080/apps.git", branch: "release/2.x", path: "apps/edge/",
      authType: "BASIC", credential: "deploy:hunter2-secret", syncIntervalMinutes: 0, enabled: false,
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ branch: "release/2.x", path: "/apps/edge", authType: "BASIC", hasCredentials: true, syncIntervalMinutes: 0, enabled: false });
    expect(res.text).not.toContain("hunter2");
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { entityId: res.body.id, action: "registries.git.create" } });
    expect(audit).toMatchObject({ outcome: "success", entityType: "git_registry" });
    expect(JSON.stringify(audit!.changes)).not.toContain("hunter2");
  });

  it("refuses a name that exists in the organization (409), but not in another one", async () => {
    await api("POST", "", { name: "Twin", url: URL_A });
    const again = await api("POST", "", { name: "Twin", url: URL_A });
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("CONFLICT");
    expect((await api("POST", "", { name: "Twin", url: URL_A }, globex)).status).toBe(201);
  });

  it.each([
    ["a short name", { name: "x" }, /name/],
    ["a missing URL", { url: undefined }, /url/],
    ["a non-http URL", { url: "ssh://git@example.com/repo.git" }, /"url".*must be an http:\/\/ or https:\/\/ URL/],
    ["credentials inside the URL", { url: "https://user:pw@example.com/repo.git" }, /"url".*must not carry credentials/],
    ["an invalid branch", { branch: "feature..x" }, /"branch".*is not a valid Git branch name/],
    ["a path leaving the repository", { path: "../etc" }, /"path".*must be a folder inside the repository/],
    ["an unknown auth type", { authType: "SSH" }, /authType/],
    ["BASIC without username:password", { authType: "BASIC", credential: "just-a-password" }, /credential: must be username:password/],
    ["TOKEN without a token", { authType: "TOKEN" }, /credential: required for authType TOKEN/],
    ["a credential with NONE", { credential: "a:b" }, /credential: only used with authType BASIC or TOKEN/],
    ["a negative interval", { syncIntervalMinutes: -1 }, /syncIntervalMinutes/],
    ["a string for enabled", { enabled: "false" }, /enabled/],
    ["a metadata address", { url: "http://169.254.169.254/x.git" }, /url: .*cloud metadata/],
  ])("refuses %s with 400", async (_case, override, message) => {
    const res = await api("POST", "", { name: `Bad ${Math.random()}`, url: URL_A, ...override });
    expect(res.status, res.text).toBe(400);
    // Schema failures name the field in `issues`, rule failures in the message: the text has both.
    expect(res.text).toMatch(message);
    expect(res.text).not.toContain("just-a-password");
  });
});

describe("list and get", () => {
  let tenant: Tenant;
  const ids: string[] = [];
  beforeAll(async () => {
    tenant = await h.createTenant("Listing Org");
    for (const [i, enabled] of [true, false, true].entries()) ids.push((await createRegistry(h, tenant, { name: `r${i}`, url: URL_A, enabled })).id);
  });

  it("lists newest first with paging", async () => {
    const page = await api("GET", "?limit=2", undefined, tenant);
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ total: 3, hasMore: true });
    expect(page.body.items.map((r: { id: string }) => r.id)).toEqual([ids[2], ids[1]]);
    const rest = await api("GET", "?limit=2&offset=2", undefined, tenant);
    expect(rest.body).toMatchObject({ total: 3, hasMore: false });
    expect(rest.body.items.map((r: { id: string }) => r.id)).toEqual([ids[0]]);
    for (const item of page.body.items) expect(Object.keys(item).sort()).toEqual([...REGISTRY_FIELDS].sort());
  });

  it("filters by enabled", async () => {
    expect((await api("GET", "?enabled=false", undefined, tenant)).body.items.map((r: { id: string }) => r.id)).toEqual([ids[1]]);
    expect((await api("GET", "?enabled=true", undefined, tenant)).body.total).toBe(2);
  });

  it("gets one registry (op 6), 404 when unknown or another tenant's", async () => {
    const res = await api("GET", `/${ids[0]}`, undefined, tenant);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: ids[0], name: "r0", organizationId: tenant.org.id });
    expect(Object.keys(res.body).sort()).toEqual([...REGISTRY_FIELDS].sort());
    expect((await api("GET", "/00000000-0000-4000-8000-000000000000", undefined, tenant)).status).toBe(404);
    const foreign = await api("GET", `/${ids[0]}`, undefined, globex);
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe("Git registry not found");
    expect((await api("GET", "/not-a-uuid", undefined, tenant)).status).toBe(400);
  });

  it("is reachable through the typed tRPC client", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": tenant.key } })] });
    const page = await client.registries.git.list.query({ limit: 10 });
    expect(page.total).toBe(3);
    const one = await client.registries.git.get.query({ id: ids[0]! });
    expect(one.name).toBe("r0");
  });
});

describe("update", () => {
  it("renames and changes the interval and path", async () => {
    const registry = await createRegistry(h, acme, { url: URL_A });
    const res = await api("PATCH", `/${registry.id}`, { name: "Renamed", syncIntervalMinutes: 15, path: "/apps" });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ name: "Renamed", syncIntervalMinutes: 15, path: "/apps", url: URL_A });
    expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(registry.updatedAt));
  });

  it("resets the sync state when the URL or the branch changes", async () => {
    const { url, commit } = await git.createRepo("reset", { "app.yaml": appYaml("reset-app", "1.0.0") });
    await git.commit("reset", {}, { branch: "next" });
    const registry = await createRegistry(h, acme, { url });
    await syncOk(h, acme, registry.id);
    const synced = await api("GET", `/${registry.id}`);
    expect(Object.keys(synced.body).sort()).toEqual([...SYNCED_FIELDS].sort());
    expect(synced.body.lastSyncCommit).toBe(commit);

    const renamed = await api("PATCH", `/${registry.id}`, { name: "Still synced" });
    expect(renamed.body.lastSyncCommit).toBe(commit);
    const moved = await api("PATCH", `/${registry.id}`, { branch: "next" });
    expect(moved.status, moved.text).toBe(200);
    expect(Object.keys(moved.body).sort()).toEqual([...REGISTRY_FIELDS].sort());
    await syncOk(h, acme, registry.id);
    const again = await api("PATCH", `/${registry.id}`, { url: `${url}?moved=1` });
    expect(again.body.lastSyncAt).toBeUndefined();
    expect(again.body.lastSyncCommit).toBeUndefined();
  });

  it("needs the credential again when the URL points to another server, and clears it with NONE", async () => {
    const registry = await createRegistry(h, acme, { url: URL_A, authType: "TOKEN", credential: "tok-1" });
    const samePlace = await api("PATCH", `/${registry.id}`, { url: "https://git.example.com/acme/other.git" });
    expect(samePlace.status, samePlace.text).toBe(200);
    expect(samePlace.body.hasCredentials).toBe(true);
    const elsewhere = await api("PATCH", `/${registry.id}`, { url: "https://attacker.example/collect.git" });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.message).toMatch(/send the credential again/);
    const withCredential = await api("PATCH", `/${registry.id}`, { url: "https://mirror.example/acme.git", credential: "tok-2" });
    expect(withCredential.status, withCredential.text).toBe(200);
    const switched = await api("PATCH", `/${registry.id}`, { authType: "BASIC" });
    expect(switched.status).toBe(400);
    expect(switched.body.message).toMatch(/credential: required for authType BASIC/);
    const none = await api("PATCH", `/${registry.id}`, { authType: "NONE" });
    expect(none.body).toMatchObject({ authType: "NONE", hasCredentials: false });
    const stored = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registry.id } });
    expect(stored.credentialSealed).toBeNull();
  });

  it("refuses a taken name (409) and invalid fields (400)", async () => {
    const a = await createRegistry(h, acme, { name: "Taken A", url: URL_A });
    await createRegistry(h, acme, { name: "Taken B", url: URL_A });
    expect((await api("PATCH", `/${a.id}`, { name: "Taken B" })).status).toBe(409);
    expect((await api("PATCH", `/${a.id}`, { branch: "bad branch" })).status).toBe(400);
    expect((await api("PATCH", `/${a.id}`, { name: "Hijack" }, globex)).status).toBe(404);
  });
});

describe("enable, disable and delete", () => {
  it("enables (op 7) and disables, answering the registry", async () => {
    const registry = await createRegistry(h, acme, { url: URL_A, enabled: false });
    const enabled = await api("POST", `/${registry.id}/enable`);
    expect(enabled.status).toBe(200);
    expect(Object.keys(enabled.body).sort()).toEqual([...REGISTRY_FIELDS].sort());
    expect(enabled.body).toMatchObject({ id: registry.id, enabled: true });
    expect((await api("POST", `/${registry.id}/enable`)).body.enabled).toBe(true);
    const disabled = await api("POST", `/${registry.id}/disable`);
    expect(disabled.body).toMatchObject({ id: registry.id, enabled: false });
    expect((await api("POST", `/${registry.id}/enable`, undefined, globex)).status).toBe(404);
    expect((await api("POST", "/00000000-0000-4000-8000-000000000000/enable")).status).toBe(404);
  });

  it("deletes the registry and its cache, keeping the imported applications", async () => {
    const { url } = await git.createRepo("deleted", { "app.yaml": appYaml("kept-after-delete", "1.0.0") });
    const registry = await createRegistry(h, acme, { url });
    await syncOk(h, acme, registry.id);
    const fs = await import("node:fs");
    const path = await import("node:path");
    const cache = path.join(h.services.config.DATA_DIR, "git-cache", registry.id);
    expect(fs.existsSync(cache)).toBe(true);
    expect((await api("DELETE", `/${registry.id}`, undefined, globex)).status).toBe(404);
    const res = await api("DELETE", `/${registry.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: registry.id, deleted: true });
    expect((await api("GET", `/${registry.id}`)).status).toBe(404);
    expect(fs.existsSync(cache)).toBe(false);
    const apps = await h.api("GET", "/api/v1/applications?q=kept-after-delete", { key: acme.key });
    expect(apps.body.items).toHaveLength(1);
    expect(apps.body.items[0].source.registryId).toBe(registry.id);
    expect(apps.body.items[0].source.registryName).toBeUndefined();
  });
});

describe("security", () => {
  it("secures every operation: 401 without credentials, 403 without the permission, 404 across tenants", async () => {
    const registry = await createRegistry(h, acme, { url: URL_A });
    const item = `/api/v1/registries/git/${registry.id}`;
    const cases = [
      { method: "GET", path: "/api/v1/registries/git", permission: "registries:read" },
      { method: "POST", path: "/api/v1/registries/git", permission: "registries:write", body: { name: "Secured create", url: URL_A } },
      { method: "GET", path: item, permission: "registries:read", foreignPath: item },
      { method: "PATCH", path: item, permission: "registries:write", foreignPath: item, body: { syncIntervalMinutes: 30 } },
      { method: "POST", path: `${item}/enable`, permission: "registries:write", foreignPath: `${item}/enable` },
      { method: "POST", path: `${item}/disable`, permission: "registries:write", foreignPath: `${item}/disable` },
      { method: "POST", path: `${item}/sync`, permission: "registries:write", foreignPath: `${item}/sync` },
      { method: "DELETE", path: item, permission: "registries:write", foreignPath: item },
    ];
    for (const c of cases) await expectSecured(h, acme, globex, c);
    // A viewer reads but cannot change.
    const viewer = await h.createKey(acme.org.id, ["*"], { role: "viewer" });
    expect((await h.api("GET", item, { key: viewer })).status).toBe(200);
    expect((await h.api("POST", `${item}/disable`, { key: viewer })).status).toBe(403);
  });
});
