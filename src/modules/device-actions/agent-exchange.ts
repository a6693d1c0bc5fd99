// The heartbeat's part in device actions: the device's reports are stored first, then the
// actions still open for it are answered (so a report that ended one is not answered again).
// A report that ends a job's action judges that job now (the next batch need not wait for
// the jobs' tick); a judgement that fails is the tick's to do again, never the heartbeat's error.
import type { Services } from "../../services.js";
import type { ActionReport, DeviceActionEntry } from "./schemas.js";
import { openActionsOf, recordActionReports } from "./service.js";
import { judgeJobById } from "../jobs/service.js";
import { windowHoldsOf } from "../jobs/windows.js";

export async function actionsExchange(services: Services, deviceId: string, reports: ActionReport[] | undefined): Promise<DeviceActionEntry[]> {
  const raw = services.database.opened.raw;
  const ended = reports?.length ? await recordActionReports(raw, deviceId, reports) : [];
  for (const job of ended) {
    await services.prisma.$transaction((tx) => judgeJobById(tx, job.organizationId, job.jobId))
      .catch((err: Error) => services.logger.warn({ err: err.message, jobId: job.jobId }, "judging a job after a report failed; the jobs' tick judges it again"));
  }
  // a job's device outside its maintenance window is not handed the action yet
  return openActionsOf(raw, deviceId, await windowHoldsOf(raw, deviceId));
}
