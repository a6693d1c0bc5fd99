// GET /api/v1/fleet/metrics: one organization's fleet in the Prometheus text format, for a
// scraper holding an API key (telemetry:read), docs/observability.md. Cardinality is bounded
// whatever the fleet's size: devices by status (five series), by the values of the label keys
// FLEET_METRICS_LABEL_KEYS names (the FLEET_METRICS_MAX_LABEL_VALUES most common values per key,
// the rest summed as "__other__"), CPU/memory/disk of the latest snapshots as histograms (eleven
// buckets each), alerts firing by severity. Per-device series only for the devices a selector
// names (?devices=site=berlin), at most FLEET_METRICS_MAX_DEVICES of them (more: 400).
// Set-based SQL: one statement per family, on the organization's indexes.
import express, { type Request, type Router } from "express";
import { Registry } from "prom-client";
import { z } from "zod";
import type { Services } from "../../services.js";
import type { DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { badRequest } from "../../trpc/errors.js";
import { metricExpression } from "../telemetry/metrics.js";
import { byStatusOf } from "../devices/schemas.js";
import { parseSelectorString, type Labels } from "../devices/labels.js";
import { selectorCondition } from "../devices/sql.js";

const LABEL = "fleet.metrics";
/** Upper bounds of the usage histograms' buckets, in percent. */
export const PERCENT_BUCKETS = [10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 100];
/** Label values past FLEET_METRICS_MAX_LABEL_VALUES of a key are counted under this one. */
export const OTHER_VALUE = "__other__";

const USAGE = [
  { family: "fleet_device_cpu_usage_percent", what: "CPU use", expression: Prisma.raw(`l."cpuUsagePercent"::float8`) },
  { family: "fleet_device_memory_usage_percent", what: "memory use", expression: metricExpression("memoryUsagePercent", "l") },
  { family: "fleet_device_disk_usage_percent", what: "disk use", expression: metricExpression("diskUsagePercent", "l") },
] as const;

const query = z.object({ devices: z.string().trim().min(1).max(500).optional() });

type Value = { labels?: Record<string, string | number>; value: number; metricName?: string };
type Family = { name: string; help: string; type: "gauge" | "histogram"; values: Value[] };

export function fleetMetricsRoutes(services: Services): Router {
  const r = express.Router();
  r.get("/fleet/metrics", scraperKey, guardedJsonRoute(services, { label: LABEL, access: { permission: "telemetry:read" }, body: z.object({}) }, async ({ principal, req, res }) => {
    const parsed = query.safeParse(req.query);
    if (!parsed.success) throw badRequest("devices: a label selector of at most 500 characters (key=value,key2=value2)");
    const selector = parsed.data.devices === undefined ? null : parseSelectorString(parsed.data.devices);
    const families = await fleetFamilies(services, principal.organizationId, selector);
    const registry = new Registry();
    for (const f of families) registry.registerMetric({ name: f.name, get: async () => f } as never);
    res.setHeader("Cache-Control", "no-store");
    res.status(200).type(registry.contentType).send(await registry.metrics());
  }));
  return r;
}

/** A scraper's API key may come as `Authorization: Bearer fm_...` (Prometheus' `authorization` block). */
function scraperKey(req: Request, _res: unknown, next: () => void) {
  const bearer = /^Bearer\s+(fm_\S+)$/i.exec(req.headers.authorization?.trim() ?? "")?.[1];
  if (bearer && req.headers["x-api-key"] === undefined) {
    req.headers["x-api-key"] = bearer;
    delete req.headers.authorization;
  }
  next();
}

export async function fleetFamilies(services: Services, organizationId: string, selector: Labels | null): Promise<Family[]> {
  const db = services.prisma;
  const { FLEET_METRICS_LABEL_KEYS: keys, FLEET_METRICS_MAX_LABEL_VALUES: maxValues, FLEET_METRICS_MAX_DEVICES: maxDevices } = services.config;
  const [statuses, byLabel, usage, alerts, perDevice] = await Promise.all([
    db.$queryRaw<{ status: string; count: number }[]>`
      SELECT "status", count(*)::int AS "count" FROM "Device" WHERE "organizationId" = ${organizationId}::uuid GROUP BY "status"`,
    keys.length === 0 ? [] : devicesByLabel(db, organizationId, keys, maxValues),
    usageHistograms(db, organizationId),
    db.$queryRaw<{ severity: string; count: number }[]>`
      SELECT r."severity", count(*)::int AS "count" FROM "AlertState" s JOIN "AlertRule" r ON r."id" = s."ruleId"
       WHERE s."organizationId" = ${organizationId}::uuid AND s."state" = 'firing' AND r."enabled" GROUP BY r."severity"`,
    selector === null ? null : devicesOf(db, organizationId, selector, maxDevices),
  ]);
  const families: Family[] = [
    {
      name: "fleet_devices", type: "gauge", help: "Devices of the organization by status",
      values: Object.entries(byStatusOf(statuses)).map(([status, count]) => ({ labels: { status }, value: count })),
    },
  ];
  if (keys.length > 0) {
    families.push({
      name: "fleet_devices_by_label", type: "gauge",
      help: `Devices by the value of each label key of FLEET_METRICS_LABEL_KEYS (devices without the key are not counted; past the ${maxValues} most common values, "${OTHER_VALUE}")`,
      values: byLabel.map((row) => ({ labels: { label_key: row.key, label_value: row.value }, value: row.count })),
    });
  }
  for (const [i, u] of USAGE.entries()) {
    const row = usage[0];
    const counts = PERCENT_BUCKETS.map((_, b) => Number(row[`b${i}_${b}`] ?? 0));
    const count = Number(row[`count${i}`] ?? 0);
    families.push({
      name: u.family, type: "histogram", help: `${u.what} of each device's latest snapshot, in percent (devices without the figure are not counted)`,
      values: [
        ...PERCENT_BUCKETS.map((le, b) => ({ metricName: `${u.family}_bucket`, labels: { le }, value: counts[b] })),
        { metricName: `${u.family}_bucket`, labels: { le: "+Inf" }, value: count },
        { metricName: `${u.family}_sum`, value: Number(row[`sum${i}`] ?? 0) },
        { metricName: `${u.family}_count`, value: count },
      ],
    });
  }
  const bySeverity: Record<string, number> = { info: 0, warning: 0, critical: 0 };
  for (const a of alerts) if (a.severity in bySeverity) bySeverity[a.severity] = a.count;
  families.push({
    name: "fleet_alerts_firing", type: "gauge", help: "Alert states firing (of enabled rules) by severity",
    values: Object.entries(bySeverity).map(([severity, value]) => ({ labels: { severity }, value })),
  });
  if (perDevice) families.push(...perDeviceFamilies(perDevice));
  return families;
}

/** Devices per value of each key; the first `maxValues` values of a key by count, the rest as one. */
function devicesByLabel(db: DbTx, organizationId: string, keys: string[], maxValues: number) {
  return db.$queryRaw<{ key: string; value: string; count: number }[]>`
    WITH counted AS (
      SELECT k."key", d."labels" ->> k."key" AS "value", count(*)::int AS "count"
        FROM "Device" d CROSS JOIN unnest(${keys}::text[]) AS k("key")
       WHERE d."organizationId" = ${organizationId}::uuid AND d."labels" ? k."key"
       GROUP BY 1, 2
    ), ranked AS (
      SELECT *, row_number() OVER (PARTITION BY "key" ORDER BY "count" DESC, "value") AS "rank" FROM counted
    )
    SELECT "key", CASE WHEN "rank" <= ${maxValues} THEN "value" ELSE ${OTHER_VALUE} END AS "value", sum("count")::int AS "count"
      FROM ranked GROUP BY 1, 2 ORDER BY 1, 3 DESC, 2`;
}

/** The three usage histograms in one pass over the organization's latest snapshots. */
function usageHistograms(db: DbTx, organizationId: string) {
  const columns = USAGE.flatMap((u, i) => [
    ...PERCENT_BUCKETS.map((le, b) => Prisma.sql`count(*) FILTER (WHERE ${u.expression} <= ${Prisma.raw(String(le))})::int AS ${Prisma.raw(`"b${i}_${b}"`)}`),
    Prisma.sql`count(${u.expression})::int AS ${Prisma.raw(`"count${i}"`)}`,
    Prisma.sql`coalesce(sum(${u.expression}), 0)::float8 AS ${Prisma.raw(`"sum${i}"`)}`,
  ]);
  return db.$queryRaw<Record<string, number>[]>`
    SELECT ${Prisma.join(columns, ", ")} FROM "DeviceTelemetryLatest" l WHERE l."organizationId" = ${organizationId}::uuid`;
}

type DeviceRow = { id: string; name: string; status: string; cpu: number | null; memory: number | null; disk: number | null; total: number };

/** The devices the selector names with their latest figures; more than `limit` is refused. */
async function devicesOf(db: DbTx, organizationId: string, selector: Labels, limit: number): Promise<DeviceRow[]> {
  const rows = await db.$queryRaw<DeviceRow[]>`
    SELECT d."id", d."name", d."status", l."cpuUsagePercent"::float8 AS "cpu",
           ${metricExpression("memoryUsagePercent", "l")} AS "memory", ${metricExpression("diskUsagePercent", "l")} AS "disk",
           count(*) OVER ()::int AS "total"
      FROM "Device" d LEFT JOIN "DeviceTelemetryLatest" l ON l."deviceId" = d."id"
     WHERE d."organizationId" = ${organizationId}::uuid AND ${selectorCondition(selector)}
     ORDER BY d."name", d."id" LIMIT ${limit + 1}`;
  if (rows.length > limit) {
    throw badRequest(`devices: the selector matches ${rows[0].total} devices, more than ${limit} (FLEET_METRICS_MAX_DEVICES); name fewer`);
  }
  return rows;
}

function perDeviceFamilies(rows: DeviceRow[]): Family[] {
  const labels = (d: DeviceRow) => ({ device_id: d.id, device: d.name });
  const gauge = (name: string, help: string, read: (d: DeviceRow) => number | null): Family => ({
    name, type: "gauge", help,
    values: rows.flatMap((d) => (read(d) == null ? [] : [{ labels: labels(d), value: read(d)! }])),
  });
  return [
    gauge("fleet_device_online", "1 when the device is online, 0 otherwise (devices of the ?devices= selector)", (d) => (d.status === "online" ? 1 : 0)),
    gauge("fleet_device_latest_cpu_usage_percent", "CPU use of the device's latest snapshot (devices of the ?devices= selector)", (d) => d.cpu),
    gauge("fleet_device_latest_memory_usage_percent", "Memory use of the device's latest snapshot (devices of the ?devices= selector)", (d) => d.memory),
    gauge("fleet_device_latest_disk_usage_percent", "Disk use of the device's latest snapshot (devices of the ?devices= selector)", (d) => d.disk),
  ];
}

export const fleetMetricsOpenApiPaths: ExtraPaths = {
  "/fleet/metrics": {
    get: {
      operationId: "fleet-metrics",
      tags: ["Fleet"],
      summary: "The organization's fleet in the Prometheus text format, for a scraper (telemetry:read)",
      description:
        "Devices by status; devices by the values of the label keys FLEET_METRICS_LABEL_KEYS names (the most common " +
        "FLEET_METRICS_MAX_LABEL_VALUES values per key, the rest as __other__); histograms of CPU, memory and disk use of each " +
        "device's latest snapshot (buckets 10 to 100 percent); alerts firing by severity. No per-device series unless `devices` " +
        "names them with a label selector, at most FLEET_METRICS_MAX_DEVICES devices (more: 400). The API key may also be sent " +
        "as Authorization: Bearer fm_... (Prometheus' authorization block). docs/observability.md.",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      parameters: [
        {
          name: "devices", in: "query", required: false,
          description: "label selector (key=value,key2=value2) of the devices to expose one by one",
          schema: { type: "string", maxLength: 500 },
        },
      ],
      responses: {
        200: { description: "Prometheus text format 0.0.4", content: { "text/plain": { schema: { type: "string" } } } },
        400: errorResponse("The selector is malformed or matches more devices than FLEET_METRICS_MAX_DEVICES"),
        401: errorResponse("No valid credential"),
        403: errorResponse("Missing permission telemetry:read"),
      },
    },
  },
};
