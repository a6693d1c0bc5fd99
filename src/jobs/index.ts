// The background job runner and its public surface (docs/jobs.md).
import type { Services } from "../services.js";
import { jobCatalog } from "./catalog.js";
import { JobRunner } from "./runner.js";

export { JobRunner, backoffMs, type JobRunnerOptions } from "./runner.js";
export { enqueueJob } from "./queue.js";
export { PermanentJobError, type EnqueueSpec, type JobContext, type JobDefinition, type ScheduleDefinition } from "./types.js";

/** The runner with every job and schedule of the service, configured from the environment. */
export function createJobRunner(services: Services): JobRunner {
  const { config } = services;
  return new JobRunner(services, {
    ...jobCatalog(services),
    concurrency: config.JOBS_CONCURRENCY,
    pollIntervalMs: config.JOBS_POLL_INTERVAL_MS,
    shutdownGraceMs: config.JOBS_SHUTDOWN_GRACE_SECONDS * 1000,
  });
}
