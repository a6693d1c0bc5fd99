// kill -9 of a server process in the middle of the rollout job's work for the rollout options:
// scheduled starts, retry dispatch and late-joiner admission. A first process is killed as soon
// as its rollout tick has done part of the work; a second process against the same database
// carries on. Afterwards every scheduled draft started exactly once (one audit entry by the
// system, its batches planned once, its canary told once), every due retry was handed out
// exactly once (attempt 2, not 3), and every completed continuous rollout opened exactly one
// late-joiner batch holding each of its joiners once: nothing given twice, nothing forgotten.
// PostgreSQL only: the scenario needs server processes beside the test's own connection.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import type { EnrolledDevice } from "../agent/fleet-support.js";
import { agentHeartbeat, enrollFleet, importVersion } from "../deployments/support.js";
import { databaseUrlOf, eventually, SHARED_KEYS, startServerProcess, type ServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const SCHEDULED = 10;
const CONTINUOUS = 4;

describe.skipIf(!ON_POSTGRES)("kill -9 during scheduled starts, retry dispatch and late-joiner admission (PostgreSQL; skipped without DATABASE_URL)", () => {
  let h: Harness;
  let acme: Tenant;
  let appId: string;
  const processes: ServerProcess[] = [];
  const scheduled: string[] = [];
  let retryId: string;
  let failing: EnrolledDevice[];
  const continuous: Array<{ id: string; joiners: EnrolledDevice[] }> = [];

  async function create(body: Record<string, unknown>): Promise<string> {
    const res = await h.api("POST", "/api/v1/deployments", {
      key: acme.key,
      body: { name: `crash-${Math.random().toString(36).slice(2, 8)}`, applicationId: appId, version: "1.0.0", profileId: "compose-main", ...body },
    });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  }

  const start = async (id: string) => expect((await h.api("POST", `/api/v1/deployments/${id}/start`, { key: acme.key })).status).toBe(200);
  const running = (id: string, devices: EnrolledDevice[]) => Promise.all(devices.map((d) => agentHeartbeat(h, d, [{ deploymentId: id, state: "running" }])));

  beforeAll(async () => {
    h = await createHarness({ ...SHARED_KEYS }); // the processes seal and open with the same key (their start checks it)
    acme = await h.createTenant("Acme Crash Options");
    appId = await importVersion(h, acme.org.id, { version: "1.0.0", parametersYaml: "  {}\n" });

    // scheduled drafts, due a few seconds from now (a past startAt is refused)
    const schedDevices = await enrollFleet(h, acme.key, SCHEDULED * 2, { labels: { ring: "sched" } });
    const startAt = new Date(Date.now() + 3000).toISOString();
    for (let i = 0; i < SCHEDULED; i++) {
      scheduled.push(await create({
        target: { deviceIds: schedDevices.slice(i * 2, i * 2 + 2).map((d) => d.deviceId) }, startAt,
        strategy: { type: "staged", canary: { count: 1 }, batches: [] },
      }));
    }

    // devices that failed their first attempt and wait to retry
    failing = await enrollFleet(h, acme.key, 20, { labels: { ring: "retry" } });
    retryId = await create({ target: { labelSelector: { ring: "retry" } }, retry: { maxAttempts: 3, initialDelaySeconds: 1, maxDelaySeconds: 1 } });
    await start(retryId);
    await Promise.all(failing.map((d) => agentHeartbeat(h, d, [{ deploymentId: retryId, state: "failed", message: "mirror down", attempt: 1 }])));

    // completed continuous staged rollouts with late joiners waiting for their batch
    for (let i = 0; i < CONTINUOUS; i++) {
      const site = `site-${i}`;
      const first = await enrollFleet(h, acme.key, 1, { labels: { ring: "cont", site } });
      const id = await create({ target: { labelSelector: { ring: "cont", site } }, continuous: true, strategy: { type: "staged", canary: { count: 1 }, batches: [] } });
      await start(id);
      await running(id, first);
      expect((await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } })).rolloutState).toBe("completed");
      continuous.push({ id, joiners: await enrollFleet(h, acme.key, 3, { labels: { ring: "cont", site } }) });
    }
  }, 300_000);

  afterAll(async () => {
    for (const p of processes) await p.kill();
    await h?.close();
  });

  /** Started a process, kills it as soon as `progressed` sees part of its tick's work done. */
  async function killMidway(name: string, progressed: () => Promise<boolean>) {
    const p = await startServerProcess(name, { DATABASE_URL: databaseUrlOf(h) });
    processes.push(p);
    await eventually(async () => ((await progressed()) ? true : undefined), 150_000, `${name}'s rollout tick to start its work`);
    await p.kill();
    // The killed process's claimed jobs stay locked for the runner's 60 s before another process
    // may take them over: that time passes here with SQL instead of being waited for (as in
    // kill-9.test.ts). Only the dead process held locks: no other process is running.
    await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = now() - interval '1 second' WHERE "state" = 'running'`;
  }

  const startedCount = () => h.services.prisma.deployment.count({ where: { id: { in: scheduled }, status: "running" } });
  const lateBatches = () => h.services.prisma.deploymentBatch.count({ where: { deploymentId: { in: continuous.map((c) => c.id) }, kind: "late_joiners" } });

  it("carries every start, retry and late-joiner batch through to exactly once", async () => {
    await killMidway("options-a", async () => (await startedCount()) > 0);
    const startedAtKill = await startedCount();
    // the same tick hands out retries and opens late-joiner batches after the starts: a second
    // process killed while doing those, if the first did not get there
    if ((await lateBatches()) === 0) await killMidway("options-b", async () => (await lateBatches()) > 0);

    const survivor = await startServerProcess("options-survivor", { DATABASE_URL: databaseUrlOf(h) });
    processes.push(survivor);
    await eventually(async () => {
      const retried = await h.services.prisma.deploymentDevice.count({ where: { deploymentId: retryId, attempt: 2, state: "pending" } });
      return (await startedCount()) === SCHEDULED && retried === failing.length && (await lateBatches()) === CONTINUOUS ? true : undefined;
    }, 180_000, "every start, retry and late-joiner batch done after the crash");
    expect(startedAtKill).toBeGreaterThan(0);

    for (const id of scheduled) {
      const audit = await h.services.prisma.auditEntry.findMany({ where: { entityId: id, action: "deployments.start" } });
      expect(audit.map((a) => [a.actorType, a.outcome])).toEqual([["system", "success"]]);
      expect(await h.services.prisma.deploymentBatch.count({ where: { deploymentId: id } })).toBe(2);
      expect(await h.services.prisma.deploymentDevice.count({ where: { deploymentId: id, desiredAction: "install" } })).toBe(1);
      expect(await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } })).toMatchObject({ status: "running", rolloutState: "canary" });
    }

    const entries = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: retryId } });
    expect(entries.map((e) => [e.state, e.attempt, e.retryAt])).toEqual(failing.map(() => ["pending", 2, null]));

    for (const { id, joiners } of continuous) {
      const batches = await h.services.prisma.deploymentBatch.findMany({ where: { deploymentId: id }, orderBy: { index: "asc" } });
      expect(batches.map((b) => [b.index, b.kind, b.size])).toEqual([[0, "canary", 1], [1, "late_joiners", joiners.length]]);
      const late = await h.services.prisma.deploymentDevice.findMany({ where: { deploymentId: id, lateJoiner: true } });
      expect(late.map((e) => [e.batchIndex, e.desiredAction, e.attempt]).sort()).toEqual(joiners.map(() => [1, "install", 1]));
      expect(await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } })).toMatchObject({ rolloutState: "in_progress", currentBatch: 1 });
      // the joiners run it: the late-joiner batch completes the rollout again
      await running(id, joiners);
      expect(await h.services.prisma.deployment.findUniqueOrThrow({ where: { id } })).toMatchObject({ rolloutState: "completed" });
    }
  }, 600_000);
});
