// The background job runner: claims due jobs from the Job table, runs them with bounded
// concurrency, renews their locks while they run, retries failures with back-off, and keeps
// the recurring schedules alive. Every process may run one; they share the work through the
// database (docs/jobs.md).
import { randomUUID } from "node:crypto";
import os from "node:os";
import type { Services } from "../services.js";
import { claimJobs, completeJob, enqueueJob, failJob, renewLocks, type ClaimedJob } from "./queue.js";
import { PermanentJobError, type EnqueueSpec, type JobDefinition, type ScheduleDefinition } from "./types.js";
import { metricsOf } from "../modules/metrics/registry.js";
import { inJobSpan } from "../lib/tracing/index.js";

export interface JobRunnerOptions {
  definitions: JobDefinition[];
  schedules?: ScheduleDefinition[];
  /** jobs run at the same time by this runner (default 2) */
  concurrency?: number;
  /** wait between looks for due jobs when idle (default 1000 ms) */
  pollIntervalMs?: number;
  /** a lock not renewed for this long is taken over by another worker (default 60 s) */
  lockSeconds?: number;
  /** on stop, how long in-flight jobs may take before their signal aborts (default 15 s) */
  shutdownGraceMs?: number;
  workerId?: string;
}

const DEFAULT_TIMEOUT_MS = 5 * 60_000;
const DEFAULT_BACKOFF = { baseMs: 10_000, maxMs: 3_600_000 };
/** how often schedules are re-created when missing (e.g. a process died between two runs) */
const ENSURE_SCHEDULES_EVERY_MS = 30_000;
export const SCHEDULE_PREFIX = "schedule.";

/** Retry n (1-based) waits min(max, base * 2^(n-1)), between half and all of it. */
export function backoffMs(attempt: number, backoff = DEFAULT_BACKOFF, random = Math.random): number {
  const full = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full * (0.5 + random() * 0.5));
}

export class JobRunner {
  readonly workerId: string;
  private readonly definitions = new Map<string, JobDefinition>();
  private readonly schedules = new Map<string, ScheduleDefinition>();
  private readonly concurrency: number;
  private readonly pollIntervalMs: number;
  private readonly lockSeconds: number;
  private readonly shutdownGraceMs: number;
  private readonly inFlight = new Map<string, { promise: Promise<void>; abort: AbortController }>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private lastEnsure = 0;

  constructor(private readonly services: Services, options: JobRunnerOptions) {
    this.workerId = options.workerId ?? `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.concurrency = options.concurrency ?? 2;
    this.pollIntervalMs = options.pollIntervalMs ?? 1000;
    this.lockSeconds = options.lockSeconds ?? 60;
    this.shutdownGraceMs = options.shutdownGraceMs ?? 15_000;
    for (const definition of options.definitions) this.definitions.set(definition.type, definition);
    for (const schedule of options.schedules ?? []) {
      this.schedules.set(schedule.name, schedule);
      this.definitions.set(SCHEDULE_PREFIX + schedule.name, {
        type: SCHEDULE_PREFIX + schedule.name,
        run: schedule.run,
        maxAttempts: 1, // a failed run is followed by the next one anyway
        timeoutMs: schedule.timeoutMs,
      });
    }
  }

  /** Adds a job of a known type (see enqueueJob for the uniqueKey rule). */
  enqueue(spec: EnqueueSpec): Promise<string | null> {
    if (!this.definitions.has(spec.type)) throw new Error(`unknown job type ${spec.type}`);
    return enqueueJob(this.services.prisma, { maxAttempts: this.definitions.get(spec.type)!.maxAttempts ?? 5, ...spec });
  }

  /** Creates each schedule's job unless one is pending or running (first run within its jitter). */
  async ensureSchedules(): Promise<void> {
    this.lastEnsure = Date.now();
    for (const schedule of this.schedules.values()) {
      await enqueueJob(this.services.prisma, {
        type: SCHEDULE_PREFIX + schedule.name,
        uniqueKey: SCHEDULE_PREFIX + schedule.name,
        delaySeconds: Math.random() * (schedule.jitterMs ?? 0) / 1000,
        maxAttempts: 1,
      });
    }
  }

  /** Claims what is due (up to the free slots), runs it, and waits for it: for tests and scripts. */
  async runOnce(): Promise<number> {
    const claimed = await this.claim(this.concurrency - this.inFlight.size);
    await Promise.all(claimed.map((job) => this.execute(job)));
    return claimed.length;
  }

  /** runOnce until nothing is due. */
  async drain(maxRounds = 100): Promise<number> {
    let total = 0;
    for (let round = 0; round < maxRounds; round++) {
      const ran = await this.runOnce();
      if (ran === 0) break;
      total += ran;
    }
    return total;
  }

  start(): void {
    if (this.loop) return;
    this.stopping = false;
    this.heartbeat = setInterval(() => void this.renew(), Math.max(1000, (this.lockSeconds * 1000) / 3));
    this.heartbeat.unref();
    this.loop = this.poll();
  }

  /** Stops claiming; in-flight jobs get the grace period, then their signal aborts. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake?.();
    await this.loop;
    this.loop = null;
    const running = [...this.inFlight.values()];
    if (running.length > 0) {
      const grace = setTimeout(() => running.forEach((job) => job.abort.abort(new Error("the service is shutting down"))), this.shutdownGraceMs);
      // Once aborted, a job gets a moment to wind down; one that ignores its signal keeps its
      // lock, which expires and lets another process take it over.
      await Promise.race([
        Promise.allSettled(running.map((job) => job.promise)),
        new Promise((resolve) => setTimeout(resolve, this.shutdownGraceMs + 2000).unref()),
      ]);
      clearTimeout(grace);
    }
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = null;
  }

  private async poll(): Promise<void> {
    while (!this.stopping) {
      let claimed: ClaimedJob[] = [];
      try {
        if (Date.now() - this.lastEnsure > ENSURE_SCHEDULES_EVERY_MS) await this.ensureSchedules();
        claimed = await this.claim(this.concurrency - this.inFlight.size);
      } catch (err) {
        this.services.logger.warn({ err: (err as Error).message }, "job runner: could not claim jobs");
      }
      for (const job of claimed) void this.execute(job);
      // Idle or full: wait for the poll interval, a finished job, or stop().
      if (claimed.length === 0 || this.inFlight.size >= this.concurrency) await this.sleep();
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.pollIntervalMs);
      const wake = () => done();
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = wake;
    });
  }

  private claim(slots: number): Promise<ClaimedJob[]> {
    if (slots <= 0) return Promise.resolve([]);
    return claimJobs(this.services.prisma, this.workerId, [...this.definitions.keys()], slots, this.lockSeconds);
  }

  private async renew(): Promise<void> {
    try {
      await renewLocks(this.services.prisma, this.workerId, [...this.inFlight.keys()], this.lockSeconds);
    } catch (err) {
      this.services.logger.warn({ err: (err as Error).message }, "job runner: could not renew locks");
    }
  }

  private execute(job: ClaimedJob): Promise<void> {
    const abort = new AbortController();
    const promise = this.run(job, abort).finally(() => {
      this.inFlight.delete(job.id);
      this.wake?.();
    });
    this.inFlight.set(job.id, { promise, abort });
    return promise;
  }

  private async run(job: ClaimedJob, abort: AbortController): Promise<void> {
    const definition = this.definitions.get(job.type)!;
    const { prisma, logger } = this.services;
    const log = logger.child({ jobId: job.id, jobType: job.type, attempt: job.attempts });
    const timeout = setTimeout(() => abort.abort(new Error("the job timed out")), definition.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    const metrics = metricsOf(this.services);
    const started = performance.now();
    metrics?.jobLag.observe({ kind: job.type }, job.lagSeconds);
    let error: unknown = null;
    try {
      // A job reclaimed after its worker crashed may have used up its attempts already.
      if (job.attempts > job.maxAttempts) throw new PermanentJobError("no attempts left (its worker stopped while running it)");
      await inJobSpan(job.type, job.attempts, () => definition.run({ services: this.services, logger: log, job: { ...job, payload: job.payload ?? {} }, signal: abort.signal }));
    } catch (err) {
      error = err;
    } finally {
      clearTimeout(timeout);
    }
    metrics?.jobDuration.observe({ kind: job.type }, (performance.now() - started) / 1000);
    metrics?.jobRuns.inc({ kind: job.type, outcome: error === null ? "succeeded" : "failed" });
    try {
      if (error === null) {
        await completeJob(prisma, this.workerId, job.id);
      } else {
        const message = error instanceof Error ? error.message : String(error);
        const retry = !(error instanceof PermanentJobError) && job.attempts < job.maxAttempts;
        const delayMs = retry ? backoffMs(job.attempts, definition.backoff) : null;
        await failJob(prisma, this.workerId, job.id, message, delayMs === null ? null : delayMs / 1000);
        log.warn({ err: message, retryInMs: delayMs }, retry ? "job failed; it will be retried" : "job failed for good");
      }
      if (job.type.startsWith(SCHEDULE_PREFIX)) await this.scheduleNext(job.type.slice(SCHEDULE_PREFIX.length));
    } catch (err) {
      // The lock expires and another worker (or this one) takes the job up again.
      log.error({ err: (err as Error).message }, "job runner: could not record a job's outcome");
    }
  }

  private async scheduleNext(name: string): Promise<void> {
    const schedule = this.schedules.get(name);
    if (!schedule || this.stopping) return;
    const jitter = schedule.jitterMs ?? 0;
    const delayMs = Math.max(0, schedule.everyMs + (Math.random() * 2 - 1) * jitter);
    await enqueueJob(this.services.prisma, {
      type: SCHEDULE_PREFIX + name,
      uniqueKey: SCHEDULE_PREFIX + name,
      delaySeconds: delayMs / 1000,
      maxAttempts: 1,
    });
  }
}
