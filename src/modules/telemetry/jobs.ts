// Background work of telemetry and logs, run by the job runner (src/jobs): retention pruning
// as a recurring schedule (one run per period across all processes, bounded chunks), and the
// time partitions of raw snapshots, rollups and log lines made ahead of time, and the
// whole-fleet series recomputed for the buckets ingest touched (src/modules/fleet/fleet-rollups.ts).
import type { Config } from "../../config.js";
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { refreshFleetRollups } from "../fleet/fleet-rollups.js";
import { pruneOnce } from "./retention.js";
import { metricsOf } from "../metrics/registry.js";
import { ensureUpcomingPartitions } from "./partitions.js";

const PRUNE_EVERY_MS = 10 * 60_000;
const PARTITIONS_EVERY_MS = 60 * 60_000;

export function telemetryJobs(config: Pick<Config, "TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS">): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const retention: ScheduleDefinition = {
    name: "telemetry.retention",
    everyMs: PRUNE_EVERY_MS,
    jitterMs: 60_000,
    timeoutMs: 120_000,
    run: async ({ services, logger, signal }) => {
      const result = await pruneOnce(services, { signal });
      metricsOf(services)?.observeRetention(result);
      if (result.snapshotPartitions + result.logPartitions + result.rollupPartitions + result.snapshots + result.logLines + result.orphanRows > 0) logger.info(result, "telemetry retention pruned");
    },
  };
  const partitions: ScheduleDefinition = {
    name: "telemetry.partitions",
    everyMs: PARTITIONS_EVERY_MS,
    jitterMs: 60_000,
    timeoutMs: 120_000,
    run: async ({ services, logger }) => {
      const created = await ensureUpcomingPartitions(services.database.opened.raw, new Date());
      if (created > 0) logger.info({ created }, "telemetry partitions created ahead");
    },
  };
  const fleetRollups: ScheduleDefinition = {
    name: "telemetry.fleet-rollups",
    everyMs: config.TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS * 1000,
    jitterMs: Math.min(5_000, config.TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS * 100),
    timeoutMs: 180_000,
    run: async ({ services, logger, signal }) => {
      const result = await refreshFleetRollups(services.prisma, { signal, dayRefreshMs: services.config.TELEMETRY_FLEET_DAY_REFRESH_SECONDS * 1000 });
      if (!result.complete) logger.info(result, "telemetry fleet rollups: backlog left for the next run");
    },
  };
  return { definitions: [], schedules: [retention, partitions, fleetRollups] };
}
