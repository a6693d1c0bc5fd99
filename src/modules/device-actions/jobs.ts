// The expiry sweep: open actions of devices that did not come back in time end as expired,
// and diagnostics bundles past their time are deleted. One run per period across processes.
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { expireActions } from "./service.js";
import { actionJobSchedules } from "../jobs/tick.js";

export function deviceActionJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const sweep: ScheduleDefinition = {
    name: "device-actions.expiry",
    everyMs: 60_000,
    jitterMs: 5_000,
    timeoutMs: 60_000,
    run: async ({ services, logger }) => {
      const { expired, bundles } = await expireActions(services.prisma);
      if (expired || bundles) logger.info({ expired, bundles }, "device actions expired, bundles dropped");
    },
  };
  // and the clock of jobs over many devices (src/modules/jobs/tick.ts)
  return { definitions: [], schedules: [sweep, ...actionJobSchedules()] };
}
