// Config sources through HTTP (docs/config-as-code.md), against a Git smart-HTTP server on
// loopback: a sync applies the folder's documents with the source as owner and the commit in
// the marks; a manual edit answers 409 naming the source; a pushed bad document refuses the
// whole sync with file and line, changes nothing and keeps the last applied commit; another
// tenant's source is a 404; deleting the source leaves its resources, unowned.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;
let repoUrl: string;
let sourceId: string;

const base = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;
const role = (name: string, permissions: string[]) => `apiVersion: fleet.app/v1
kind: Role
metadata: { name: ${name} }
spec:
  permissions: [${permissions.join(", ")}]
`;
const RULES = `apiVersion: fleet.app/v1
kind: AlertRule
metadata: { name: offline }
spec:
  condition: { type: device_offline, durationSeconds: 600 }
`;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Sources");
  globex = await h.createTenant("Globex Sources");
  ({ url: repoUrl } = await git.createRepo("fleet-config", {
    "fleet/access/roles.yaml": role("readers", ["devices:read"]),
    "fleet/alerts.yml": RULES,
    "README.md": "# not read\n",
    "elsewhere/ignored.yaml": role("outside", ["devices:read"]),
  }));
});

afterAll(async () => {
  await h?.close();
  await git?.close();
});

describe("config sources", () => {
  it("creates a source with the Git registry's checks; another tenant cannot see it", async () => {
    const bad = await h.api("POST", base(acme), { key: acme.key, body: { name: "main", url: "ftp://x", path: "fleet" } });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("url");
    const res = await h.api("POST", base(acme), { key: acme.key, body: { name: "main", url: repoUrl, branch: "main", path: "fleet" } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({ name: "main", path: "/fleet", owner: "source:main", lastAppliedCommit: null, lastSyncStatus: null, hasCredentials: false });
    sourceId = res.body.id;
    expect((await h.api("GET", `${base(globex)}/${sourceId}`, { key: globex.key })).status).toBe(404);
    expect((await h.api("POST", `${base(acme)}/${sourceId}/sync`, { key: globex.key })).status).toBe(404);
    expect((await h.api("POST", `${base(globex)}/${sourceId}/sync`, { key: globex.key })).status).toBe(404);
  });

  it("sync now applies the folder's documents as the source, with the commit in the owner marks", async () => {
    const res = await h.api("POST", `${base(acme)}/${sourceId}/sync`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: "applied", summary: { create: 2, refused: 0 } });
    const commit = res.body.commit as string;
    expect(commit).toMatch(/^[0-9a-f]{40}$/);
    const readers = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "readers" } });
    expect(readers).toMatchObject({ managedBy: "source:main", managedCommit: commit });
    expect(await h.services.prisma.role.count({ where: { organizationId: acme.org.id, name: "outside" } })).toBe(0);
    expect(await h.services.prisma.alertRule.count({ where: { organizationId: acme.org.id, managedBy: "source:main" } })).toBe(1);
    expect(await h.services.prisma.role.count({ where: { organizationId: globex.org.id } })).toBe(0);
    const source = await h.api("GET", `${base(acme)}/${sourceId}`, { key: acme.key });
    expect(source.body).toMatchObject({ lastAppliedCommit: commit, lastSyncStatus: "applied" });

    const edit = await h.api("PATCH", `/api/v1/roles/${readers.id}`, { key: acme.key, body: { description: "by hand" } });
    expect(edit.status).toBe(409);
    expect(edit.body.message).toContain("managed as code by source:main");
    // a direct apply is another owner: refused, nothing taken over
    const direct = await h.api("POST", `/api/v1/organizations/${acme.org.id}/config/apply`, {
      key: acme.key, body: { files: [{ path: "r.yaml", content: role("readers", ["alerts:read"]) }] },
    });
    expect(direct.status).toBe(409);
    expect(direct.body.message).toContain("is managed by source:main");
  });

  it("a pushed bad document refuses the whole sync with file and line; nothing changes and the last commit stays", async () => {
    const before = await h.api("GET", `${base(acme)}/${sourceId}`, { key: acme.key });
    await git.commit("fleet-config", {
      "fleet/access/roles.yaml": role("readers", ["devices:read", "alerts:read"]),
      "fleet/bad.yaml": "apiVersion: fleet.app/v1\nkind: AlertRule\nmetadata: { name: broken }\nspec:\n  condition: { type: no_such_condition }\n",
    });
    const res = await h.api("POST", `${base(acme)}/${sourceId}/sync`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe("refused");
    expect(res.body.message).toContain("fleet/bad.yaml:5 AlertRule \"broken\"");
    const readers = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "readers" } });
    expect(readers.permissions).toEqual(["devices:read"]);
    const after = await h.api("GET", `${base(acme)}/${sourceId}`, { key: acme.key });
    expect(after.body).toMatchObject({ lastAppliedCommit: before.body.lastAppliedCommit, lastSyncStatus: "refused" });
    expect(after.body.lastSyncMessage).toContain("fleet/bad.yaml:5");
    expect(await h.services.prisma.auditEntry.count({ where: { organizationId: acme.org.id, action: "config.sourceSync", outcome: "failure" } })).toBe(1);

    await git.commit("fleet-config", { "fleet/bad.yaml": "# fixed: no documents\n" });
    const fixed = await h.api("POST", `${base(acme)}/${sourceId}/sync`, { key: acme.key });
    expect(fixed.body).toMatchObject({ status: "applied", summary: { update: 1, unchanged: 1 } });
    expect((await h.services.prisma.role.findFirstOrThrow({ where: { id: readers.id } })).permissions.sort()).toEqual(["alerts:read", "devices:read"]);
  });

  it("a fetch that fails is recorded as failed, changing nothing", async () => {
    const broken = await h.api("POST", base(acme), { key: acme.key, body: { name: "missing", url: `${git.url}/nope.git`, path: "/" } });
    expect(broken.status, broken.text).toBe(201);
    const res = await h.api("POST", `${base(acme)}/${broken.body.id}/sync`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: "failed", commit: null });
    expect((await h.api("GET", `${base(acme)}/${broken.body.id}`, { key: acme.key })).body).toMatchObject({ lastSyncStatus: "failed", lastAppliedCommit: null });
  });

  it("prunes what the repository no longer holds, and the guard refuses a mass delete until it is allowed once", async () => {
    const { url } = await git.createRepo("pruned", {
      "a.yaml": role("prune-a", ["devices:read"]), "b.yaml": role("prune-b", ["devices:read"]), "c.yaml": role("prune-c", ["devices:read"]),
    });
    const created = await h.api("POST", base(acme), { key: acme.key, body: { name: "pruner", url, path: "/", prune: true, pruneLimit: 1 } });
    expect(created.status, created.text).toBe(201);
    expect(created.body).toMatchObject({ prune: true, pruneLimit: 1, pruneAllowedOnce: false });
    const sync = () => h.api("POST", `${base(acme)}/${created.body.id}/sync`, { key: acme.key });
    expect((await sync()).body).toMatchObject({ status: "applied", summary: { create: 3 } });
    const names = async () => (await h.services.prisma.role.findMany({ where: { organizationId: acme.org.id, name: { startsWith: "prune-" } }, orderBy: { name: "asc" } })).map((r) => r.name);

    await git.commit("pruned", { "b.yaml": "# removed\n", "c.yaml": "# removed\n" });
    const guarded = await sync();
    expect(guarded.body.status).toBe("refused");
    expect(guarded.body.message).toContain("prune would delete 2 resources, more than the limit of 1");
    expect(await names()).toEqual(["prune-a", "prune-b", "prune-c"]);

    const allowed = await h.api("POST", `${base(acme)}/${created.body.id}/allow-prune`, { key: acme.key });
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.body.pruneAllowedOnce).toBe(true);
    const pruned = await sync();
    expect(pruned.body).toMatchObject({ status: "applied", summary: { delete: 2, unchanged: 1 } });
    expect(await names()).toEqual(["prune-a"]);
    expect((await h.api("GET", `${base(acme)}/${created.body.id}`, { key: acme.key })).body.pruneAllowedOnce).toBe(false);
  });

  it("deleting the source leaves its resources in place, unowned", async () => {
    const res = await h.api("DELETE", `${base(acme)}/${sourceId}`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ deleted: true, released: 2 });
    const readers = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "readers" } });
    expect(readers).toMatchObject({ managedBy: null, managedCommit: null });
    expect((await h.api("PATCH", `/api/v1/roles/${readers.id}`, { key: acme.key, body: { description: "by hand" } })).status).toBe(200);
  });
});
