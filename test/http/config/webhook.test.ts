// Config sources synced without anyone pressing "sync now" (docs/config-as-code.md): the
// webhook verified in the GitHub, Gitea and GitLab styles (good, forged, missing, a push to
// another branch), a verified push applied by the job runner within seconds, another tenant's
// secret refused, and polling through the job runner (due sources only, the same commit again
// does nothing, a new commit is applied as the source).
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { CONFIG_SYNC_JOB, configSourceJobs, enqueueDueSyncs } from "../../../src/modules/config/jobs.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let globex: Tenant;
let runner: JobRunner;

const base = (t: Tenant) => `/api/v1/organizations/${t.org.id}/config/sources`;
const role = (name: string, permissions: string[]) =>
  `apiVersion: fleet.app/v1\nkind: Role\nmetadata: { name: ${name} }\nspec:\n  permissions: [${permissions.join(", ")}]\n`;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Webhooks");
  globex = await h.createTenant("Globex Webhooks");
  runner = new JobRunner(h.services, { ...configSourceJobs(h.services.config), schedules: [], concurrency: 1, workerId: "config-webhook-test" });
});

afterAll(async () => {
  await runner?.stop();
  await h?.close();
  await git?.close();
});

interface Source { id: string; webhookSecret: string; webhookPath: string }
async function newSource(t: Tenant, body: Record<string, unknown>): Promise<Source> {
  const res = await h.api("POST", base(t), { key: t.key, body: { path: "/", pollIntervalSeconds: 0, ...body } });
  expect(res.status, res.text).toBe(201);
  expect(res.body.webhookSecret).toMatch(/^whsec_/);
  return res.body;
}

type Style = "github" | "gitea" | "gitlab";
const hmac = (secret: string, body: string) => crypto.createHmac("sha256", secret).update(body).digest("hex");
function signed(style: Style, secret: string, body: string): Record<string, string> {
  if (style === "github") return { "X-GitHub-Event": "push", "X-Hub-Signature-256": `sha256=${hmac(secret, body)}` };
  if (style === "gitea") return { "X-Gitea-Event": "push", "X-Gitea-Signature": hmac(secret, body) };
  return { "X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret };
}

/** POSTs exactly `body` (the signature covers these bytes), as a Git host does. */
async function deliver(source: Pick<Source, "webhookPath">, headers: Record<string, string>, body: string, contentType = "application/json") {
  const res = await fetch(`${h.url}${source.webhookPath}`, { method: "POST", headers: { "content-type": contentType, ...headers }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}
const push = (branch: string) => JSON.stringify({ ref: `refs/heads/${branch}`, after: "0".repeat(40), commits: [{ message: "ünïcödé ✓" }] });
const syncJobs = (sourceId: string) => h.services.prisma.job.count({ where: { type: CONFIG_SYNC_JOB, uniqueKey: `${CONFIG_SYNC_JOB}:${sourceId}` } });
const history = (sourceId: string) => h.services.prisma.configSourceSync.findMany({ where: { sourceId }, orderBy: { startedAt: "desc" } });

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("the webhook", () => {
  for (const style of ["github", "gitea", "gitlab"] as const) {
    it(`${style}: a forged or missing signature is 401 and nothing runs; another branch is 202 ignored; a good one queues a sync`, async () => {
      const { url } = await git.createRepo(`hook-${style}`, { "roles.yaml": role(`hook-${style}`, ["devices:read"]) });
      const source = await newSource(acme, { name: `hook-${style}`, url });
      const body = push("main");

      const forged = await deliver(source, signed(style, "whsec_not-the-secret", body), body);
      expect(forged.status, forged.text).toBe(401);
      expect(forged.body.message).toContain("signature");
      const missing = await deliver(source, { "X-GitHub-Event": "push" }, body);
      expect(missing.status).toBe(401);
      // the signature covers the body: the right secret over other bytes is refused too (not for GitLab: its token signs nothing)
      if (style !== "gitlab") expect((await deliver(source, signed(style, source.webhookSecret, body), push("main").replace("main", "main "))).status).toBe(401);
      expect(await syncJobs(source.id)).toBe(0);

      const other = await deliver(source, signed(style, source.webhookSecret, push("feature")), push("feature"));
      expect(other.status, other.text).toBe(202);
      expect(other.body).toMatchObject({ status: "ignored", style });
      expect(other.body.message).toContain("refs/heads/feature");
      expect(await syncJobs(source.id)).toBe(0);

      if (style === "github") { // the ping GitHub sends when the hook is added: verified, nothing to sync
        const ping = JSON.stringify({ zen: "Keep it logically awesome.", hook_id: 1 });
        const res = await deliver(source, { ...signed(style, source.webhookSecret, ping), "X-GitHub-Event": "ping" }, ping);
        expect(res.status, res.text).toBe(202);
        expect(res.body).toMatchObject({ status: "ignored", message: "not a push event: nothing to sync" });
        expect(await syncJobs(source.id)).toBe(0);
      }
      const good = await deliver(source, signed(style, source.webhookSecret, body), body);
      expect(good.status, good.text).toBe(202);
      expect(good.body).toMatchObject({ status: "queued", style });
      expect(await syncJobs(source.id)).toBe(1);
      await runner.drain();
      const [entry] = await history(source.id);
      expect(entry).toMatchObject({ status: "applied", triggerType: "webhook", triggeredBy: style, created: 1 });
      expect(await h.services.prisma.role.findFirst({ where: { organizationId: acme.org.id, name: `hook-${style}` } })).toMatchObject({ managedBy: `source:hook-${style}` });
      // audited with the source as actor
      expect(await h.services.prisma.auditEntry.findFirst({ where: { action: "config.sourceSync", entityId: source.id } }))
        .toMatchObject({ actorType: "system", actorId: `source:hook-${style}`, outcome: "success" });
    });
  }

  it("a push is applied within seconds by the running job runner; a redelivery of the same commit does nothing", async () => {
    const { url } = await git.createRepo("hook-live", { "roles.yaml": role("live-a", ["devices:read"]) });
    const source = await newSource(acme, { name: "hook-live", url });
    const live = new JobRunner(h.services, { ...configSourceJobs(h.services.config), schedules: [], concurrency: 1, pollIntervalMs: 200, workerId: "config-webhook-live" });
    live.start();
    try {
      const body = push("main");
      const sent = Date.now();
      expect((await deliver(source, signed("github", source.webhookSecret, body), body)).status).toBe(202);
      await waitFor("the role of the push", () => h.services.prisma.role.findFirst({ where: { organizationId: acme.org.id, name: "live-a", managedBy: "source:hook-live" } }));
      const elapsed = Date.now() - sent;
      console.log(`webhook to applied: ${elapsed} ms`);
      expect(elapsed).toBeLessThan(10_000);

      await git.commit("hook-live", { "more.yaml": role("live-b", ["devices:read"]) });
      const second = Date.now();
      expect((await deliver(source, signed("gitea", source.webhookSecret, body), body)).status).toBe(202);
      await waitFor("the second push", () => h.services.prisma.role.findFirst({ where: { organizationId: acme.org.id, name: "live-b" } }));
      console.log(`second push to applied: ${Date.now() - second} ms`);

      // the host delivers the same push again: nothing but lastSyncAt
      const before = await h.services.prisma.configSource.findUniqueOrThrow({ where: { id: source.id } });
      expect((await deliver(source, signed("gitlab", source.webhookSecret, body), body)).status).toBe(202);
      await waitFor("the redelivery's sync", async () => {
        const now = await h.services.prisma.configSource.findUniqueOrThrow({ where: { id: source.id } });
        return now.lastSyncAt! > before.lastSyncAt! && (await syncJobs(source.id)) > 0 &&
          (await h.services.prisma.job.count({ where: { type: CONFIG_SYNC_JOB, state: { in: ["pending", "running"] } } })) === 0;
      });
      expect((await history(source.id)).length).toBe(2);
    } finally {
      await live.stop();
    }
  });

  it("GitHub's form-encoded payload is verified on its raw bytes too", async () => {
    const { url } = await git.createRepo("hook-form", { "roles.yaml": role("form-a", ["devices:read"]) });
    const source = await newSource(acme, { name: "hook-form", url });
    const body = `payload=${encodeURIComponent(push("main"))}`;
    const res = await deliver(source, signed("github", source.webhookSecret, body), body, "application/x-www-form-urlencoded");
    expect(res.status, res.text).toBe(202);
    expect(res.body.status).toBe("queued");
  });

  it("another tenant's secret, a rotated-away secret and an unknown source are 401; nothing of this tenant changes", async () => {
    const { url } = await git.createRepo("hook-tenant", { "roles.yaml": role("tenant-a", ["devices:read"]) });
    const mine = await newSource(acme, { name: "hook-tenant", url });
    const theirs = await newSource(globex, { name: "theirs", url });
    const body = push("main");
    expect((await deliver(mine, signed("github", theirs.webhookSecret, body), body)).status).toBe(401);
    expect((await deliver({ webhookPath: `/api/v1/config-sources/${crypto.randomUUID()}/webhook` }, signed("github", mine.webhookSecret, body), body)).status).toBe(401);
    expect((await deliver({ webhookPath: "/api/v1/config-sources/not-a-uuid/webhook" }, signed("github", mine.webhookSecret, body), body)).status).toBe(401);
    expect(await syncJobs(mine.id)).toBe(0);

    const rotated = await h.api("POST", `${base(acme)}/${mine.id}/webhook-secret`, { key: acme.key });
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body.webhookSecret).not.toBe(mine.webhookSecret);
    expect((await deliver(mine, signed("github", mine.webhookSecret, body), body)).status).toBe(401);
    expect((await h.api("POST", `${base(globex)}/${mine.id}/webhook-secret`, { key: globex.key })).status).toBe(404);
    expect((await deliver(mine, signed("github", rotated.body.webhookSecret, body), body)).status).toBe(202);

    // their source, synced by their webhook, applies in their organization only
    expect((await deliver(theirs, signed("github", theirs.webhookSecret, body), body)).status).toBe(202);
    await runner.drain();
    expect(await h.services.prisma.role.count({ where: { organizationId: globex.org.id, name: "tenant-a", managedBy: "source:theirs" } })).toBe(1);
    expect(await h.services.prisma.role.count({ where: { organizationId: acme.org.id, name: "tenant-a", managedBy: "source:hook-tenant" } })).toBe(1);
    expect(h.logs.join("")).not.toContain(mine.webhookSecret);
  });
});

describe("polling", () => {
  it("enqueues the due sources only, set-based; a poll finding the same commit does nothing; a pushed commit is applied as the source", async () => {
    await h.services.prisma.job.deleteMany({ where: { type: CONFIG_SYNC_JOB } });
    // the webhook tests' sources are not polled (pollIntervalSeconds 0)
    const { url } = await git.createRepo("polled", { "roles.yaml": role("polled-a", ["devices:read"]) });
    const polled = await newSource(acme, { name: "polled", url, pollIntervalSeconds: 30 });
    const suspended = await h.createTenant("Suspended Polling");
    await newSource(suspended, { name: "suspended", url, pollIntervalSeconds: 30 });
    await h.services.prisma.organization.update({ where: { id: suspended.org.id }, data: { status: "suspended" } });

    expect(await enqueueDueSyncs(h.services.prisma)).toBe(1);
    expect(await enqueueDueSyncs(h.services.prisma)).toBe(0); // its job is pending: not twice
    await runner.drain();
    expect(await history(polled.id)).toMatchObject([{ status: "applied", triggerType: "schedule", created: 1 }]);
    expect(await enqueueDueSyncs(h.services.prisma)).toBe(0); // synced just now: not due

    const due = () => h.services.prisma.configSource.update({ where: { id: polled.id }, data: { lastSyncAt: new Date(Date.now() - 31_000) } });
    await due();
    expect(await enqueueDueSyncs(h.services.prisma)).toBe(1);
    await runner.drain();
    expect((await history(polled.id)).length).toBe(1); // the same commit: no entry, no apply
    const checked = await h.services.prisma.configSource.findUniqueOrThrow({ where: { id: polled.id } });
    expect(Date.now() - checked.lastSyncAt!.getTime()).toBeLessThan(10_000);

    const { commit } = await git.commit("polled", { "roles.yaml": role("polled-a", ["devices:read", "alerts:read"]) });
    await due();
    expect(await enqueueDueSyncs(h.services.prisma)).toBe(1);
    await runner.drain();
    expect((await history(polled.id))[0]).toMatchObject({ status: "applied", commit, updated: 1, triggerType: "schedule", triggeredBy: null });
    expect((await h.services.prisma.role.findFirstOrThrow({ where: { organizationId: acme.org.id, name: "polled-a" } })).permissions.sort()).toEqual(["alerts:read", "devices:read"]);
    expect(await h.services.prisma.auditEntry.findFirst({ where: { action: "config.update", entityType: "Role" }, orderBy: { createdAt: "desc" } }))
      .toMatchObject({ actorType: "system", actorId: "source:polled" });
    const listed = await h.api("GET", `${base(acme)}/${polled.id}/syncs`, { key: acme.key });
    expect(listed.body.items[0].trigger).toEqual({ type: "schedule", id: null, name: "poll" });
  });
});
