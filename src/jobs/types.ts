// What a job and a recurring schedule are. Modules define them next to their code (e.g.
// src/modules/registries/git/jobs.ts); src/jobs/catalog.ts lists them for the runner.
import type { Logger } from "../lib/logger.js";
import type { Services } from "../services.js";

export interface JobContext<P = unknown> {
  services: Services;
  logger: Logger;
  job: { id: string; type: string; attempts: number; maxAttempts: number; payload: P };
  /** aborted at the job's timeout and when a shutdown's grace period ends: honour it */
  signal: AbortSignal;
}

export interface JobDefinition<P = any> {
  /** e.g. "git-registry.sync" */
  type: string;
  run(ctx: JobContext<P>): Promise<void>;
  /** runs before the job is given up (state failed); default 5 */
  maxAttempts?: number;
  /** the signal aborts after this long; default 5 minutes */
  timeoutMs?: number;
  /** retry n waits min(maxMs, baseMs * 2^(n-1)), with jitter; default 10 s .. 1 h */
  backoff?: { baseMs: number; maxMs: number };
}

/**
 * Recurring work ("every minute, enqueue the syncs that are due"). Each schedule is one job
 * row with a unique key, so across all processes one run happens per period; when it ends,
 * the next run is enqueued everyMs later (plus or minus jitterMs).
 */
export interface ScheduleDefinition {
  name: string;
  everyMs: number;
  jitterMs?: number;
  run(ctx: JobContext<Record<string, never>>): Promise<void>;
  timeoutMs?: number;
}

/** Thrown by a handler when trying again cannot help: the job fails at once. */
export class PermanentJobError extends Error {
  override readonly name = "PermanentJobError";
}

export interface EnqueueSpec {
  type: string;
  payload?: Record<string, unknown>;
  /** at most one pending or running job per key: a second enqueue is a no-op (returns null) */
  uniqueKey?: string;
  /** seconds from now (database clock); default 0 */
  delaySeconds?: number;
  maxAttempts?: number;
}
