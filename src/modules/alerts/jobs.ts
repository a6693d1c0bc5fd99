// Background work of alerts, run by the job runner (src/jobs): rule evaluation as a
// recurring schedule (exactly one run per period across all processes) and the delivery of
// each notification as a job of its own, retried with back-off.
import type { Config } from "../../config.js";
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import { deliveryJob } from "../notification-targets/deliveries.js";
import { evaluateRulesOnce } from "./evaluate.js";

export function alertJobs(config: Config): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const evaluation: ScheduleDefinition = {
    name: "alerts.evaluate",
    everyMs: config.ALERT_EVALUATION_INTERVAL_SECONDS * 1000,
    jitterMs: Math.min(5000, config.ALERT_EVALUATION_INTERVAL_SECONDS * 100),
    timeoutMs: Math.max(60_000, config.ALERT_EVALUATION_INTERVAL_SECONDS * 1000),
    run: async ({ services, logger, signal }) => {
      const result = await evaluateRulesOnce(services, { signal });
      if (result.fired + result.resolved > 0) logger.info(result, "alert rules evaluated");
    },
  };
  return { definitions: [deliveryJob(config)], schedules: [evaluation] };
}
