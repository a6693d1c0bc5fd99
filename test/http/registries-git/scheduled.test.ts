// Scheduled Git syncs through the job runner: which registries are due, one job per registry,
// jitter, and never two syncs of one registry even with two runners.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { GIT_SYNC_JOB, gitRegistryJobs, gitSyncJobKey, syncJitterSeconds } from "../../../src/modules/registries/git/jobs.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml, createRegistry } from "./support.js";

const SCHEDULE = "schedule.git-registry.due-syncs";

let h: Harness;
let git: GitServer;
let acme: Tenant;
let repoUrl: string;

beforeAll(async () => {
  [h, git] = await Promise.all([createHarness(), startGitServer()]);
  acme = await h.createTenant("Acme Scheduled");
  ({ url: repoUrl } = await git.createRepo("scheduled", { "app.yaml": appYaml("scheduled-app", "1.0.0") }));
});
afterAll(async () => {
  await git?.close();
  await h?.close();
});
beforeEach(async () => {
  await h.services.prisma.job.deleteMany({});
  await h.services.prisma.gitRegistry.deleteMany({});
});

// Only the Git registry jobs: other modules' schedules are not what these tests are about.
const newRunner = (workerId: string) => new JobRunner(h.services, { ...gitRegistryJobs(h.services.config), concurrency: 2, workerId });
/** One run of the schedule now (instead of waiting for its next minute). */
async function runSchedule(runner: JobRunner) {
  await runner.enqueue({ type: SCHEDULE, uniqueKey: SCHEDULE, maxAttempts: 1 });
  await h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "type" = ${SCHEDULE} AND "state" = 'pending'`;
  await runner.runOnce();
}
const syncJobs = () => h.services.prisma.job.findMany({ where: { type: GIT_SYNC_JOB }, orderBy: { createdAt: "asc" } });
const makeSyncsDue = () => h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "type" = ${GIT_SYNC_JOB} AND "state" = 'pending'`;

describe("scheduled syncs", () => {
  it("enqueues one jittered job per due registry, and the job syncs it as the scheduler", async () => {
    const due = await createRegistry(h, acme, { url: repoUrl, syncIntervalMinutes: 30 });
    await createRegistry(h, acme, { url: repoUrl, enabled: false });
    await createRegistry(h, acme, { url: repoUrl, syncIntervalMinutes: 0 });
    const recent = await createRegistry(h, acme, { url: repoUrl, syncIntervalMinutes: 30 });
    await h.services.prisma.gitRegistry.update({ where: { id: recent.id }, data: { lastSyncAttemptAt: new Date(Date.now() - 10 * 60_000) } });
    const suspended = await h.createTenant("Suspended Scheduled");
    await createRegistry(h, suspended, { url: repoUrl });
    await h.services.prisma.organization.update({ where: { id: suspended.org.id }, data: { status: "suspended" } });

    const runner = newRunner("scheduler-a");
    const before = Date.now();
    await runSchedule(runner);
    let jobs = await syncJobs();
    expect(jobs.map((j) => j.uniqueKey)).toEqual([gitSyncJobKey(due.id)]);
    expect(jobs[0]).toMatchObject({ state: "pending", payload: { organizationId: acme.org.id, registryId: due.id } });
    // Jitter: up to a tenth of the interval (3 minutes here).
    expect(jobs[0]!.runAt.getTime()).toBeLessThanOrEqual(before + 180_000 + 2000);
    // The next minute's run finds it due again but adds no second job.
    await runSchedule(runner);
    expect(await syncJobs()).toHaveLength(1);
    // The schedule enqueued its own next run.
    expect(await h.services.prisma.job.count({ where: { type: SCHEDULE, state: "pending" } })).toBe(1);

    await makeSyncsDue();
    expect(await runner.drain()).toBe(1);
    jobs = await syncJobs();
    expect(jobs[0]).toMatchObject({ state: "succeeded", activeKey: null });
    const registry = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: due.id } });
    expect(registry.lastSyncAt).toBeInstanceOf(Date);
    expect(registry.lastSyncCommit).toMatch(/^[0-9a-f]{40}$/);
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "registries.git.sync", entityId: due.id } });
    expect(audit).toMatchObject({ actorType: "system", organizationId: acme.org.id, outcome: "success" });
    expect(audit.changes).toMatchObject({ trigger: "scheduler", imported: 1 });

    // Synced just now: not due until its interval has passed.
    await runSchedule(runner);
    expect(await h.services.prisma.job.count({ where: { type: GIT_SYNC_JOB, state: "pending" } })).toBe(0);
    await h.services.prisma.gitRegistry.update({ where: { id: due.id }, data: { lastSyncAttemptAt: new Date(Date.now() - 31 * 60_000) } });
    await runSchedule(runner);
    expect(await h.services.prisma.job.count({ where: { type: GIT_SYNC_JOB, state: "pending" } })).toBe(1);
  });

  it("records a failing scheduled sync on the registry without retrying it", async () => {
    const broken = await createRegistry(h, acme, { url: `${git.url}/missing.git` });
    const runner = newRunner("scheduler-b");
    await runSchedule(runner);
    await makeSyncsDue();
    await runner.drain();
    const [job] = await syncJobs();
    expect(job).toMatchObject({ state: "succeeded", attempts: 1 });
    const registry = await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: broken.id } });
    expect(registry.lastSyncError).toBe("repository not found (HTTP 404)");
    expect(registry.lastSyncAttemptAt).toBeInstanceOf(Date);
  });

  it("skips a registry disabled or deleted after its job was enqueued", async () => {
    const disabled = await createRegistry(h, acme, { url: repoUrl });
    const deleted = await createRegistry(h, acme, { url: repoUrl });
    const runner = newRunner("scheduler-c");
    await runSchedule(runner);
    expect(await syncJobs()).toHaveLength(2);
    await h.services.prisma.gitRegistry.update({ where: { id: disabled.id }, data: { enabled: false } });
    await h.services.prisma.gitRegistry.delete({ where: { id: deleted.id } });
    await makeSyncsDue();
    await runner.drain();
    expect((await syncJobs()).map((j) => j.state)).toEqual(["succeeded", "succeeded"]);
    expect((await h.services.prisma.gitRegistry.findUniqueOrThrow({ where: { id: disabled.id } })).lastSyncAt).toBeNull();
  });

  it("syncs a registry once when two runners (processes) work at the same time", async () => {
    const registry = await createRegistry(h, acme, { url: repoUrl });
    const [a, b] = [newRunner("process-a"), newRunner("process-b")];
    await Promise.all([runSchedule(a), runSchedule(b)]);
    expect(await syncJobs()).toHaveLength(1);
    await makeSyncsDue();
    await Promise.all([a.drain(), b.drain()]);
    const syncs = await h.services.prisma.auditEntry.count({ where: { action: "registries.git.sync", entityId: registry.id } });
    expect(syncs).toBe(1);
  });

  it("spreads syncs with a jitter of up to a tenth of the interval, at most five minutes", () => {
    expect(syncJitterSeconds(10, () => 1)).toBe(60);
    expect(syncJitterSeconds(60, () => 1)).toBe(300);
    expect(syncJitterSeconds(1440, () => 0.5)).toBe(150);
  });
});
