// The GitOps loop of config sources (docs/config-as-code.md), against a Git smart-HTTP server
// on loopback: a source's plan (nothing written), the sync history, PATCH and its validation,
// the prune guard's share, per-resource status with drift, and another tenant kept out.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;

const base = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;
const role = (name: string, permissions: string[], description?: string) => `apiVersion: fleet.app/v1
kind: Role
metadata: { name: ${name} }
spec:
  permissions: [${permissions.join(", ")}]
${description ? `  description: ${description}\n` : ""}`;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme GitOps");
  globex = await h.createTenant("Globex GitOps");
});

afterAll(async () => {
  await h?.close();
  await git?.close();
});

async function newSource(t: Tenant, body: Record<string, unknown>) {
  const res = await h.api("POST", base(t), { key: t.key, body: { path: "/", ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as { id: string; webhookSecret: string; webhookPath: string };
}

describe("a source's plan and history", () => {
  let id: string;
  it("plans the branch as a sync would, writing nothing; history lists each sync, newest first", async () => {
    const { url } = await git.createRepo("planned", {
      "roles.yaml": role("plan-readers", ["devices:read"]) + "---\n" + role("plan-writers", ["devices:read", "devices:write"]),
    });
    await h.api("POST", "/api/v1/roles", { key: acme.key, body: { name: "plan-taken", permissions: ["devices:read"] } });
    ({ id } = await newSource(acme, { name: "planned", url }));

    const plan = await h.api("POST", `${base(acme)}/${id}/plan`, { key: acme.key });
    expect(plan.status, plan.text).toBe(200);
    expect(plan.body).toMatchObject({ failure: null, summary: { create: 2, refused: 0 } });
    expect(plan.body.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(await h.services.prisma.role.count({ where: { organizationId: acme.org.id, name: { startsWith: "plan-readers" } } })).toBe(0);
    expect(await h.services.prisma.configSourceSync.count({ where: { sourceId: id } })).toBe(0);

    const first = await h.api("POST", `${base(acme)}/${id}/sync`, { key: acme.key });
    expect(first.body).toMatchObject({ status: "applied", summary: { create: 2 } });

    // an update with the changed field old and new, a refusal with file and line, an unmanaged name
    const { commit: second } = await git.commit("planned", {
      "roles.yaml": role("plan-readers", ["devices:read"], "read only") + "---\n" + role("plan-writers", ["devices:read", "devices:write"]),
      "bad.yaml": "apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: plan-bad }\nspec:\n  permissions: [no:such]\n",
      "taken.yaml": role("plan-taken", ["devices:read"]),
    });
    const again = await h.api("POST", `${base(acme)}/${id}/plan`, { key: acme.key });
    expect(again.body).toMatchObject({ commit: second, summary: { update: 1, unchanged: 1, refused: 1, exists_unmanaged: 1 } });
    const byName = Object.fromEntries((again.body.resources as Array<{ name: string }>).map((r) => [r.name, r]));
    expect(byName["plan-readers"]).toMatchObject({ action: "update", changes: [{ field: "description", old: "", new: "read only" }] });
    expect(byName["plan-bad"]).toMatchObject({ action: "refused", file: "bad.yaml", line: 5 });
    expect(byName["plan-taken"]).toMatchObject({ action: "exists_unmanaged" });
    const readers = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "plan-readers" } });
    expect(readers.description).toBe("");

    const refused = await h.api("POST", `${base(acme)}/${id}/sync`, { key: acme.key });
    expect(refused.body.status).toBe("refused");

    const history = await h.api("GET", `${base(acme)}/${id}/syncs?limit=1`, { key: acme.key });
    expect(history.status, history.text).toBe(200);
    expect(history.body).toMatchObject({ total: 2, hasMore: true });
    expect(history.body.items[0]).toMatchObject({
      commit: second, status: "refused", counts: { refused: 1 }, trigger: { type: "api_key" },
      refusals: [{ kind: "Role", name: "plan-bad", file: "bad.yaml", line: 5 }],
    });
    const older = await h.api("GET", `${base(acme)}/${id}/syncs?limit=1&offset=1`, { key: acme.key });
    expect(older.body.items[0]).toMatchObject({ status: "applied", counts: { created: 2, updated: 0, deleted: 0, unchanged: 0, refused: 0 }, trigger: { type: "api_key", name: "test key" } });
    expect(Date.parse(older.body.items[0].finishedAt)).toBeGreaterThanOrEqual(Date.parse(older.body.items[0].startedAt));
    expect((await h.api("GET", `${base(acme)}/${id}/syncs?limit=0`, { key: acme.key })).status).toBe(400);
  });

  it("keeps the last 100 syncs of a source", async () => {
    const source = await h.services.prisma.configSource.findUniqueOrThrow({ where: { id } });
    const at = Date.now() - 3_600_000;
    await h.services.prisma.configSourceSync.createMany({
      data: Array.from({ length: 120 }, (_, i) => ({
        sourceId: source.id, organizationId: acme.org.id, status: "failed", message: `old ${i}`, triggerType: "schedule",
        startedAt: new Date(at + i), finishedAt: new Date(at + i),
      })),
    });
    await h.api("POST", `${base(acme)}/${id}/sync`, { key: acme.key });
    const history = await h.api("GET", `${base(acme)}/${id}/syncs?limit=200`, { key: acme.key });
    expect(history.body.total).toBe(100);
    expect(history.body.items[0].trigger.type).toBe("api_key");
    // kept: this sync, the two before it, and the newest 97 of the 120 older ones
    expect(history.body.items.at(-1).message).toBe("old 23");
    expect(await h.services.prisma.configSourceSync.count({ where: { sourceId: id } })).toBe(100);
  });

  it("another tenant can neither plan nor read the history", async () => {
    expect((await h.api("POST", `${base(globex)}/${id}/plan`, { key: globex.key })).status).toBe(404);
    expect((await h.api("POST", `${base(acme)}/${id}/plan`, { key: globex.key })).status).toBe(404);
    expect((await h.api("GET", `${base(globex)}/${id}/syncs`, { key: globex.key })).status).toBe(404);
  });
});

describe("editing a source", () => {
  it("PATCH refuses bad fields with 400 naming them and changes nothing; good fields are kept and the editor becomes the acting user", async () => {
    const { url } = await git.createRepo("patched", { "roles.yaml": role("patched-a", ["devices:read"]) });
    const { id } = await newSource(acme, { name: "patched", url });
    const before = await h.services.prisma.configSource.findUniqueOrThrow({ where: { id } });
    for (const [body, field] of [
      [{ pollIntervalSeconds: 10 }, "pollIntervalSeconds"], [{ pollIntervalSeconds: -1 }, "pollIntervalSeconds"],
      [{ prunePercent: 101 }, "prunePercent"], [{ pruneLimit: "many" }, "pruneLimit"], [{ branch: "bad..branch" }, "branch"],
      [{ url: "ftp://example.com/x.git" }, "url"], [{ authType: "TOKEN" }, "credential"], [{ prune: "yes" }, "prune"],
    ] as const) {
      const res = await h.api("PATCH", `${base(acme)}/${id}`, { key: acme.key, body });
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(400);
      expect(res.body.message).toContain(`${field}: `);
    }
    expect(await h.services.prisma.configSource.findUniqueOrThrow({ where: { id } })).toEqual(before);

    const other = await h.createKey(acme.org.id, ["*"]);
    const ok = await h.api("PATCH", `${base(acme)}/${id}`, { key: other, body: { pollIntervalSeconds: 60, prunePercent: 50, pruneLimit: 3, prune: true, branch: "release" } });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body).toMatchObject({ pollIntervalSeconds: 60, prunePercent: 50, pruneLimit: 3, prune: true, branch: "release", url, name: "patched", lastSyncCommit: null });
    expect(ok.body.actingUserId).not.toBe(before.actingUserId);
    expect((await h.api("PATCH", `${base(acme)}/${id}`, { key: acme.key, body: { pollIntervalSeconds: 0, prunePercent: null } })).body)
      .toMatchObject({ pollIntervalSeconds: 0, prunePercent: null });
    expect((await h.api("PATCH", `${base(globex)}/${id}`, { key: globex.key, body: { pollIntervalSeconds: 60 } })).status).toBe(404);
    expect((await h.api("PATCH", `${base(acme)}/${id}`, { key: globex.key, body: { pollIntervalSeconds: 60 } })).status).toBe(404);
    expect(await h.services.prisma.auditEntry.count({ where: { entityId: id, action: "config.sourcesUpdate", outcome: "success" } })).toBe(2);
  });

  it("the prune guard's share refuses a sync deleting more than prunePercent of what the source owns, until allowed once", async () => {
    const files = Object.fromEntries(["a", "b", "c", "d"].map((n) => [`${n}.yaml`, role(`share-${n}`, ["devices:read"])]));
    const { url } = await git.createRepo("shared", files);
    const { id } = await newSource(acme, { name: "shared", url, prune: true, pruneLimit: 100, prunePercent: 50 });
    const sync = () => h.api("POST", `${base(acme)}/${id}/sync`, { key: acme.key });
    expect((await sync()).body).toMatchObject({ status: "applied", summary: { create: 4 } });
    const names = async () => (await h.services.prisma.role.findMany({ where: { organizationId: acme.org.id, name: { startsWith: "share-" } }, orderBy: { name: "asc" } })).map((r) => r.name);

    await git.commit("shared", {}, { remove: ["d.yaml"] }); // 1 of 4: 25 %
    expect((await sync()).body).toMatchObject({ status: "applied", summary: { delete: 1 } });
    await git.commit("shared", {}, { remove: ["b.yaml", "c.yaml"] }); // 2 of 3: 67 %
    const refused = await sync();
    expect(refused.body.status).toBe("refused");
    expect(refused.body.message).toContain("prune would delete 2 of the 3 resources this source owns (67 %), more than its share of 50 %");
    expect(await names()).toEqual(["share-a", "share-b", "share-c"]);
    const plan = await h.api("POST", `${base(acme)}/${id}/plan`, { key: acme.key });
    expect(plan.body.summary).toMatchObject({ refused: 2, delete: 0 });

    expect((await h.api("POST", `${base(acme)}/${id}/allow-prune`, { key: acme.key })).status).toBe(200);
    expect((await sync()).body).toMatchObject({ status: "applied", summary: { delete: 2, unchanged: 1 } });
    expect(await names()).toEqual(["share-a"]);
  });
});

describe("status per resource", () => {
  it("in sync, pending secret, drifted after an out-of-band change (sync now repairs it), refused with file and line", async () => {
    const { url } = await git.createRepo("statuses", {
      "roles.yaml": role("status-role", ["devices:read"]),
      "targets.yaml": "apiVersion: fleet.app/v1\nkind: NotificationTarget\nmetadata: { name: status-hook }\nspec: { type: webhook }\n",
    });
    const { id } = await newSource(acme, { name: "statuses", url });
    const sync = () => h.api("POST", `${base(acme)}/${id}/sync`, { key: acme.key });
    const statuses = async () => {
      const res = await h.api("GET", `${base(acme)}/${id}/resources`, { key: acme.key });
      expect(res.status, res.text).toBe(200);
      return Object.fromEntries((res.body.items as Array<{ name: string }>).map((r) => [r.name, r])) as Record<string, Record<string, unknown>>;
    };
    expect((await sync()).body.status).toBe("applied");
    let now = await statuses();
    expect(now["status-role"]).toMatchObject({ kind: "Role", status: "in sync", message: null });
    expect(now["status-hook"]).toMatchObject({ kind: "NotificationTarget", status: "pending secret", pendingSecrets: ["url"] });

    // The API refuses to change a managed resource (409); a change behind its back (a restore
    // of an old backup, SQL by hand) is what drifts: the stored role differs from the commit's.
    const stored = await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "status-role" } });
    expect((await h.api("PATCH", `/api/v1/roles/${stored.id}`, { key: acme.key, body: { permissions: ["devices:read", "devices:write"] } })).status).toBe(409);
    await h.services.prisma.role.update({ where: { id: stored.id }, data: { permissions: ["devices:read", "devices:write"] } });
    now = await statuses();
    expect(now["status-role"]).toMatchObject({ status: "drifted" });
    expect(now["status-role"].message).toContain("sync now applies it again");
    expect(now["status-hook"].status).toBe("pending secret");

    expect((await sync()).body).toMatchObject({ status: "applied", summary: { update: 1 } });
    expect((await h.services.prisma.role.findUniqueOrThrow({ where: { id: stored.id } })).permissions).toEqual(["devices:read"]);
    expect((await statuses())["status-role"].status).toBe("in sync");

    await git.commit("statuses", { "roles.yaml": role("status-role", ["no:such"]) });
    expect((await sync()).body.status).toBe("refused");
    now = await statuses();
    expect(now["status-role"]).toMatchObject({ status: "refused", file: "roles.yaml", line: 5 });
    expect(now["status-role"].message).toContain("permissions");
    expect((await h.api("GET", `${base(globex)}/${id}/resources`, { key: globex.key })).status).toBe(404);
  });
});
