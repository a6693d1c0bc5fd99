// The heartbeat's part in device actions: the device's reports are stored first, then the
// actions still open for it are answered (so a report that ended one is not answered again).
// A report that ends a job's action judges that job now (the next batch need not wait for
// the jobs' tick); a judgement that fails is the tick's to do again, never the heartbeat's error.
import type { Services } from "../../services.js";
import type { ActionReport, DeviceActionEntry } from "./schemas.js";
import { CONFIGURATION_KIND } from "./kinds.js";
import { openActionsOf, recordActionReports } from "./service.js";
import { judgeJobById } from "../jobs/service.js";
import { windowHoldsOf } from "../jobs/windows.js";

export interface ActionsExchange {
  /** what the agent is handed */
  entries: DeviceActionEntry[];
  /**
   * the device's apply-configuration actions admitted now (handed over: dispatched, inside
   * their window, within the budget): never the agent's; the configuration exchange gives
   * the device their layer's revision instead (config-layers/heartbeat.ts)
   */
  configuring: Set<string>;
}

/** Judges the jobs whose devices' actions just ended, each in its own short transaction. */
export async function judgeJobsNow(services: Services, jobs: Array<{ jobId: string; organizationId: string }>): Promise<void> {
  for (const job of jobs) {
    await services.prisma.$transaction((tx) => judgeJobById(tx, job.organizationId, job.jobId))
      .catch((err: Error) => services.logger.warn({ err: err.message, jobId: job.jobId }, "judging a job after a report failed; the jobs' tick judges it again"));
  }
}

export async function actionsExchange(services: Services, deviceId: string, reports: ActionReport[] | undefined): Promise<ActionsExchange> {
  const raw = services.database.opened.raw;
  const ended = reports?.length ? await recordActionReports(raw, deviceId, reports) : [];
  await judgeJobsNow(services, ended);
  // a job's device outside its maintenance window is not handed the action yet
  const open = await openActionsOf(raw, deviceId, await windowHoldsOf(raw, deviceId));
  const configuring = new Set(open.filter((a) => (a.kind as string) === CONFIGURATION_KIND).map((a) => a.id));
  return { entries: configuring.size ? open.filter((a) => !configuring.has(a.id)) : open, configuring };
}
