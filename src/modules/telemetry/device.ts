// The tenant check of every per-device read: the device must belong to the caller's
// organization, otherwise it simply does not exist (404, never 403).
import type { DbTx } from "../../db/client.js";
import { notFound } from "../../trpc/errors.js";

export async function requireDevice(db: DbTx, organizationId: string, deviceId: string): Promise<{ id: string; name: string }> {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true, name: true } });
  if (!device) throw notFound("Device");
  return device;
}
