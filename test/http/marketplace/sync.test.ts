// Marketplace store syncs against real registries (Debian's docker-registry): the combined
// registry list (the tenant's OCI registries, then the global ones in priority order, the
// mandatory ones for every tenant), a repository found twice taken from the first registry,
// the per-product breakdown with skip reasons, the sync history, the live progress (JSON and
// Server-Sent Events), one run per store at a time, scheduled runs, credentials never shown.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { marketplaceJobs, STORE_SYNC_JOB, storeSyncJobKey } from "../../../src/modules/marketplace/jobs.js";
import { runStoreSync, STORE_SYNC_RUNNING } from "../../../src/modules/marketplace/sync.js";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startOciRegistry, type OciRegistryServer } from "../../support/oci-registry.js";
import { peersAvailable } from "../../support/peers.js";
import { appYaml } from "../registries-git/support.js";

let h: Harness;
let open: OciRegistryServer;
let locked: OciRegistryServer;
let acme: Tenant;
let globex: Tenant;
let runner: JobRunner;
let vendor: { id: string };
let mirror: { id: string };
let optional: { id: string };
let tenantRegistry: { id: string };
const PASSWORD = "vendor-pull-secret-9120";
const SCHEDULE = "schedule.marketplace-store.due-syncs";

const RECORD_FIELDS = [
  "id", "storeId", "scope", "organizationId", "status", "repositoriesFound", "applicationsFound", "applicationsImported", "applicationsUpdated",
  "errors", "syncDurationMs", "perRepository", "products", "skippedRepositories", "triggeredBy", "createdAt",
];

type Product = { registryId: string; registryName: string; repository: string; tag: string; outcome: string; reason?: string; application?: string; version?: string };

beforeAll(async () => {
  [h, open, locked] = await Promise.all([createHarness(), startOciRegistry(), startOciRegistry({ basic: { username: "vendor", password: PASSWORD } })]);
  acme = await h.createTenant("Acme Market");
  globex = await h.createTenant("Globex Market");
  await open.pushPackage("edge/vision", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision" }));
  await open.pushImage("edge/vision", "latest");
  await open.pushPackage("edge/dup", "1.0.0", appYaml("vision", "1.0.0", { name: "Vision elsewhere" }));
  await open.pushPackage("edge/broken", "0.1.0", "apiVersion: [unclosed\n");
  await open.pushPackage("vendor/tools", "5.0.0", appYaml("tools", "5.0.0"));
  await open.pushPackage("extra/optional", "1.0.0", appYaml("optional-app", "1.0.0"));
  await locked.pushPackage("vendor/tools", "1.0.0", appYaml("tools", "1.0.0"));
  const admin = async (body: Record<string, unknown>) => {
    const res = await h.api("POST", "/api/v1/global-registries/oci", { key: ADMIN_KEY, body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  // Created before the one it loses to: the priority decides, not the age.
  mirror = await admin({ name: "Low mirror", url: open.url, repositories: ["vendor/tools"], mandatory: true, priority: 50 });
  vendor = await admin({ name: "Vendor", url: locked.url, authType: "BASIC", credential: `vendor:${PASSWORD}`, repositories: ["vendor/tools"], mandatory: true, priority: 1 });
  optional = await admin({ name: "Optional", url: open.url, repositories: ["extra/optional"], priority: 10 });
  const own = await h.api("POST", "/api/v1/registries/oci", { key: acme.key, body: { name: "Acme edge", url: open.url, repositories: ["edge/vision", "edge/dup", "edge/broken"] } });
  expect(own.status, own.text).toBe(201);
  tenantRegistry = own.body;
  runner = new JobRunner(h.services, { ...marketplaceJobs(), concurrency: 1, workerId: "marketplace-test" });
}, 60_000);
afterAll(async () => {
  await Promise.all([open?.close(), locked?.close()]);
  await h?.close();
});

const api = (method: string, path: string, body?: unknown, tenant: Tenant = acme) => h.api(method, `/api/v1/marketplace-store${path}`, { key: tenant.key, body });
const history = async (tenant: Tenant = acme, query = "?limit=50&offset=0") => {
  const res = await api("GET", `/sync-history${query}`, undefined, tenant);
  expect(res.status, res.text).toBe(200);
  return res.body as { data: Array<Record<string, any>>; total: number; hasMore: boolean; nextCursor?: string };
};
const apps = async (tenant: Tenant) =>
  (await h.api("GET", "/api/v1/applications?limit=200", { key: tenant.key })).body.items as Array<{ key: string; latestVersion: string; source: Record<string, string> }>;
/** Runs what is due, including jobs queued with a delay (the scheduler's jitter). */
async function runJobs() {
  await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "state" = 'pending'`;
  return runner.drain();
}
async function syncNow(tenant: Tenant = acme) {
  const res = await api("POST", "/sync", undefined, tenant);
  expect(res.status, res.text).toBe(202);
  await runJobs();
  return (await history(tenant)).data[0]!;
}
const byTag = (products: Product[]) => Object.fromEntries(products.map((p) => [`${p.repository}:${p.tag}`, p]));
const texts: string[] = [];

/** The progress stream, parsed: every `event: progress` snapshot in arrival order. */
async function openStream(tenant: Tenant) {
  const abort = new AbortController();
  const res = await fetch(`${h.url}/api/v1/marketplace-store/sync/progress`, { headers: { "x-api-key": tenant.key, accept: "text/event-stream" }, signal: abort.signal });
  const events: Array<Record<string, any>> = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  void (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const chunk = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = chunk.split("\n").find((line) => line.startsWith("data: "));
          if (data && chunk.includes("event: progress")) events.push(JSON.parse(data.slice(6)));
        }
      }
    } catch {
      /* aborted */
    }
  })();
  const until = async (predicate: (e: Record<string, any>) => boolean) => {
    for (let waited = 0; waited < 10_000; waited += 20) {
      const found = events.find(predicate);
      if (found) return found;
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error(`no such progress event; got ${JSON.stringify(events)}`);
  };
  return { res, events, until, close: () => abort.abort() };
}

describe.skipIf(!peersAvailable("docker-registry", "htpasswd"))("marketplace store sync", () => {
  it("queues a manual sync (a second request gets the same job) and imports from the tenant's and the mandatory global registries", async () => {
    const put = await api("PUT", "", {});
    expect(put.status, put.text).toBe(201);
    // The combined list: own registries first, then the global ones by priority; the optional one is not chosen.
    expect(put.body.registries).toEqual([
      { id: tenantRegistry.id, kind: "tenant", name: "Acme edge", mandatory: false, priority: null },
      { id: vendor.id, kind: "global", name: "Vendor", mandatory: true, priority: 1 },
      { id: mirror.id, kind: "global", name: "Low mirror", mandatory: true, priority: 50 },
    ]);
    const queued = await api("POST", "/sync");
    expect(queued.status, queued.text).toBe(202);
    expect(queued.body).toMatchObject({ storeId: put.body.id, state: "queued", coalesced: false, progress: { state: "queued", triggeredBy: acme.user.id } });
    const again = await api("POST", "/sync");
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ jobId: queued.body.jobId, state: "queued", coalesced: true });
    expect(await h.services.prisma.job.count({ where: { uniqueKey: storeSyncJobKey(put.body.id) } })).toBe(1);
    expect((await api("GET", "")).body.syncing).toBe(true);
    expect((await h.api("GET", "/api/v1/marketplace-store/sync/progress", { key: acme.key })).body).toMatchObject({ state: "queued", jobId: queued.body.jobId });

    expect(await runJobs()).toBe(1);
    const page = await history();
    expect(page.total).toBe(1);
    const record = page.data[0]!;
    expect(Object.keys(record).sort()).toEqual([...RECORD_FIELDS].sort());
    expect(record).toMatchObject({
      storeId: put.body.id, scope: "tenant", organizationId: acme.org.id, status: "success", triggeredBy: acme.user.id,
      repositoriesFound: 4, applicationsFound: 3, applicationsImported: 2, applicationsUpdated: 0,
    });
    expect(record.perRepository.map((r: { repository: string; registryName: string; registryKind: string }) => [r.repository, r.registryName, r.registryKind])).toEqual([
      ["edge/vision", "Acme edge", "tenant"], ["edge/dup", "Acme edge", "tenant"], ["edge/broken", "Acme edge", "tenant"], ["vendor/tools", "Vendor", "global"],
    ]);
    expect(record.perRepository[0]).toMatchObject({ tagCount: 2, found: 1, imported: 1, updated: 0, errors: [] });
    expect(record.skippedRepositories).toEqual([
      { registryId: mirror.id, registryName: "Low mirror", repository: "vendor/tools", reason: 'already taken from the earlier registry "Vendor"' },
    ]);
    const products = byTag(record.products);
    expect(Object.keys(products).sort()).toEqual(["edge/broken:0.1.0", "edge/dup:1.0.0", "edge/vision:1.0.0", "edge/vision:latest", "vendor/tools:1.0.0"]);
    expect(products["edge/vision:1.0.0"]).toEqual({
      registryId: tenantRegistry.id, registryName: "Acme edge", repository: "edge/vision", tag: "1.0.0", outcome: "imported", application: "vision", version: "1.0.0",
    });
    expect(products["vendor/tools:1.0.0"]).toMatchObject({ registryId: vendor.id, registryName: "Vendor", outcome: "imported", application: "tools" });
    expect(products["edge/vision:latest"]).toMatchObject({ outcome: "skipped", reason: expect.stringMatching(/not an application package: artifactType application\/vnd.oci.image.config.v1\+json/) });
    expect(products["edge/dup:1.0.0"]).toMatchObject({ outcome: "skipped", reason: 'application "vision" version 1.0.0 is already provided by edge/vision:1.0.0' });
    expect(products["edge/broken:0.1.0"]).toMatchObject({ outcome: "skipped", reason: expect.any(String) });

    // The catalog: tools 1.0.0 from the priority-1 registry, not 5.0.0 from the mirror.
    const catalog = await apps(acme);
    expect(catalog.find((a) => a.key === "tools")).toMatchObject({ latestVersion: "1.0.0", source: { type: "oci", registryId: vendor.id, path: "vendor/tools:1.0.0" } });
    expect(catalog.find((a) => a.key === "vision")).toMatchObject({ latestVersion: "1.0.0", source: { registryId: tenantRegistry.id, registryName: "Acme edge" } });
    const store = await api("GET", "");
    expect(store.body).toMatchObject({ syncing: false, lastSyncError: null });
    expect(store.body.lastSyncAt).toBeTruthy();
    const progress = await h.api("GET", "/api/v1/marketplace-store/sync/progress", { key: acme.key });
    expect(progress.body).toMatchObject({ state: "succeeded", syncRecordId: record.id, repositoriesDone: 4, repositoriesTotal: 4, applicationsImported: 2, currentRepository: null });
    const audit = await h.services.prisma.auditEntry.findMany({ where: { organizationId: acme.org.id, entityId: put.body.id }, orderBy: { createdAt: "asc" } });
    expect(audit.map((a) => [a.action, a.userId])).toEqual(expect.arrayContaining([
      ["marketplaceStore.sync.request", acme.user.id], ["marketplace.sync", acme.user.id],
    ]));
    texts.push(put.text, queued.text, store.text, progress.text, JSON.stringify(page));
  });

  it("gives every tenant the mandatory global registries, and nothing of another tenant", async () => {
    await api("PUT", "", {}, globex);
    const record = await syncNow(globex);
    expect(record).toMatchObject({ organizationId: globex.org.id, status: "success", repositoriesFound: 1, applicationsImported: 1, triggeredBy: globex.user.id });
    const catalog = await apps(globex);
    expect(catalog.map((a) => a.key)).toEqual(["tools"]);
    expect((await history(globex)).total).toBe(1);
    expect((await history(acme)).total).toBe(1);
  });

  it("includes chosen non-mandatory global registries in priority order, and discovers a global registry's repositories from its catalog", async () => {
    const put = await api("PUT", "", { globalRegistryIds: [optional.id] });
    expect(put.body.registries.map((r: { name: string }) => r.name)).toEqual(["Acme edge", "Vendor", "Optional", "Low mirror"]);
    const record = await syncNow();
    expect(record).toMatchObject({ status: "success", applicationsImported: 1, applicationsUpdated: 0 });
    const products = byTag(record.products);
    expect(products["extra/optional:1.0.0"]).toMatchObject({ registryName: "Optional", outcome: "imported" });
    expect(products["edge/vision:1.0.0"]).toMatchObject({ outcome: "unchanged" });
    expect((await apps(acme)).map((a) => a.key).sort()).toEqual(["optional-app", "tools", "vision"]);

    // A global registry that lists no repository: its catalog (GET /v2/_catalog) names them.
    const discovered = await h.api("POST", "/api/v1/global-registries/oci", {
      key: ADMIN_KEY, body: { name: "Discovered", url: locked.url, authType: "BASIC", credential: `vendor:${PASSWORD}`, priority: 20 },
    });
    expect(discovered.status).toBe(201);
    // A registry that refuses the credential is an error of the run; the others are still read.
    const refusing = await h.api("POST", "/api/v1/global-registries/oci", {
      key: ADMIN_KEY, body: { name: "Refusing", url: locked.url, authType: "BASIC", credential: "vendor:wrong-secret-4417", repositories: ["vendor/other"], priority: 30 },
    });
    expect(refusing.status).toBe(201);
    await api("PUT", "", { includeAllGlobalRegistries: true });
    const all = await syncNow();
    expect(all.status).toBe("success");
    expect(all.errors).toEqual(["Refusing: vendor/other: tags: the registry refused the credential (401)"]);
    expect(all.perRepository.find((r: { repository: string }) => r.repository === "vendor/other")).toMatchObject({
      registryName: "Refusing", tagCount: 0, errors: ["Refusing: vendor/other: tags: the registry refused the credential (401)"],
    });
    expect(all.skippedRepositories).toEqual([
      { registryId: discovered.body.id, registryName: "Discovered", repository: "vendor/tools", reason: 'already taken from the earlier registry "Vendor"' },
      { registryId: mirror.id, registryName: "Low mirror", repository: "vendor/tools", reason: 'already taken from the earlier registry "Vendor"' },
    ]);
    await h.api("DELETE", `/api/v1/global-registries/oci/${discovered.body.id}`, { key: ADMIN_KEY });
    await h.api("DELETE", `/api/v1/global-registries/oci/${refusing.body.id}`, { key: ADMIN_KEY });
    texts.push(put.text, JSON.stringify(all));
  });

  it("pages the history newest first with total, hasMore and nextCursor", async () => {
    const all = await history();
    expect(all.total).toBe(3);
    expect(all.hasMore).toBe(false);
    expect(all.nextCursor).toBeUndefined();
    const times = all.data.map((r) => r.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    const first = await history(acme, "?limit=1&offset=0");
    expect(first).toMatchObject({ total: 3, hasMore: true, nextCursor: "1" });
    expect(first.data.map((r) => r.id)).toEqual([all.data[0]!.id]);
    const next = await history(acme, `?limit=1&offset=${first.nextCursor}`);
    expect(next).toMatchObject({ total: 3, hasMore: true, nextCursor: "2" });
    expect(next.data[0]!.id).toBe(all.data[1]!.id);
    const last = await history(acme, "?limit=5&offset=2");
    expect(last.hasMore).toBe(false);
    expect("nextCursor" in last).toBe(false);
    expect(last.data.map((r) => r.id)).toEqual([all.data[2]!.id]);
    expect((await history(acme, "?limit=5&offset=9")).data).toEqual([]);
  });

  it("streams the live progress as Server-Sent Events", async () => {
    const stream = await openStream(acme);
    try {
      expect(stream.res.status).toBe(200);
      expect(stream.res.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const before = await stream.until(() => true);
      expect(before.state).toBe("succeeded");
      await api("POST", "/sync");
      await runJobs();
      const done = await stream.until((e) => e.state === "succeeded" && e.syncRecordId !== before.syncRecordId);
      const states = stream.events.map((e) => e.state);
      expect(states).toContain("queued");
      expect(states).toContain("running");
      const reading = stream.events.filter((e) => e.state === "running" && e.currentRepository !== null);
      expect(reading.map((e) => e.currentRepository)).toEqual(expect.arrayContaining(["edge/vision", "vendor/tools", "extra/optional"]));
      expect(reading.some((e) => e.currentRegistry === "Vendor" && e.currentRepository === "vendor/tools")).toBe(true);
      expect(Math.max(...stream.events.map((e) => e.tagsRead))).toBe(done.tagsRead);
      expect(done.tagsRead).toBeGreaterThan(0);
      expect(done.syncRecordId).toBe((await history()).data[0]!.id);
      texts.push(JSON.stringify(stream.events));
    } finally {
      stream.close();
    }
  });

  it("never runs two syncs of a store at once", async () => {
    const store = (await api("GET", "")).body;
    const queued = await api("POST", "/sync");
    // A worker has taken the job: a new request is answered with the running one.
    await h.services.prisma.job.update({ where: { id: queued.body.jobId }, data: { state: "running" } });
    const running = await api("POST", "/sync");
    expect(running.status).toBe(202);
    expect(running.body).toMatchObject({ jobId: queued.body.jobId, state: "running", coalesced: true });
    await h.services.prisma.job.update({ where: { id: queued.body.jobId }, data: { state: "pending" } });
    // A run of the store in progress elsewhere (its lease taken): a second run is refused.
    await h.services.prisma.marketplaceStore.update({ where: { id: store.id }, data: { syncLeaseId: crypto.randomUUID(), syncLeaseUntil: new Date(Date.now() + 60_000) } });
    await expect(runStoreSync(h.services, acme.org.id, { triggeredBy: null, jobId: null })).rejects.toThrow(STORE_SYNC_RUNNING);
    const total = (await history()).total;
    await runJobs(); // the queued job meets the lease and ends without a run
    expect((await history()).total).toBe(total);
    await h.services.prisma.marketplaceStore.update({ where: { id: store.id }, data: { syncLeaseId: null, syncLeaseUntil: null } });
  });

  it("syncs on schedule as the scheduler, only enabled stores whose interval elapsed", async () => {
    await api("PUT", "", { syncIntervalMinutes: 30, globalRegistryIds: [optional.id] });
    await api("PUT", "", { syncIntervalMinutes: 30, enabled: false }, globex);
    await h.services.prisma.marketplaceStore.updateMany({ data: { lastSyncAttemptAt: new Date("2020-01-01") } });
    const acmeStore = (await api("GET", "")).body;
    const globexStore = (await api("GET", "", undefined, globex)).body;
    await runner.enqueue({ type: SCHEDULE, uniqueKey: SCHEDULE, maxAttempts: 1 });
    await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "type" = ${SCHEDULE}`;
    await runner.runOnce();
    const jobs = await h.services.prisma.job.findMany({ where: { type: STORE_SYNC_JOB, state: "pending" } });
    expect(jobs.map((j) => j.uniqueKey)).toEqual([storeSyncJobKey(acmeStore.id)]);
    expect(jobs[0]!.payload).toMatchObject({ triggeredBy: "scheduler", storeId: acmeStore.id });
    expect(jobs.some((j) => j.uniqueKey === storeSyncJobKey(globexStore.id))).toBe(false);
    await runJobs();
    expect((await history()).data[0]).toMatchObject({ status: "success", triggeredBy: "scheduler" });
    const audit = await h.services.prisma.auditEntry.findFirst({ where: { entityId: acmeStore.id, action: "marketplace.sync" }, orderBy: { createdAt: "desc" } });
    expect(audit).toMatchObject({ actorType: "system", changes: expect.objectContaining({ trigger: "scheduler" }) });
  });

  it("skips a queued sync when the store was disabled meanwhile", async () => {
    await api("POST", "/sync");
    const total = (await history()).total;
    expect((await api("POST", "/disable")).body.enabled).toBe(false);
    await runJobs();
    expect((await history()).total).toBe(total);
    expect((await h.api("GET", "/api/v1/marketplace-store/sync/progress", { key: acme.key })).body.state).toBe("idle");
    expect((await api("POST", "/sync")).status).toBe(409);
    await api("POST", "/enable");
  });

  it("records a failed run and retries when the catalog cannot be written (Application service unavailable)", async () => {
    await open.pushPackage("edge/vision", "1.2.0", appYaml("vision", "1.2.0", { name: "Vision" }));
    const db = h.services.prisma;
    await db.$executeRawUnsafe(`CREATE FUNCTION marketplace_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'catalog down'; END $$`);
    await db.$executeRawUnsafe(`CREATE TRIGGER marketplace_test_refuse BEFORE INSERT ON "ApplicationVersion" FOR EACH ROW EXECUTE FUNCTION marketplace_test_refuse()`);
    try {
      const queued = await api("POST", "/sync");
      await runner.drain();
      const record = (await history()).data[0]!;
      expect(record).toMatchObject({ status: "failed", errors: ["the application catalog could not be written; nothing was imported"], applicationsImported: 0 });
      expect((await api("GET", "")).body.lastSyncError).toBe("the application catalog could not be written; nothing was imported");
      expect((await h.api("GET", "/api/v1/marketplace-store/sync/progress", { key: acme.key })).body).toMatchObject({ state: "failed", syncRecordId: record.id });
      const job = await db.job.findUniqueOrThrow({ where: { id: queued.body.jobId } });
      expect(job).toMatchObject({ state: "pending", lastError: "Application service unavailable" });
      expect((await apps(acme)).find((a) => a.key === "vision")!.latestVersion).toBe("1.0.0");
    } finally {
      await db.$executeRawUnsafe(`DROP TRIGGER marketplace_test_refuse ON "ApplicationVersion"`);
      await db.$executeRawUnsafe(`DROP FUNCTION marketplace_test_refuse()`);
    }
    // The retry imports it.
    await runJobs();
    expect((await history()).data[0]).toMatchObject({ status: "success", applicationsImported: 1 });
    expect((await apps(acme)).find((a) => a.key === "vision")!.latestVersion).toBe("1.2.0");
  });

  it("never shows or logs a registry credential", async () => {
    texts.push((await api("GET", "")).text, JSON.stringify(await history()), JSON.stringify(await history(globex)));
    const all = [...texts, h.logs.join("\n")].join("\n");
    expect(all).not.toContain(PASSWORD);
    expect(all).not.toContain("wrong-secret-4417");
    expect(all).not.toContain(Buffer.from(`vendor:${PASSWORD}`).toString("base64"));
  });
});
