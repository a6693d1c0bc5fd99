// The heartbeat's part in device actions: the device's reports are stored first, then the
// actions still open for it are answered (so a report that ended one is not answered again).
import type { Services } from "../../services.js";
import type { ActionReport, DeviceActionEntry } from "./schemas.js";
import { openActionsOf, recordActionReports } from "./service.js";

export async function actionsExchange(services: Services, deviceId: string, reports: ActionReport[] | undefined): Promise<DeviceActionEntry[]> {
  const raw = services.database.opened.raw;
  if (reports?.length) await recordActionReports(raw, deviceId, reports);
  return openActionsOf(raw, deviceId);
}
