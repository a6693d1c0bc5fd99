// The device activity log (DeviceEvent rows): written in the same transaction as the change
// it describes, read newest first by GET /devices/{id}/activity.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import type { DeviceEventType } from "./schemas.js";

export interface Actor {
  type: "user" | "api_key" | "device" | "system";
  id: string | null;
}

export const SYSTEM_ACTOR: Actor = { type: "system", id: null };

export function actorOf(principal: Principal): Actor {
  return { type: principal.kind, id: principal.apiKeyId ?? principal.userId };
}

export interface DeviceEventInput {
  organizationId: string;
  deviceId: string;
  type: DeviceEventType;
  message: string;
  data?: Record<string, unknown>;
}

export async function recordDeviceEvents(db: DbTx, actor: Actor, events: DeviceEventInput[]) {
  if (events.length === 0) return;
  await db.deviceEvent.createMany({
    data: events.map((e) => ({
      organizationId: e.organizationId,
      deviceId: e.deviceId,
      type: e.type,
      message: e.message.slice(0, 1000),
      data: (e.data ?? {}) as object,
      actorType: actor.type,
      actorId: actor.id,
    })),
  });
}

export function recordDeviceEvent(db: DbTx, actor: Actor, event: DeviceEventInput) {
  return recordDeviceEvents(db, actor, [event]);
}
