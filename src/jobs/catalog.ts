// Every job type and schedule the service runs. A module that needs background work defines
// its jobs beside its code and adds them here.
import type { Services } from "../services.js";
import { gitRegistryJobs } from "../modules/registries/git/jobs.js";
import { ociRegistryJobs } from "../modules/registries/oci/jobs.js";
import { marketplaceJobs } from "../modules/marketplace/jobs.js";
import { deviceJobs } from "../modules/devices/jobs.js";
import { telemetryJobs } from "../modules/telemetry/jobs.js";
import { alertJobs } from "../modules/alerts/jobs.js";
import { deploymentJobs } from "../modules/deployments/jobs.js";
import { configSourceJobs } from "../modules/config/jobs.js";
import { purgeEndedJobs } from "./queue.js";
import { mailJobs } from "../modules/mail/delivery.js";
import { labelCountsCompaction } from "../modules/groups/label-counts.js";
import { deviceActionJobs } from "../modules/device-actions/jobs.js";
import { remoteSessionJobs } from "../modules/remote-sessions/jobs.js";
import type { JobDefinition, ScheduleDefinition } from "./types.js";

/** Ended jobs are kept this long, for diagnosis. */
const JOB_HISTORY_DAYS = 7;

const housekeeping: ScheduleDefinition = {
  name: "jobs.purge",
  everyMs: 3_600_000,
  jitterMs: 300_000,
  run: async ({ services }) => {
    await purgeEndedJobs(services.prisma, JOB_HISTORY_DAYS);
  },
};

export function jobCatalog(services: Services): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const parts = [gitRegistryJobs(services.config), ociRegistryJobs(), marketplaceJobs(), deviceJobs(services.config), telemetryJobs(services.config), alertJobs(services.config), deploymentJobs(), configSourceJobs(services.config), mailJobs(services.config), deviceActionJobs(), remoteSessionJobs()];
  return {
    definitions: parts.flatMap((part) => part.definitions),
    schedules: [housekeeping, labelCountsCompaction, ...parts.flatMap((part) => part.schedules)],
  };
}
