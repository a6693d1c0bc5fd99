// kill -9 of a real server process (the service's build as a child process) in the middle of work,
// then a restart: nothing is half-written and the work resumes.
//
// * Telemetry batches (PGlite on disk and PostgreSQL): a 1,000-snapshot batch is one
//   statement; a process killed while batches are in flight leaves each batch either wholly
//   stored or not at all, and the restarted process (PGlite: the same data directory after
//   crash recovery) accepts the device's resend. The rollups the same statements merge hold
//   exactly the stored snapshots afterwards.
// * A Git sync job (PostgreSQL, and PGlite on disk): the process holding the job dies while
//   fetching (a proxy holds the pack); nothing of the registry's catalog is written. A
//   restarted process takes the job over when its lock expires, and the registry syncs once
//   the dead sync's lease has expired too (both expiries are moved forward with SQL instead of
//   waited for: 60 s and 2 x GIT_SYNC_TIMEOUT_SECONDS + 60 s). On PGlite the test opens the
//   data directory itself between the processes (one process at a time).
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { enqueueJob } from "../../../src/jobs/queue.js";
import { openDatabase, type Database } from "../../../src/db/client.js";
import { GIT_SYNC_JOB, gitSyncJobKey } from "../../../src/modules/registries/git/jobs.js";
import { enroll, ensureCa, createEnrollmentToken, type EnrolledDevice } from "../agent/fleet-support.js";
import { appYaml } from "../registries-git/support.js";
import { gatedProxy, type GatedProxy } from "../../support/gated-proxy.js";
import { databaseUrlOf, eventually, startServerProcess, viaProcess, type ServerProcess } from "../scale-out/processes.js";
import { migratedDataDir } from "../../support/server-process.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
/** The pack fetch of a Git sync. */
const GIT_FETCH = (req: { method?: string; url?: string }) => req.method === "POST" && Boolean(req.url?.includes("git-upload-pack"));
const BATCH = 1000;

/** `BATCH` snapshots of one device, one second apart, all within the given minute window. */
function batch(startMs: number) {
  return Array.from({ length: BATCH }, (_, i) => ({
    timestamp: new Date(startMs + i * 1000).toISOString(),
    cpuUsagePercent: (i % 100) + 0.5,
    memoryUsedBytes: 1_000_000 + i,
    memoryTotalBytes: 8_000_000,
    containersRunning: 2,
  }));
}

/** How many snapshots of the device lie in [from, from + BATCH s). */
async function storedIn(p: ServerProcess, key: string, deviceId: string, fromMs: number): Promise<number> {
  const from = new Date(fromMs).toISOString();
  const to = new Date(fromMs + BATCH * 1000 - 1).toISOString();
  const res = await p.api("GET", `/api/v1/devices/${deviceId}/telemetry/raw?metric=cpuUsagePercent&from=${from}&to=${to}&limit=1`, { key });
  expect(res.status, res.text).toBe(200);
  return res.body.total as number;
}

/**
 * Sends six batches to `p`, 15 ms apart, and kills it with SIGKILL as soon as `killAfterAnswers`
 * of them were answered (the others are then in flight or queued); answers each batch's start.
 */
async function sendBatchesAndKill(p: ServerProcess, device: EnrolledDevice, firstMs: number, killAfterAnswers: number): Promise<number[]> {
  const starts = Array.from({ length: 6 }, (_, i) => firstMs + i * BATCH * 1000);
  const token = await device.token();
  let answered = 0;
  let killed: Promise<void> | null = null;
  const sending = starts.map((start, i) =>
    new Promise((r) => setTimeout(r, i * 15))
      .then(() => p.api("POST", "/api/v1/agent/telemetry", { key: null, token, body: { snapshots: batch(start) } }))
      .then((res) => {
        expect(res.status, res.text).toBe(200);
        if (++answered >= killAfterAnswers) killed ??= p.kill();
      }, () => undefined), // cut off by the kill
  );
  await Promise.all(sending);
  await (killed ?? p.kill());
  return starts;
}

async function telemetryCrashScenario(start: () => Promise<ServerProcess>, key: string) {
  let p = await start();
  const h = viaProcess({} as Harness, p);
  await ensureCa(h, key);
  const token = await createEnrollmentToken(h, key);
  const device = await enroll(h, token.token);

  // Two crashes at different moments; every batch is all or nothing each time.
  const base = Date.now() - 7 * 24 * 3600_000;
  const allStarts: number[] = [];
  for (const [round, killAfterAnswers] of [[0, 1], [1, 2]] as const) {
    const starts = await sendBatchesAndKill(p, device, base + round * 10 * BATCH * 1000, killAfterAnswers);
    allStarts.push(...starts);
    p = await start();
    const counts = await Promise.all(starts.map((s) => storedIn(p, key, device.deviceId, s)));
    for (const count of counts) expect([0, BATCH], `stored snapshots of one batch: ${counts.join(", ")}`).toContain(count);
  }

  // The device resends what was lost; the restarted process takes it.
  const ingest = async (s: number) => p.api("POST", "/api/v1/agent/telemetry", { key: null, token: await device.token(), body: { snapshots: batch(s) } });
  for (const s of allStarts) {
    if ((await storedIn(p, key, device.deviceId, s)) === 0) {
      const res = await ingest(s);
      expect(res.status, res.text).toBe(200);
    }
  }
  for (const s of allStarts) expect(await storedIn(p, key, device.deviceId, s)).toBe(BATCH);
  // The rollups, merged by the same statements, hold exactly the stored snapshots: op 11 over
  // whole hours reads only hourly rollups, and they count every snapshot once.
  const hour = 3600_000;
  const from = Math.floor(Math.min(...allStarts) / hour) * hour;
  const to = Math.ceil((Math.max(...allStarts) + BATCH * 1000) / hour) * hour - 1;
  const hourly = await p.api("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&interval=1h`, { key });
  expect(hourly.status, hourly.text).toBe(200);
  expect(hourly.body.sources.map((x: { source: string }) => x.source)).toEqual(["rollup-1h"]);
  expect(hourly.body.total).toBe(allStarts.length * BATCH);
  // The newest snapshot the service shows is the newest one stored.
  const latest = await p.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/latest`, { key });
  expect(latest.status, latest.text).toBe(200);
  expect(Date.parse(latest.body.timestamp)).toBe(Math.max(...allStarts) + (BATCH - 1) * 1000);
  expect(await p.stop()).toBe(0);
}

describe("kill -9 during telemetry batches", () => {
  it.skipIf(ON_POSTGRES)("PGlite on disk (the run without DATABASE_URL): every batch is all or nothing after crash recovery, and the resend is accepted", async () => {
    // already migrated (the first start is not what is tested): PGlite's initdb and the migrations cost ~10 s of CPU
    const dataDir = migratedDataDir("fleet-fault-pglite-");
    try {
      const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: ADMIN_KEY, BOOTSTRAP_ADMIN_PASSWORD: "fault-tests-admin-password", JOBS_ENABLED: "false" };
      let n = 0;
      await telemetryCrashScenario(() => startServerProcess(`pglite-${n++}`, env, ADMIN_KEY), ADMIN_KEY);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }, 240_000);

  describe.skipIf(!ON_POSTGRES)("PostgreSQL (skipped without DATABASE_URL)", () => {
    let h: Harness;
    beforeAll(async () => {
      h = await createHarness();
    });
    afterAll(() => h?.close());

    it("every batch is all or nothing, and the resend is accepted by the restarted process", async () => {
      const tenant = await h.createTenant("Fault Telemetry");
      let n = 0;
      const env = { DATABASE_URL: databaseUrlOf(h), JOBS_ENABLED: "false" };
      await telemetryCrashScenario(() => startServerProcess(`pg-${n++}`, env, tenant.key), tenant.key);
    }, 240_000);
  });
});


describe.skipIf(!ON_POSTGRES)("kill -9 during a Git sync job (PostgreSQL; skipped without DATABASE_URL)", () => {
  let h: Harness;
  let tenant: Tenant;
  let git: GitServer;
  let proxy: GatedProxy;

  beforeAll(async () => {
    h = await createHarness();
    tenant = await h.createTenant("Fault Git");
    git = await startGitServer();
    proxy = await gatedProxy(git.url, GIT_FETCH);
  });
  afterAll(async () => {
    await proxy?.close();
    await git?.close();
    await h?.close();
  });

  it("nothing of the catalog is written; a restarted process takes the job over and the registry syncs once", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 5; i++) files[`apps/a${i}/app.yaml`] = appYaml(`fault-app-${i}`, "1.0.0");
    const repo = await git.createRepo("fault-apps", files);
    const env = { DATABASE_URL: databaseUrlOf(h), OUTBOUND_ALLOW_PRIVATE_NETWORKS: "true" };
    const first = await startServerProcess("git-first", env, tenant.key);
    const created = await first.api("POST", "/api/v1/registries/git", {
      body: { name: "fault registry", url: repo.url.replace(git.url, proxy.url), syncIntervalMinutes: 1 },
    });
    expect(created.status, created.text).toBe(201);
    const registryId = created.body.id as string;
    const jobId = await enqueueJob(h.services.prisma, {
      type: GIT_SYNC_JOB, payload: { organizationId: tenant.org.id, registryId }, uniqueKey: gitSyncJobKey(registryId), maxAttempts: 3,
    });
    expect(jobId).not.toBeNull();

    // The first process claims the job and is fetching (the proxy holds the pack): kill -9.
    await eventually(async () => proxy.heldFetches > 0, 30_000, "the fetch to reach the Git server");
    const running = await h.services.prisma.job.findUniqueOrThrow({ where: { id: jobId! } });
    expect(running).toMatchObject({ state: "running", attempts: 1 });
    await first.kill();

    // Nothing half-written: no application, no sync recorded, the job still "running" under a
    // lock nobody renews, the registry's lease still held by the dead sync.
    const registry = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registryId } });
    expect(registry).toMatchObject({ lastSyncAt: null, lastSyncCommit: null, lastSyncAttemptAt: null });
    expect(registry.syncLeaseUntil).not.toBeNull();
    expect(await h.services.prisma.application.count({ where: { organizationId: tenant.org.id } })).toBe(0);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "registries.git.sync", entityId: registryId } })).toBe(0);

    // Restart (the Git server answers again). Time passes: the job's lock expires (60 s).
    proxy.open();
    const second = await startServerProcess("git-second", env, tenant.key);
    try {
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "id" = ${jobId}::uuid`;
      // The second process takes the job over (a second attempt). While the dead sync's lease
      // runs, the registry is busy: the job ends without syncing and without writing anything.
      const takenOver = await eventually(async () => {
        const job = await h.services.prisma.job.findUniqueOrThrow({ where: { id: jobId! } });
        return job.state !== "running" && job.state !== "pending" && job;
      }, 30_000, "the job to be taken over");
      expect(takenOver).toMatchObject({ state: "succeeded", attempts: 2 });
      expect(await h.services.prisma.application.count({ where: { organizationId: tenant.org.id } })).toBe(0);

      // Later the lease expires too (2 x GIT_SYNC_TIMEOUT_SECONDS + 60 s), and the next run of the
      // due-syncs schedule (every minute; brought forward here) enqueues the sync again: the
      // registry was never synced, so it is due.
      await h.services.prisma.$executeRaw`UPDATE "GitRegistry" SET "syncLeaseUntil" = now() - interval '1 second' WHERE "id" = ${registryId}::uuid`;
      // The dead process may have been running the schedule itself: its lock expires too.
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "state" = 'running' AND "type" = 'schedule.git-registry.due-syncs'`;
      await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = now() WHERE "type" = 'schedule.git-registry.due-syncs' AND "state" = 'pending'`;
      const synced = await eventually(async () => {
        const r = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registryId } });
        // the lease is released just after the sync committed: wait for both
        return r.lastSyncAt !== null && r.syncLeaseUntil === null && r;
      }, 90_000, "the registry to sync after the restart");
      expect(synced.lastSyncCommit).toBe(repo.commit);
      expect(synced.syncLeaseUntil).toBeNull();
      const apps = await second.api("GET", "/api/v1/applications");
      expect(apps.body.items.map((a: { key: string }) => a.key).sort()).toEqual([0, 1, 2, 3, 4].map((i) => `fault-app-${i}`));
      // Exactly one sync wrote the catalog.
      expect(await h.services.prisma.auditEntry.count({ where: { action: "registries.git.sync", entityId: registryId, outcome: "success" } })).toBe(1);
      expect(await second.stop()).toBe(0);
    } finally {
      await second.kill();
    }
  }, 180_000);
});


describe("kill -9 during a Git sync job on the embedded database (PGlite on disk; the run without DATABASE_URL)", () => {
  let git: GitServer;
  let proxy: GatedProxy;
  let dataDir: string;

  beforeAll(async () => {
    git = await startGitServer();
    proxy = await gatedProxy(git.url, GIT_FETCH);
    dataDir = ON_POSTGRES ? "" : migratedDataDir("fleet-fault-git-pglite-");
  });
  afterAll(async () => {
    await proxy?.close();
    await git?.close();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** The data directory opened by the test itself: only while no server process has it. */
  async function withDatabase<T>(fn: (db: Database) => Promise<T>): Promise<T> {
    const db = await openDatabase({ DATA_DIR: dataDir, DATABASE_URL: undefined, DATABASE_POOL_SIZE: 1 });
    try {
      return await fn(db);
    } finally {
      await db.close();
    }
  }

  it.skipIf(ON_POSTGRES)("nothing of the catalog is written; the restarted process on the same data directory takes the job over and syncs once", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 3; i++) files[`apps/p${i}/app.yaml`] = appYaml(`pglite-fault-app-${i}`, "1.0.0");
    const repo = await git.createRepo("pglite-fault-apps", files);
    const env = { DATA_DIR: dataDir, BOOTSTRAP_API_KEY: ADMIN_KEY, BOOTSTRAP_ADMIN_PASSWORD: "fault-tests-admin-password" };

    // First start: bootstrap and the registry; then stopped cleanly to enqueue the sync job.
    const setup = await startServerProcess("pglite-setup", { ...env, JOBS_ENABLED: "false" }, ADMIN_KEY);
    const created = await setup.api("POST", "/api/v1/registries/git", {
      body: { name: "pglite fault registry", url: repo.url.replace(git.url, proxy.url), syncIntervalMinutes: 1 },
    });
    expect(created.status, created.text).toBe(201);
    const registryId = created.body.id as string;
    expect(await setup.stop()).toBe(0);
    const { jobId, organizationId } = await withDatabase(async (db) => {
      const registry = await db.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registryId } });
      const id = await enqueueJob(db.prisma, {
        type: GIT_SYNC_JOB, payload: { organizationId: registry.organizationId, registryId }, uniqueKey: gitSyncJobKey(registryId), maxAttempts: 3,
      });
      return { jobId: id!, organizationId: registry.organizationId };
    });

    // The process claims the job and is fetching (the proxy holds the pack): kill -9.
    const first = await startServerProcess("pglite-first", env, ADMIN_KEY);
    await eventually(async () => proxy.heldFetches > 0, 30_000, "the fetch to reach the Git server");
    await first.kill();

    // The data directory opens after the crash, with nothing half-written.
    await withDatabase(async (db) => {
      const job = await db.prisma.job.findUniqueOrThrow({ where: { id: jobId } });
      expect(job).toMatchObject({ state: "running", attempts: 1 });
      const registry = await db.prisma.gitRegistry.findUniqueOrThrow({ where: { id: registryId } });
      expect(registry).toMatchObject({ lastSyncAt: null, lastSyncCommit: null, lastSyncAttemptAt: null });
      expect(await db.prisma.application.count({ where: { organizationId } })).toBe(0);
      // Time passes while the process is down: the job's lock and the sync lease expire.
      await db.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "id" = ${jobId}::uuid`;
      await db.prisma.$executeRaw`UPDATE "GitRegistry" SET "syncLeaseUntil" = now() - interval '1 second' WHERE "id" = ${registryId}::uuid`;
    });

    // Restart on the same data directory: the job is taken over and the registry syncs.
    proxy.open();
    const second = await startServerProcess("pglite-second", env, ADMIN_KEY);
    try {
      const synced = await eventually(async () => {
        const res = await second.api("GET", `/api/v1/registries/git/${registryId}`);
        return res.body?.lastSyncAt && res.body;
      }, 90_000, "the registry to sync after the restart");
      expect(synced.lastSyncCommit).toBe(repo.commit);
      const apps = await second.api("GET", "/api/v1/applications");
      expect(apps.body.items.map((a: { key: string }) => a.key).sort()).toEqual([0, 1, 2].map((i) => `pglite-fault-app-${i}`));
      // SIGTERM lets the job finish (it ends just after the catalog is written).
      expect(await second.stop()).toBe(0);
    } finally {
      await second.kill();
    }
    await withDatabase(async (db) => {
      const job = await db.prisma.job.findUniqueOrThrow({ where: { id: jobId } });
      expect(job).toMatchObject({ state: "succeeded", attempts: 2 });
      expect(await db.prisma.auditEntry.count({ where: { action: "registries.git.sync", entityId: registryId, outcome: "success" } })).toBe(1);
    });
  }, 180_000);
});
