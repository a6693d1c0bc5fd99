// Fleet health in five set-based queries (no per-device loop). Resource pressure and failed
// containers read DeviceTelemetryLatest (one row per device), never the raw snapshots.
import type { DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { metricExpression } from "../telemetry/metrics.js";
import { byStatusOf } from "../devices/schemas.js";
import { utc } from "../devices/sql.js";
import type { FleetHealthInput } from "./schemas.js";

const TOP = 20;
const MEMORY_PERCENT = metricExpression("memoryUsagePercent", "l");
const DISK_PERCENT = metricExpression("diskUsagePercent", "l");

type PressureRow = {
  deviceId: string; name: string; timestamp: Date; total: number;
  cpu: number | null; memory: number | null; disk: number | null;
};

export async function fleetHealth(db: DbTx, organizationId: string, input: FleetHealthInput, now = new Date()) {
  const [cpu, memory, disk] = [input.cpuThreshold, input.memoryThreshold, input.diskThreshold].map((v) => Prisma.sql`${v}::float8`);
  const soon = new Date(now.getTime() + input.certificateDays * 86_400_000);
  const [statuses, pressure, failed, certificates, alerts] = await Promise.all([
    db.$queryRaw<{ status: string; count: number }[]>`
      SELECT "status", count(*)::int AS "count" FROM "Device" WHERE "organizationId" = ${organizationId}::uuid GROUP BY "status"`,
    db.$queryRaw<PressureRow[]>`
      SELECT p.*, count(*) OVER ()::int AS "total" FROM (
        SELECT l."deviceId", d."name", l."timestamp", l."cpuUsagePercent" AS "cpu", ${MEMORY_PERCENT} AS "memory", ${DISK_PERCENT} AS "disk"
          FROM "DeviceTelemetryLatest" l JOIN "Device" d ON d."id" = l."deviceId"
         WHERE l."organizationId" = ${organizationId}::uuid
      ) p
      WHERE p."cpu" > ${cpu} OR p."memory" > ${memory} OR p."disk" > ${disk}
      ORDER BY GREATEST(coalesce(p."cpu" - ${cpu}, -1000), coalesce(p."memory" - ${memory}, -1000), coalesce(p."disk" - ${disk}, -1000)) DESC, p."deviceId"
      LIMIT ${TOP}`,
    db.$queryRaw<{ deviceId: string; name: string; timestamp: Date; containersFailed: number; devices: number; containers: number }[]>`
      SELECT l."deviceId", d."name", l."timestamp", l."containersFailed",
             count(*) OVER ()::int AS "devices", (sum(l."containersFailed") OVER ())::int AS "containers"
        FROM "DeviceTelemetryLatest" l JOIN "Device" d ON d."id" = l."deviceId"
       WHERE l."organizationId" = ${organizationId}::uuid AND l."containersFailed" > 0
       ORDER BY l."containersFailed" DESC, l."deviceId" LIMIT ${TOP}`,
    // A device's certificate that matters is its newest unrevoked one (a renewal supersedes the old).
    db.$queryRaw<{ expiringSoon: number; expired: number }[]>`
      SELECT count(*) FILTER (WHERE c."notAfter" > ${utc(now)} AND c."notAfter" <= ${utc(soon)})::int AS "expiringSoon",
             count(*) FILTER (WHERE c."notAfter" <= ${utc(now)})::int AS "expired"
        FROM (SELECT "deviceId", max("notAfter") AS "notAfter" FROM "DeviceCertificate"
               WHERE "organizationId" = ${organizationId}::uuid AND NOT "revoked" GROUP BY "deviceId") c
        JOIN "Device" d ON d."id" = c."deviceId"`,
    db.$queryRaw<{ severity: string; count: number }[]>`
      SELECT r."severity", count(*)::int AS "count" FROM "AlertState" s JOIN "AlertRule" r ON r."id" = s."ruleId"
       WHERE s."organizationId" = ${organizationId}::uuid AND s."state" = 'firing' AND r."enabled" GROUP BY r."severity"`,
  ]);

  const byStatus = byStatusOf(statuses);
  const bySeverity = { info: 0, warning: 0, critical: 0 };
  for (const a of alerts) if (a.severity in bySeverity) bySeverity[a.severity as keyof typeof bySeverity] = a.count;
  return {
    generatedAt: now.toISOString(),
    devices: { total: statuses.reduce((n, s) => n + s.count, 0), byStatus },
    resourcePressure: {
      thresholds: { cpuUsagePercent: input.cpuThreshold, memoryUsagePercent: input.memoryThreshold, diskUsagePercent: input.diskThreshold },
      count: pressure[0]?.total ?? 0,
      devices: pressure.map((p) => ({
        deviceId: p.deviceId,
        name: p.name,
        timestamp: new Date(p.timestamp).toISOString(),
        cpuUsagePercent: p.cpu,
        memoryUsagePercent: p.memory,
        diskUsagePercent: p.disk,
        over: [
          ...(p.cpu != null && p.cpu > input.cpuThreshold ? ["cpu" as const] : []),
          ...(p.memory != null && p.memory > input.memoryThreshold ? ["memory" as const] : []),
          ...(p.disk != null && p.disk > input.diskThreshold ? ["disk" as const] : []),
        ],
      })),
    },
    failedContainers: {
      devices: failed[0]?.devices ?? 0,
      containers: failed[0]?.containers ?? 0,
      items: failed.map((f) => ({ deviceId: f.deviceId, name: f.name, timestamp: new Date(f.timestamp).toISOString(), containersFailed: f.containersFailed })),
    },
    certificates: { expiringWithinDays: input.certificateDays, expiringSoon: certificates[0]?.expiringSoon ?? 0, expired: certificates[0]?.expired ?? 0 },
    alerts: { firing: Object.values(bySeverity).reduce((a, b) => a + b, 0), bySeverity },
  };
}
