// Spec op 20 against a real Git smart-HTTP server on loopback: what is imported, rejected and
// reported, how failures are recorded, and that nothing partial ever remains.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import {
  appYaml, component, composeProfile, createRegistry, MARGO_FORMAT_YAML, OUR_FORMAT_YAML, PNG,
  sync, SYNC_RESULT_FIELDS, SYNCED_FIELDS, syncOk,
} from "./support.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Sync");
  globex = await h.createTenant("Globex Sync");
});
afterAll(async () => {
  await git?.close();
  await h?.close();
});

const catalog = (tenant: Tenant, query = "") => h.api("GET", `/api/v1/applications${query}`, { key: tenant.key });
const appByKey = async (tenant: Tenant, key: string) => (await catalog(tenant, `?q=${key}&limit=200`)).body.items.find((a: { key: string }) => a.key === key);

describe("a first sync", () => {
  let registryId: string;
  let commit: string;

  beforeAll(async () => {
    ({ url: registryUrl, commit } = await git.createRepo("formats", {
      "apps/vision/app.yaml": OUR_FORMAT_YAML,
      "apps/vision/icon.png": PNG,
      "apps/digitron/margo.yaml": MARGO_FORMAT_YAML,
      "apps/digitron/resources/logo.png": PNG,
      "README.md": "# catalog\n",
    }));
    registryId = (await createRegistry(h, acme, { url: registryUrl })).id;
  });
  let registryUrl: string;

  it("imports our format and Margo's (helm.v3 read as helm), answering exactly the spec's fields", async () => {
    const res = await sync(h, acme, registryId);
    expect(res.status, res.text).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual([...SYNC_RESULT_FIELDS].sort());
    expect(res.body).toMatchObject({
      success: true,
      registryId,
      scope: "tenant",
      applicationsFound: 2,
      applicationsImported: 2,
      applicationsUpdated: 0,
      errors: [],
      rejectedManifests: [],
      commit,
    });
    expect(res.body.syncDuration).toBeGreaterThanOrEqual(0);
    expect(Number.isInteger(res.body.syncDuration)).toBe(true);

    const vision = await appByKey(acme, "vision-gateway");
    expect(vision).toMatchObject({ name: "Vision Gateway", latestVersion: "2.4.1", category: "vision", hasIcon: true });
    expect(vision.vendor).toEqual({ name: "Acme Industrial", site: "https://acme.example" });
    const digitron = await h.api("GET", `/api/v1/applications/${(await appByKey(acme, "com-northstar-digitron-orchestrator")).id}`, { key: acme.key });
    expect(digitron.body.profiles.map((p: { id: string; type: string }) => [p.id, p.type])).toEqual([["digitron-helm", "helm"], ["digitron-compose", "compose"]]);
    expect(digitron.body.source).toEqual({ type: "git", registryId, registryName: expect.any(String), path: "apps/digitron/margo.yaml", revision: commit });
    expect(digitron.body.hasIcon).toBe(true);
  });

  it("keeps lastSyncAt and lastSyncCommit on the registry", async () => {
    const res = await h.api("GET", `/api/v1/registries/git/${registryId}`, { key: acme.key });
    expect(Object.keys(res.body).sort()).toEqual([...SYNCED_FIELDS].sort());
    expect(res.body.lastSyncCommit).toBe(commit);
    expect(Date.parse(res.body.lastSyncAt)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("counts nothing as imported or updated when nothing changed", async () => {
    const again = await syncOk(h, acme, registryId);
    expect(again).toMatchObject({ applicationsFound: 2, applicationsImported: 0, applicationsUpdated: 0, errors: [], commit });
  });

  it("reuses the per-registry cache in the data directory, and rebuilds it when corrupt", async () => {
    const cache = path.join(h.services.config.DATA_DIR, "git-cache", registryId);
    expect(fs.existsSync(path.join(cache, "fleet-source.json"))).toBe(true);
    // Break the object store: every pack and its index become garbage.
    const packs = path.join(cache, "objects", "pack");
    for (const file of fs.readdirSync(packs)) fs.writeFileSync(path.join(packs, file), "garbage");
    fs.writeFileSync(path.join(cache, "shallow"), "not-an-oid\n");
    const res = await syncOk(h, acme, registryId);
    expect(res).toMatchObject({ applicationsFound: 2, applicationsImported: 0, applicationsUpdated: 0, commit });
    expect(h.logs.join("")).toContain("git cache unusable; rebuilding it");
  });

  it("writes an audit entry for the sync", async () => {
    const entries = await h.services.prisma.auditEntry.findMany({ where: { action: "registries.git.sync", entityId: registryId }, orderBy: { createdAt: "asc" } });
    expect(entries.length).toBeGreaterThanOrEqual(2);
    expect(entries[0]).toMatchObject({ outcome: "success", entityType: "git_registry", organizationId: acme.org.id, actorType: "api_key" });
    expect(entries[0]!.changes).toMatchObject({ commit, found: 2, imported: 2, updated: 0, trigger: "manual" });
  });
});

describe("what is rejected and what is an error", () => {
  const everyRule: Array<[string, unknown[], Record<string, unknown>, RegExp]> = [
    ["type", [composeProfile("p", { type: "docker" })], {}, /profile "p": type "docker" is not supported/],
    ["components", [composeProfile("p", { components: [] })], {}, /at least one component is required/],
    ["component-name", [composeProfile("p", { components: [component("Bad_Name")] })], {}, /name must match/],
    ["unique-name", [composeProfile("p", { components: [component("app"), component("app")] })], {}, /name must be unique/],
    ["repository", [composeProfile("p", { components: [component("app", { repository: "http://insecure.example/app" })] })], {}, /repository must use oci:\/\/ or https:\/\//],
    ["revision", [composeProfile("p", { components: [{ name: "app", properties: { repository: "oci://r/app" } }] })], {}, /revision is required/],
    ["timeout", [composeProfile("p", { components: [component("app", { timeout: "5 minutes" })] })], {}, /timeout must be a duration like 5m0s/],
    ["cores", [composeProfile("p", { requiredResources: { cpu: { cores: 0 } } })], {}, /cpu.cores must be a number greater than 0/],
    ["architecture", [composeProfile("p", { requiredResources: { cpu: { cores: 1, architectures: ["mips"] } } })], {}, /architecture "mips" is not supported/],
    ["memory", [composeProfile("p", { requiredResources: { memory: "1GB" } })], {}, /memory must match/],
    ["storage", [composeProfile("p", { requiredResources: { storage: "4Pi" } })], {}, /storage must match/],
    ["targets", [composeProfile("p")], { x: { value: 1, targets: [{ pointer: "X", components: ["ghost"] }] } }, /ghost/],
  ];
  let result: Record<string, any>;

  beforeAll(async () => {
    const files: Record<string, string> = {
      "apps/good/app.yaml": appYaml("good", "1.0.0"),
      "apps/none/app.yaml": appYaml("no-profiles", "1.0.0", { profiles: [] }),
      "apps/both-fail/app.yaml": appYaml("both-fail", "1.0.0", {
        profiles: [composeProfile("a", { type: "docker" }), composeProfile("b", { components: [] })],
      }),
      "apps/some-fail/app.yaml": appYaml("some-fail", "1.0.0", {
        profiles: [composeProfile("ok"), composeProfile("broken", { type: "kubectl" })],
      }),
      "apps/broken-yaml/app.yaml": "metadata: [unclosed\n  id: x\n",
      "apps/bad-header/margo.yaml": appYaml("Bad Key", "1.0.0"),
      "apps/not-a-manifest/app.yml": appYaml("wrong-file-name", "1.0.0"),
      "outside/app.yaml": appYaml("outside-path", "1.0.0"),
      "app.yaml": appYaml("at-the-root", "1.0.0"),
    };
    for (const [rule, profiles, parameters] of everyRule) {
      files[`apps/rules/${rule}/app.yaml`] = appYaml(`rule-${rule}`, "1.0.0", { profiles, ...(Object.keys(parameters).length ? { parameters } : {}) });
    }
    const { url } = await git.createRepo("mixed", files);
    const registry = await createRegistry(h, acme, { url, path: "/apps" });
    const res = await sync(h, acme, registry.id);
    expect(res.status, res.text).toBe(200);
    result = res.body;
  });

  it("imports what is admitted and still completes", () => {
    expect(result.success).toBe(true);
    expect(result.applicationsImported).toBe(2); // good, some-fail
    // Found: every manifest that passed the manifest-level checks, rejected ones included.
    expect(result.applicationsFound).toBe(2 + 2 + everyRule.length);
  });

  it("rejects a manifest without profiles, naming the reason", () => {
    expect(result.rejectedManifests).toContainEqual({ path: "apps/none/app.yaml", reason: "the manifest declares no deployment profile" });
  });

  it("rejects a manifest whose every profile fails, naming each profile's failing rule", () => {
    const both = result.rejectedManifests.find((r: { path: string }) => r.path === "apps/both-fail/app.yaml");
    expect(both.reason).toBe('profile "a": type "docker" is not supported; profile "b": at least one component is required');
    for (const [rule, , , reason] of everyRule) {
      const rejected = result.rejectedManifests.find((r: { path: string }) => r.path === `apps/rules/${rule}/app.yaml`);
      expect(rejected?.reason, rule).toMatch(reason);
    }
    expect(result.rejectedManifests).toHaveLength(2 + everyRule.length);
  });

  it("keeps the admitted profiles of a partly failing manifest and the dropped one as a warning", async () => {
    const app = await appByKey(acme, "some-fail");
    const detail = await h.api("GET", `/api/v1/applications/${app.id}`, { key: acme.key });
    expect(detail.body.profiles.map((p: { id: string }) => p.id)).toEqual(["ok"]);
    expect(detail.body.warnings).toEqual(['dropped profile "broken": type "kubectl" is not supported']);
  });

  it("lists unreadable files as errors with their path", () => {
    expect(result.errors).toHaveLength(2);
    expect(result.errors[0]).toMatch(/^apps\/bad-header\/margo\.yaml: metadata\.id must match/);
    expect(result.errors[1]).toMatch(/^apps\/broken-yaml\/app\.yaml: /);
  });

  it("ignores files outside the registry's path and files with other names", async () => {
    for (const key of ["outside-path", "at-the-root", "wrong-file-name", "no-profiles", "both-fail"]) {
      expect(await appByKey(acme, key), key).toBeUndefined();
    }
    expect(await appByKey(acme, "good")).toBeDefined();
  });
});

describe("later commits", () => {
  it("adds a new version and updates a changed one, and moves lastSyncCommit", async () => {
    const { url } = await git.createRepo("evolving", {
      "alpha/app.yaml": appYaml("alpha", "1.0.0", { description: "first" }),
      "beta/app.yaml": appYaml("beta", "1.0.0", { description: "original" }),
    });
    const registry = await createRegistry(h, acme, { url });
    expect(await syncOk(h, acme, registry.id)).toMatchObject({ applicationsFound: 2, applicationsImported: 2, applicationsUpdated: 0 });

    const { commit } = await git.commit("evolving", {
      "alpha/v2/app.yaml": appYaml("alpha", "2.0.0", { description: "second" }),
      "beta/app.yaml": appYaml("beta", "1.0.0", { description: "changed" }),
    });
    const second = await syncOk(h, acme, registry.id);
    expect(second).toMatchObject({ applicationsFound: 3, applicationsImported: 1, applicationsUpdated: 1, commit });

    const alpha = await appByKey(acme, "alpha");
    expect(alpha).toMatchObject({ latestVersion: "2.0.0", versionCount: 2, description: "second" });
    const beta = await appByKey(acme, "beta");
    expect(beta).toMatchObject({ latestVersion: "1.0.0", versionCount: 1, description: "changed" });
    const got = await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: acme.key });
    expect(got.body.lastSyncCommit).toBe(commit);

    expect(await syncOk(h, acme, registry.id)).toMatchObject({ applicationsFound: 3, applicationsImported: 0, applicationsUpdated: 0 });
  });

  it("counts a changed icon as an update", async () => {
    const { url } = await git.createRepo("icons-change", { "a/app.yaml": appYaml("icon-change", "1.0.0", { icon: "icon.png" }), "a/icon.png": PNG });
    const registry = await createRegistry(h, acme, { url });
    await syncOk(h, acme, registry.id);
    await git.commit("icons-change", { "a/icon.png": Buffer.concat([PNG, Buffer.from("v2")]) });
    expect(await syncOk(h, acme, registry.id)).toMatchObject({ applicationsImported: 0, applicationsUpdated: 1 });
  });
});

describe("failed fetches", () => {
  const auth = { username: "reader", password: "s3cret-Pa55word-XYZ" };
  const token = "tok_very-secret-token-123";
  let secured: GitServer;
  let tokenServer: GitServer;
  let securedUrl: string;

  beforeAll(async () => {
    [secured, tokenServer] = await Promise.all([startGitServer({ auth }), startGitServer({ auth: { username: "x-access-token", password: token } })]);
    ({ url: securedUrl } = await secured.createRepo("private", { "app.yaml": appYaml("private-app", "1.0.0") }));
  });
  afterAll(async () => {
    await secured?.close();
    await tokenServer?.close();
  });

  it("answers success: false on wrong credentials, records it, imports nothing, and works once they are right", async () => {
    const registry = await createRegistry(h, globex, { url: securedUrl, authType: "BASIC", credential: `${auth.username}:wrong-password` });
    const res = await sync(h, globex, registry.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: false, registryId: registry.id, scope: "tenant", applicationsFound: 0, applicationsImported: 0, applicationsUpdated: 0,
      rejectedManifests: [], commit: "",
    });
    expect(res.body.errors).toEqual(["authentication failed (HTTP 401): check the registry's credentials"]);
    let got = await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: globex.key });
    expect(got.body.lastSyncError).toBe(res.body.errors[0]);
    expect(got.body.lastSyncAt).toBeUndefined();
    expect(await appByKey(globex, "private-app")).toBeUndefined();
    const failure = await h.services.prisma.auditEntry.findFirst({ where: { action: "registries.git.sync", entityId: registry.id, outcome: "failure" } });
    expect(failure?.message).toBe(res.body.errors[0]);

    const fixed = await h.api("PATCH", `/api/v1/registries/git/${registry.id}`, { key: globex.key, body: { credential: `${auth.username}:${auth.password}` } });
    expect(fixed.status, fixed.text).toBe(200);
    expect(await syncOk(h, globex, registry.id)).toMatchObject({ applicationsImported: 1 });
    got = await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: globex.key });
    expect(got.body.lastSyncError).toBeUndefined();
    expect(got.body.lastSyncAt).toBeDefined();
  });

  it("sends a TOKEN as HTTP Basic with the user x-access-token", async () => {
    const { url } = await tokenServer.createRepo("tokened", { "app.yaml": appYaml("token-app", "1.0.0") });
    const registry = await createRegistry(h, globex, { url, authType: "TOKEN", credential: token });
    expect(await syncOk(h, globex, registry.id)).toMatchObject({ applicationsImported: 1 });
    const withoutToken = await createRegistry(h, globex, { url });
    expect((await sync(h, globex, withoutToken.id)).body.errors[0]).toMatch(/authentication failed \(HTTP 401\)/);
  });

  it("answers success: false for an unreachable host", async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const registry = await createRegistry(h, globex, { url: `http://127.0.0.1:${port}/nothing.git` });
    const res = await sync(h, globex, registry.id);
    expect(res.body).toMatchObject({ success: false, commit: "" });
    expect(res.body.errors).toEqual([`cannot reach 127.0.0.1:${port}: connection refused`]);
    const got = await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: globex.key });
    expect(got.body.lastSyncError).toBe(res.body.errors[0]);
  });

  it("answers success: false for a missing branch or repository", async () => {
    const { url } = await git.createRepo("branches", { "app.yaml": appYaml("branch-app", "1.0.0") });
    const registry = await createRegistry(h, globex, { url, branch: "release/9" });
    const res = await sync(h, globex, registry.id);
    expect(res.body).toMatchObject({ success: false });
    expect(res.body.errors).toEqual(['branch "release/9" not found in the repository']);
    const missing = await createRegistry(h, globex, { url: `${git.url}/no-such-repo.git` });
    expect((await sync(h, globex, missing.id)).body.errors).toEqual(["repository not found (HTTP 404)"]);
  });

  it("answers success: false when the path does not exist", async () => {
    const { url } = await git.createRepo("no-path", { "app.yaml": appYaml("no-path-app", "1.0.0") });
    const registry = await createRegistry(h, globex, { url, path: "/catalog" });
    expect((await sync(h, globex, registry.id)).body).toMatchObject({ success: false, errors: ["path /catalog does not exist in the repository"] });
  });

  it("never shows a credential in a response or a log line", async () => {
    const registry = await createRegistry(h, globex, { url: securedUrl, authType: "BASIC", credential: `${auth.username}:${auth.password}` });
    const responses = [
      registry,
      (await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: globex.key })).text,
      (await h.api("GET", "/api/v1/registries/git", { key: globex.key })).text,
      (await sync(h, globex, registry.id)).text,
      (await h.api("PATCH", `/api/v1/registries/git/${registry.id}`, { key: globex.key, body: { credential: `${auth.username}:${auth.password}` } })).text,
      (await h.api("POST", "/api/v1/registries/git", { key: globex.key, body: { name: "bad", url: securedUrl, authType: "BASIC", credential: auth.password } })).text,
      (await h.api("GET", "/api/v1/applications", { key: globex.key })).text,
    ].map((r) => (typeof r === "string" ? r : JSON.stringify(r)));
    const audit = JSON.stringify(await h.services.prisma.auditEntry.findMany({ where: { organizationId: globex.org.id } }));
    for (const secret of [auth.password, token, Buffer.from(`${auth.username}:${auth.password}`).toString("base64")]) {
      for (const text of responses) expect(text).not.toContain(secret);
      expect(h.logs.join("\n")).not.toContain(secret);
      expect(audit).not.toContain(secret);
    }
    expect(JSON.parse(responses[1]!).hasCredentials).toBe(true);
    const stored = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registry.id } });
    expect(stored.credentialSealed).not.toContain(auth.password);
    expect(h.services.secrets.decrypt(stored.credentialSealed!)).toBe(`${auth.username}:${auth.password}`);
  });
});

describe("guards", () => {
  it("refuses to sync a disabled registry with 409", async () => {
    const { url } = await git.createRepo("disabled", { "app.yaml": appYaml("disabled-app", "1.0.0") });
    const registry = await createRegistry(h, acme, { url, enabled: false });
    const res = await sync(h, acme, registry.id);
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ code: "CONFLICT", message: "Git registry is disabled" });
    expect(await appByKey(acme, "disabled-app")).toBeUndefined();
    await h.api("POST", `/api/v1/registries/git/${registry.id}/enable`, { key: acme.key });
    expect(await syncOk(h, acme, registry.id)).toMatchObject({ applicationsImported: 1 });
  });

  it("refuses a second sync while one runs (from any process), until the lease ends or expires", async () => {
    const { url } = await git.createRepo("busy", { "app.yaml": appYaml("busy-app", "1.0.0") });
    const registry = await createRegistry(h, acme, { url });
    // Another process holds the lease.
    await h.services.prisma.gitRegistry.update({ where: { id: registry.id }, data: { syncLeaseId: crypto.randomUUID(), syncLeaseUntil: new Date(Date.now() + 60_000) } });
    const busy = await sync(h, acme, registry.id);
    expect(busy.status).toBe(409);
    expect(busy.body.message).toBe("A sync of this Git registry is already running");
    // That process died: its lease expires.
    await h.services.prisma.gitRegistry.update({ where: { id: registry.id }, data: { syncLeaseUntil: new Date(Date.now() - 1000) } });
    await syncOk(h, acme, registry.id);
    const after = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registry.id } });
    expect(after.syncLeaseId).toBeNull();

    const both = await Promise.all([sync(h, acme, registry.id), sync(h, acme, registry.id)]);
    const statuses = both.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([200, 409]).toContain(statuses[1]);
  });

  it("answers 404 for an unknown registry and for another tenant's", async () => {
    const { url } = await git.createRepo("secured-sync", { "app.yaml": appYaml("secured-app", "1.0.0") });
    const registry = await createRegistry(h, acme, { url });
    expect((await sync(h, acme, "00000000-0000-4000-8000-000000000000")).status).toBe(404);
    const foreign = await sync(h, globex, registry.id);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toMatchObject({ code: "NOT_FOUND", message: "Git registry not found" });
    await expectSecured(h, acme, globex, {
      method: "POST",
      path: `/api/v1/registries/git/${registry.id}/sync`,
      permission: "registries:write",
      foreignPath: `/api/v1/registries/git/${registry.id}/sync`,
    });
  });

  it("answers 503 when the catalog cannot be written, records it, and leaves nothing partial", async () => {
    const { url } = await git.createRepo("unwritable", {
      "a/app.yaml": appYaml("unwritable-a", "1.0.0"),
      "b/app.yaml": appYaml("unwritable-b", "1.0.0"),
    });
    const registry = await createRegistry(h, acme, { url });
    await h.services.prisma.$executeRawUnsafe(`ALTER TABLE "ApplicationVersion" RENAME TO "ApplicationVersion_unavailable"`);
    let res;
    try {
      res = await sync(h, acme, registry.id);
    } finally {
      await h.services.prisma.$executeRawUnsafe(`ALTER TABLE "ApplicationVersion_unavailable" RENAME TO "ApplicationVersion"`);
    }
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ code: "SERVICE_UNAVAILABLE", message: "Application service unavailable" });
    expect(await h.services.prisma.application.count({ where: { appKey: { startsWith: "unwritable" } } })).toBe(0);
    const got = await h.api("GET", `/api/v1/registries/git/${registry.id}`, { key: acme.key });
    expect(got.body.lastSyncError).toBe("the application catalog could not be written; nothing was imported");
    expect(got.body.lastSyncCommit).toBeUndefined();
    expect(await syncOk(h, acme, registry.id)).toMatchObject({ applicationsImported: 2 });
  });
});
