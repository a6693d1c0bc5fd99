// "Sync now" applies the commit the person reviewed (issue 33): the plan answers its commit,
// the sync carries it as expectedCommit; when the branch moved in between, the answer is a 409
// naming both commits and nothing is applied or recorded; planning again and syncing with the
// new commit applies it. A malformed expectedCommit is a 400 naming the field; without one the
// sync applies the branch's head as before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;
let sourceId: string;

const base = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;
const role = (name: string, permissions: string[]) => `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: ${name} }\nspec:\n  permissions: [${permissions.join(", ")}]\n`;
const plan = () => h.api("POST", `${base(acme)}/${sourceId}/plan`, { key: acme.key });
const sync = (body?: Record<string, unknown>, t = acme) => h.api("POST", `${base(t)}/${sourceId}/sync`, { key: t.key, ...(body ? { body } : {}) });
const permissions = async () => (await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "operators" } })).permissions.sort();

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Planned Sync");
  globex = await h.createTenant("Globex Planned Sync");
  const { url } = await git.createRepo("planned", { "roles.yaml": role("operators", ["devices:read"]) });
  const created = await h.api("POST", base(acme), { key: acme.key, body: { name: "planned", url, branch: "main", path: "/", pollIntervalSeconds: 0 } });
  expect(created.status, created.text).toBe(201);
  sourceId = created.body.id;
});

afterAll(async () => {
  await h?.close();
  await git?.close();
});

describe("sync now with the planned commit", () => {
  it("applies the planned commit when the branch is still there", async () => {
    const planned = await plan();
    expect(planned.status, planned.text).toBe(200);
    expect(planned.body.commit).toMatch(/^[0-9a-f]{40}$/);
    const res = await sync({ expectedCommit: planned.body.commit });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: "applied", commit: planned.body.commit });
    expect(await permissions()).toEqual(["devices:read"]);
  });

  it("answers 409 naming both commits when the branch moved after the plan; nothing is applied or recorded", async () => {
    await git.commit("planned", { "roles.yaml": role("operators", ["devices:read", "alerts:read"]) });
    const reviewed = (await plan()).body.commit as string;
    const before = await h.api("GET", `${base(acme)}/${sourceId}`, { key: acme.key });
    const syncsBefore = await h.services.prisma.configSourceSync.count({ where: { sourceId } });

    const { commit: head } = await git.commit("planned", { "roles.yaml": role("operators", ["devices:read", "alerts:read", "audit:read"]) });
    const res = await sync({ expectedCommit: reviewed });
    expect(res.status, res.text).toBe(409);
    expect(res.body.message).toBe(`The branch main moved from ${reviewed.slice(0, 12)} to ${head.slice(0, 12)} since the plan; nothing was applied: plan again`);
    expect(await permissions()).toEqual(["devices:read"]);
    const after = await h.api("GET", `${base(acme)}/${sourceId}`, { key: acme.key });
    expect(after.body).toMatchObject({ lastAppliedCommit: before.body.lastAppliedCommit, lastSyncStatus: "applied", lastSyncAt: before.body.lastSyncAt });
    expect(await h.services.prisma.configSourceSync.count({ where: { sourceId } })).toBe(syncsBefore);

    // plan again: the new head, which the sync then applies
    const again = await plan();
    expect(again.body.commit).toBe(head);
    const applied = await sync({ expectedCommit: head });
    expect(applied.body).toMatchObject({ status: "applied", commit: head });
    expect(await permissions()).toEqual(["alerts:read", "audit:read", "devices:read"]);
  });

  it("refuses a malformed expectedCommit (400 naming it); another tenant's source is a 404; without one the head is applied", async () => {
    const bad = await sync({ expectedCommit: "abc" });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain("expectedCommit");
    expect((await sync({ expectedCommit: "0".repeat(40) }, globex)).status).toBe(404);
    await git.commit("planned", { "roles.yaml": role("operators", ["devices:read"]) });
    const res = await sync();
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe("applied");
    expect(await permissions()).toEqual(["devices:read"]);
  });
});
