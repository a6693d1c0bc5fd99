// The job runner on a real database: claims are exclusive across runners, failures retry with
// back-off, a unique key keeps one live job per target, dead workers' jobs are taken over, and
// schedules recur.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../support/harness.js";
import { backoffMs, enqueueJob, JobRunner, PermanentJobError, type JobDefinition } from "../../src/jobs/index.js";
import { claimJobs } from "../../src/jobs/queue.js";

let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.close());
beforeEach(async () => {
  await h.services.prisma.job.deleteMany({});
});

const jobRow = (id: string) => h.services.prisma.job.findUniqueOrThrow({ where: { id } });
/** Makes every pending job due now (instead of waiting out its back-off or delay). */
const makeDue = () => h.services.prisma.$executeRaw`UPDATE "Job" SET "runAt" = '2000-01-01' WHERE "state" = 'pending'`;

function runner(definitions: JobDefinition[], options: Partial<ConstructorParameters<typeof JobRunner>[1]> = {}) {
  return new JobRunner(h.services, { definitions, concurrency: 4, pollIntervalMs: 50, ...options });
}

describe("running jobs", () => {
  it("runs a job once and records its success", async () => {
    const seen: unknown[] = [];
    const r = runner([{ type: "t.echo", run: async ({ job }) => void seen.push(job.payload) }]);
    const id = await r.enqueue({ type: "t.echo", payload: { n: 1 } });
    expect(await r.drain()).toBe(1);
    expect(seen).toEqual([{ n: 1 }]);
    const row = await jobRow(id!);
    expect(row).toMatchObject({ state: "succeeded", attempts: 1, activeKey: null, lockedBy: null });
    expect(row.finishedAt).toBeInstanceOf(Date);
    expect(await r.runOnce()).toBe(0);
  });

  it("does not run a job before its time", async () => {
    const r = runner([{ type: "t.later", run: async () => undefined }]);
    await r.enqueue({ type: "t.later", delaySeconds: 3600 });
    expect(await r.drain()).toBe(0);
    await makeDue();
    expect(await r.drain()).toBe(1);
  });

  it("gives every job to exactly one of two runners sharing the database", async () => {
    const runs = new Map<string, string[]>();
    const definition = (name: string): JobDefinition => ({
      type: "t.shared",
      run: async ({ job }) => {
        runs.set(job.id, [...(runs.get(job.id) ?? []), name]);
        await new Promise((r) => setTimeout(r, 5));
      },
    });
    const a = runner([definition("a")], { workerId: "worker-a" });
    const b = runner([definition("b")], { workerId: "worker-b" });
    const ids = await Promise.all(Array.from({ length: 30 }, (_, n) => enqueueJob(h.services.prisma, { type: "t.shared", payload: { n } })));
    const [ranA, ranB] = await Promise.all([a.drain(), b.drain()]);
    expect(ranA + ranB).toBe(30);
    expect([...runs.keys()].sort()).toEqual([...ids].sort());
    for (const [, by] of runs) expect(by).toHaveLength(1);
    expect(await h.services.prisma.job.count({ where: { state: "succeeded" } })).toBe(30);
  });

  it("takes over a job whose worker stopped renewing its lock", async () => {
    const id = await enqueueJob(h.services.prisma, { type: "t.orphan" });
    // A worker claims it and dies.
    const [claimed] = await claimJobs(h.services.prisma, "dead-worker", ["t.orphan"], 1, 60);
    expect(claimed!.id).toBe(id);
    let ran = 0;
    const r = runner([{ type: "t.orphan", run: async () => void (ran += 1) }]);
    expect(await r.runOnce()).toBe(0); // its lock is still valid
    await h.services.prisma.$executeRaw`UPDATE "Job" SET "lockedUntil" = '2000-01-01' WHERE "id" = ${id}::uuid`;
    expect(await r.runOnce()).toBe(1);
    expect(ran).toBe(1);
    expect(await jobRow(id!)).toMatchObject({ state: "succeeded", attempts: 2 });
  });
});

describe("failures", () => {
  it("retries with back-off until the job succeeds", async () => {
    let calls = 0;
    const r = runner([{
      type: "t.flaky",
      backoff: { baseMs: 60_000, maxMs: 600_000 },
      run: async () => {
        calls += 1;
        if (calls < 3) throw new Error(`attempt ${calls} failed`);
      },
    }]);
    const id = (await r.enqueue({ type: "t.flaky" }))!;
    const before = Date.now();
    expect(await r.runOnce()).toBe(1);
    let row = await jobRow(id);
    expect(row).toMatchObject({ state: "pending", attempts: 1, lastError: "attempt 1 failed", activeKey: null });
    // Retry 1 waits between half and all of baseMs.
    const wait = row.runAt.getTime() - before;
    expect(wait).toBeGreaterThanOrEqual(30_000 - 2000);
    expect(wait).toBeLessThanOrEqual(60_000 + 2000);
    expect(await r.runOnce()).toBe(0);

    await makeDue();
    await r.runOnce();
    row = await jobRow(id);
    expect(row).toMatchObject({ state: "pending", attempts: 2, lastError: "attempt 2 failed" });
    await makeDue();
    await r.runOnce();
    expect(await jobRow(id)).toMatchObject({ state: "succeeded", attempts: 3, lastError: null });
  });

  it("gives up after maxAttempts, and at once on a PermanentJobError", async () => {
    const r = runner([
      { type: "t.broken", maxAttempts: 2, run: async () => { throw new Error("still broken"); } },
      { type: "t.hopeless", run: async () => { throw new PermanentJobError("cannot work"); } },
    ]);
    const broken = (await r.enqueue({ type: "t.broken", uniqueKey: "broken:1" }))!;
    const hopeless = (await r.enqueue({ type: "t.hopeless" }))!;
    await r.runOnce();
    expect(await jobRow(hopeless)).toMatchObject({ state: "failed", attempts: 1, lastError: "cannot work" });
    expect(await jobRow(broken)).toMatchObject({ state: "pending", attempts: 1, activeKey: "broken:1" });
    await makeDue();
    await r.runOnce();
    expect(await jobRow(broken)).toMatchObject({ state: "failed", attempts: 2, lastError: "still broken", activeKey: null, uniqueKey: "broken:1" });
  });

  it("computes back-off: doubling, capped, with jitter between half and all", () => {
    const backoff = { baseMs: 1000, maxMs: 10_000 };
    expect(backoffMs(1, backoff, () => 1)).toBe(1000);
    expect(backoffMs(2, backoff, () => 1)).toBe(2000);
    expect(backoffMs(4, backoff, () => 1)).toBe(8000);
    expect(backoffMs(9, backoff, () => 1)).toBe(10_000);
    expect(backoffMs(2, backoff, () => 0)).toBe(1000);
  });
});

describe("unique keys", () => {
  it("keeps one pending or running job per key, and frees the key when it ends", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const r = runner([{ type: "t.unique", run: () => gate }]);
    const first = await r.enqueue({ type: "t.unique", uniqueKey: "registry:1" });
    expect(first).not.toBeNull();
    expect(await r.enqueue({ type: "t.unique", uniqueKey: "registry:1" })).toBeNull();
    expect(await r.enqueue({ type: "t.unique", uniqueKey: "registry:2" })).not.toBeNull();

    const running = r.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await jobRow(first!)).state).toBe("running");
    expect(await r.enqueue({ type: "t.unique", uniqueKey: "registry:1" })).toBeNull();
    release();
    await running;
    expect(await r.enqueue({ type: "t.unique", uniqueKey: "registry:1" })).not.toBeNull();
  });

  it("refuses a type it does not know", () => {
    expect(() => runner([]).enqueue({ type: "t.unknown" })).toThrow(/unknown job type/);
  });
});

describe("schedules", () => {
  it("keeps one run per schedule and enqueues the next one when a run ends", async () => {
    let runs = 0;
    const r = runner([], { schedules: [{ name: "tick", everyMs: 60_000, run: async () => void (runs += 1) }] });
    await r.ensureSchedules();
    await r.ensureSchedules();
    expect(await h.services.prisma.job.count({ where: { type: "schedule.tick" } })).toBe(1);
    expect(await r.drain()).toBe(1);
    expect(runs).toBe(1);
    const next = await h.services.prisma.job.findFirstOrThrow({ where: { type: "schedule.tick", state: "pending" } });
    expect(next.runAt.getTime()).toBeGreaterThan(Date.now() + 50_000);
    expect(await h.services.prisma.job.count({ where: { type: "schedule.tick" } })).toBe(2);
  });
});

describe("start and stop", () => {
  it("works in the background and lets an in-flight job finish on stop", async () => {
    const done: string[] = [];
    const r = runner([{
      type: "t.background",
      run: async ({ job }) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        done.push(job.id);
      },
    }], { shutdownGraceMs: 5000 });
    r.start();
    const id = (await r.enqueue({ type: "t.background" }))!;
    for (let i = 0; i < 100 && (await jobRow(id)).state !== "running"; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await r.stop();
    expect(done).toEqual([id]);
    expect((await jobRow(id)).state).toBe("succeeded");
  });

  it("aborts a job's signal when the grace period ends", async () => {
    let aborted = false;
    const r = runner([{
      type: "t.slow",
      run: ({ signal }) => new Promise<void>((_, reject) => signal.addEventListener("abort", () => {
        aborted = true;
        reject(signal.reason);
      })),
    }], { shutdownGraceMs: 100 });
    r.start();
    const id = (await r.enqueue({ type: "t.slow" }))!;
    for (let i = 0; i < 100 && (await jobRow(id)).state !== "running"; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    await r.stop();
    expect(aborted).toBe(true);
    expect(await jobRow(id)).toMatchObject({ state: "pending", lastError: "the service is shutting down" });
  });
});
