// A job's maintenance windows at the heartbeat: which of a device's pending job actions may
// not be handed over now (no window of their job open in the device's time zone), and when
// each window opens. The rule is the rollout engine's (rollout-engine/windows.ts), as for a
// deployment's devices; read once per heartbeat of a device with pending job actions only.
import type { RawDatabase } from "../../db/adapters.js";
import type { ActionWindows } from "../rollout-engine/options.js";
import { actionWindowState } from "../rollout-engine/windows.js";

export interface WindowHold {
  id: string;
  /** ISO time its window opens (null: none within two weeks) */
  opensAt: string | null;
}

const PENDING_WITH_WINDOWS = `
  SELECT a."id"::text AS "id", j."maintenanceWindows" AS "windows", d."labels" AS "labels"
    FROM "DeviceAction" a
    JOIN "ActionJob" j ON j."id" = a."jobId"
    JOIN "Device" d ON d."id" = a."deviceId"
   WHERE a."deviceId" = $1::uuid AND a."state" = 'pending' AND j."maintenanceWindows" IS NOT NULL`;

/** The device's pending job actions outside their windows now; one indexed query ((deviceId, state)). */
export async function windowHoldsOf(raw: RawDatabase, deviceId: string, now = Date.now()): Promise<WindowHold[]> {
  const rows = await raw.query<{ id: string; windows: ActionWindows; labels: Record<string, string> | null }>(PENDING_WITH_WINDOWS, [deviceId]);
  const holds: WindowHold[] = [];
  for (const row of rows) {
    const { open, opensAt } = actionWindowState(row.windows, row.labels, now);
    if (!open) holds.push({ id: row.id, opensAt: opensAt === null ? null : new Date(opensAt).toISOString() });
  }
  return holds;
}
