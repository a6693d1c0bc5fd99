// Offline detection: a device that has missed three heartbeat intervals is offline. One
// set-based statement marks them all, writes their activity entries and returns them, so
// the status-change events can be published after it committed.
import type { DbTx } from "../../db/client.js";
import type { DeviceStatus, EventBus } from "../../lib/events.js";
import { utc } from "./sql.js";

export const MISSED_INTERVALS_BEFORE_OFFLINE = 3;

export interface OfflineTransition {
  organizationId: string;
  deviceId: string;
  from: DeviceStatus;
}

/**
 * Marks online and error devices whose lastSeenAt is older than three heartbeat intervals
 * before `now` as offline. Provisioned devices (never seen) and pending ones are left alone.
 * Concurrent heartbeats are safe: rows are locked and re-checked, and a heartbeat that wins
 * the lock keeps its device online.
 */
export async function markOfflineDevices(db: DbTx, now: Date, heartbeatIntervalSeconds: number): Promise<OfflineTransition[]> {
  const cutoff = new Date(now.getTime() - MISSED_INTERVALS_BEFORE_OFFLINE * heartbeatIntervalSeconds * 1000);
  return db.$queryRaw<OfflineTransition[]>`
    WITH stale AS (
      SELECT d."id", d."status" FROM "Device" d
       WHERE d."status" IN ('online', 'error') AND d."lastSeenAt" < ${utc(cutoff)}
       FOR UPDATE OF d SKIP LOCKED
    ), marked AS (
      UPDATE "Device" d SET "status" = 'offline', "statusReason" = NULL, "statusChangedAt" = ${utc(now)}, "updatedAt" = ${utc(now)}
        FROM stale s
       WHERE d."id" = s."id"
      RETURNING d."id", d."organizationId", s."status" AS "from", d."lastSeenAt"
    ), logged AS (
      INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
      SELECT m."organizationId", m."id", 'status_changed',
             'Status changed from ' || m."from" || ' to offline: ' || ${`no heartbeat for ${MISSED_INTERVALS_BEFORE_OFFLINE} intervals`}::text,
             jsonb_build_object('from', m."from", 'to', 'offline', 'reason', 'missed_heartbeats',
                                'lastSeenAt', to_char(m."lastSeenAt", 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
             'system', NULL, ${utc(now)}
        FROM marked m
      RETURNING 1
    )
    SELECT m."organizationId", m."id" AS "deviceId", m."from" FROM marked m`;
}

/** Runs detection and publishes one device.status_changed event per device that went offline. */
export async function detectOfflineDevices(db: DbTx, bus: EventBus, heartbeatIntervalSeconds: number, now = new Date()) {
  const transitions = await markOfflineDevices(db, now, heartbeatIntervalSeconds);
  const at = now.toISOString();
  bus.publishAll(
    "device.status_changed",
    transitions.map((t) => ({ organizationId: t.organizationId, deviceId: t.deviceId, from: t.from, to: "offline" as const, at })),
  );
  return transitions;
}
