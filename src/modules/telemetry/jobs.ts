// Background work of telemetry and logs, run by the job runner (src/jobs): retention pruning
// as a recurring schedule (one run per period across all processes, bounded chunks).
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { pruneOnce } from "./retention.js";

const PRUNE_EVERY_MS = 10 * 60_000;

export function telemetryJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const retention: ScheduleDefinition = {
    name: "telemetry.retention",
    everyMs: PRUNE_EVERY_MS,
    jitterMs: 60_000,
    timeoutMs: 120_000,
    run: async ({ services, logger, signal }) => {
      const result = await pruneOnce(services, { signal });
      if (result.snapshots + result.logLines + result.orphanRows > 0) logger.info(result, "telemetry retention pruned");
    },
  };
  return { definitions: [], schedules: [retention] };
}
