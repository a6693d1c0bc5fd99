// Background work of the device capability, run by the job runner (src/jobs): offline
// detection as a recurring schedule, so that with several processes exactly one runs it
// per period.
import type { Config } from "../../config.js";
import { eventBusOf } from "../../lib/events.js";
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { detectOfflineDevices } from "./offline.js";

export function deviceJobs(config: Pick<Config, "OFFLINE_CHECK_INTERVAL_SECONDS" | "HEARTBEAT_INTERVAL_SECONDS">): {
  definitions: JobDefinition[];
  schedules: ScheduleDefinition[];
} {
  const offlineDetection: ScheduleDefinition = {
    name: "devices.offline-detection",
    everyMs: config.OFFLINE_CHECK_INTERVAL_SECONDS * 1000,
    jitterMs: Math.min(2000, config.OFFLINE_CHECK_INTERVAL_SECONDS * 100),
    timeoutMs: 60_000,
    run: async ({ services, logger }) => {
      const transitions = await detectOfflineDevices(services.prisma, eventBusOf(services), config.HEARTBEAT_INTERVAL_SECONDS);
      if (transitions.length > 0) logger.info({ devices: transitions.length }, "devices marked offline");
    },
  };
  return { definitions: [], schedules: [offlineDetection] };
}
