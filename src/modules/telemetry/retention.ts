// Retention: raw snapshots older than TELEMETRY_RETENTION_DAYS and log lines older than
// LOG_RETENTION_DAYS go by dropping their day's partition (constant time whatever its size,
// src/modules/telemetry/partitions.ts); the few that sit in a default partition are deleted
// in bounded chunks (each chunk its own short statement, so no long lock and no huge
// transaction), within a time budget per run. The same run sweeps what
// the missing foreign keys leave behind: telemetry, logs and alert states of deleted devices,
// alert rules, targets and whole-fleet series of deleted organizations, old delivery history,
// spent realtime tickets.
import type { Services } from "../../services.js";
import { Prisma } from "../../generated/prisma/client.js";
import { pruneTickets } from "../realtime/tickets.js";
import { dropExpiredPartitions } from "./partitions.js";
import { ROLLUPS } from "./rollups.js";
import { INTERVALS } from "./schemas.js";
import { FLEET_INTERVALS, ROLLUP_OF } from "../fleet/telemetry.js";
import { markDevicesFleetDirty } from "../fleet/fleet-rollups.js";

export const PRUNE_CHUNK = 10_000;
/** Notification deliveries (and their attempts) are kept this long. */
export const DELIVERY_HISTORY_DAYS = 30;
const ORPHAN_DEVICES_PER_RUN = 100;

export interface PruneResult {
  /** daily partitions of raw snapshots dropped whole */
  snapshotPartitions: number;
  /** daily partitions of log lines dropped whole */
  logPartitions: number;
  /** daily (5-minute) and monthly (hourly) partitions of rollups dropped whole */
  rollupPartitions: number;
  /** snapshots deleted row by row (from the default partition) */
  snapshots: number;
  /** log lines deleted row by row (from the default partition) */
  logLines: number;
  orphanDevices: number;
  orphanRows: number;
  deliveries: number;
  tickets: number;
  /** false when the time budget ran out first; the next run continues */
  complete: boolean;
}

export interface PruneOptions {
  now?: Date;
  chunk?: number;
  /** stop starting new chunks after this long (default 50 s) */
  budgetMs?: number;
  signal?: AbortSignal;
}

type Table = "TelemetrySnapshot" | "TelemetrySnapshot_default" | "DeviceLog" | "DeviceLog_default";

/** Deletes rows matching `where` in chunks until none are left or the budget ends. */
async function deleteInChunks(services: Services, table: Table, where: Prisma.Sql, chunk: number, mayContinue: () => boolean) {
  let total = 0;
  for (;;) {
    const deleted = await services.prisma.$executeRaw`
      DELETE FROM ${Prisma.raw(`"${table}"`)} WHERE ("id", "timestamp") IN (SELECT "id", "timestamp" FROM ${Prisma.raw(`"${table}"`)} WHERE ${where} LIMIT ${chunk})`;
    total += deleted;
    if (deleted < chunk) return { total, complete: true };
    if (!mayContinue()) return { total, complete: false };
  }
}

export async function pruneOnce(services: Services, options: PruneOptions = {}): Promise<PruneResult> {
  const { config, prisma } = services;
  const now = options.now ?? new Date();
  const chunk = options.chunk ?? PRUNE_CHUNK;
  const deadline = Date.now() + (options.budgetMs ?? 50_000);
  const mayContinue = () => Date.now() < deadline && !options.signal?.aborted;
  const cutoff = (days: number) => new Date(now.getTime() - days * 86_400_000).toISOString();
  const result: PruneResult = { snapshotPartitions: 0, logPartitions: 0, rollupPartitions: 0, snapshots: 0, logLines: 0, orphanDevices: 0, orphanRows: 0, deliveries: 0, tickets: 0, complete: true };

  const dropped: Array<["TelemetrySnapshot" | "DeviceLog", number, "snapshotPartitions" | "logPartitions"]> = [
    ["TelemetrySnapshot", config.TELEMETRY_RETENTION_DAYS, "snapshotPartitions"],
    ["DeviceLog", config.LOG_RETENTION_DAYS, "logPartitions"],
  ];
  for (const [table, days, key] of dropped) {
    if (days === 0 || !mayContinue()) continue;
    result[key] = (await dropExpiredPartitions(services.database.opened.raw, table, new Date(cutoff(days)), mayContinue)).length;
  }
  // Rollups keep their own, longer retention; partitions drop whole, strays of the default partition by age.
  for (const rollup of Object.values(ROLLUPS)) {
    const days = rollup.retentionDays(config);
    if (days === 0 || !mayContinue()) continue;
    const dropped = await dropExpiredPartitions(services.database.opened.raw, rollup.table, new Date(cutoff(days)), mayContinue);
    result.rollupPartitions += dropped.length;
    await prisma.$executeRawUnsafe(`DELETE FROM "${rollup.table}_default" WHERE "bucket" < $1::timestamptz`, cutoff(days));
  }
  // The whole-fleet series and its pending marks follow the rollup they are computed from, a
  // bucket going once it is entirely older than that retention (a small table: a plain delete).
  for (const interval of FLEET_INTERVALS) {
    const days = ROLLUPS[ROLLUP_OF[interval]].retentionDays(config);
    if (days === 0) continue;
    const lastGone = new Date(new Date(cutoff(days)).getTime() - INTERVALS[interval] * 1000).toISOString();
    await prisma.$executeRaw`DELETE FROM "TelemetryFleetRollup" WHERE "bucket" <= ${lastGone}::timestamptz AND "interval" = ${interval}`;
    await prisma.$executeRaw`DELETE FROM "TelemetryFleetDirty" WHERE "bucket" <= ${lastGone}::timestamptz AND "interval" = ${interval}`;
  }
  const passes: Array<[Table, number, keyof PruneResult]> = [
    // rows that found no partition of their day (see partitions.ts): rare, deleted by age
    ["TelemetrySnapshot_default", config.TELEMETRY_RETENTION_DAYS, "snapshots"],
    ["DeviceLog_default", config.LOG_RETENTION_DAYS, "logLines"],
  ];
  for (const [table, days, key] of passes) {
    if (days === 0 || !mayContinue()) continue;
    const { total, complete } = await deleteInChunks(services, table, Prisma.sql`"timestamp" < ${cutoff(days)}::timestamptz`, chunk, mayContinue);
    (result[key] as number) = total;
    result.complete &&= complete;
  }
  // Stale source summaries go with their lines.
  if (config.LOG_RETENTION_DAYS > 0) {
    await prisma.$executeRaw`DELETE FROM "DeviceLogSource" WHERE "lastLogAt" < ${cutoff(config.LOG_RETENTION_DAYS)}::timestamptz`;
  }

  // Deleted devices: found through the per-device tables, never by scanning raw rows.
  const orphans = await prisma.$queryRaw<{ deviceId: string }[]>`
    SELECT x."deviceId" FROM (
      SELECT "deviceId" FROM "DeviceTelemetryLatest" UNION SELECT DISTINCT "deviceId" FROM "DeviceLogSource"
    ) x WHERE NOT EXISTS (SELECT 1 FROM "Device" d WHERE d."id" = x."deviceId") LIMIT ${ORPHAN_DEVICES_PER_RUN}`;
  if (orphans.length > 0 && mayContinue()) {
    const ids = orphans.map((o) => o.deviceId);
    const ofDevices = Prisma.sql`"deviceId" = ANY(${ids}::uuid[])`;
    const snapshots = await deleteInChunks(services, "TelemetrySnapshot", ofDevices, chunk, mayContinue);
    const logs = snapshots.complete ? await deleteInChunks(services, "DeviceLog", ofDevices, chunk, mayContinue) : { total: 0, complete: false };
    result.orphanRows = snapshots.total + logs.total;
    if (snapshots.complete && logs.complete) {
      // Only once their rows are gone, or the next run could not find these devices again.
      await markDevicesFleetDirty(prisma, ids); // their buckets' whole-fleet figures are computed again without them
      for (const rollup of Object.values(ROLLUPS)) await prisma.$executeRaw`DELETE FROM ${Prisma.raw(`"${rollup.table}"`)} WHERE ${ofDevices}`;
      await prisma.$executeRaw`DELETE FROM "DeviceTelemetryLatest" WHERE ${ofDevices}`;
      await prisma.$executeRaw`DELETE FROM "DeviceLogSource" WHERE ${ofDevices}`;
      result.orphanDevices = ids.length;
    } else {
      result.complete = false;
    }
  }
  await prisma.$executeRaw`DELETE FROM "AlertState" s WHERE s."subjectType" = 'device' AND NOT EXISTS (SELECT 1 FROM "Device" d WHERE d."id" = s."subjectId")`;
  await prisma.$executeRaw`DELETE FROM "AlertState" s WHERE s."subjectType" = 'config_source' AND NOT EXISTS (SELECT 1 FROM "ConfigSource" c WHERE c."id" = s."subjectId")`;
  await prisma.$executeRaw`DELETE FROM "AlertRule" r WHERE NOT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = r."organizationId")`;
  await prisma.$executeRaw`DELETE FROM "NotificationTarget" t WHERE NOT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = t."organizationId")`;
  await prisma.$executeRaw`DELETE FROM "TelemetryFleetRollup" f WHERE NOT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = f."organizationId")`;
  await prisma.$executeRaw`DELETE FROM "TelemetryFleetDirty" f WHERE NOT EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = f."organizationId")`;
  const { count } = await prisma.notificationDelivery.deleteMany({
    where: { createdAt: { lt: new Date(now.getTime() - DELIVERY_HISTORY_DAYS * 86_400_000) }, status: { in: ["delivered", "failed"] } },
  });
  result.deliveries = count;
  result.tickets = await pruneTickets(prisma, now);
  return result;
}
