// Fleet-wide (or selector-wide) telemetry over time, for the console's overview and for
// dashboards: per interval bucket, how many devices reported, their average and 95th
// percentile CPU, and failed containers. Computed from the per-device rollups (never raw
// snapshots): each device first gets one value per bucket (its own average CPU, its highest
// count of failed containers), then the fleet's figures are taken across devices, so a device
// sending every 5 s weighs as much as one sending every minute.
//
// Two paths, one computation (fleetBucketsSql):
// * with a label selector, the selected devices' per-device rollups are read at query time;
// * the whole fleet reads TelemetryFleetRollup, the same figures precomputed per organization
//   and bucket by the telemetry.fleet-rollups job (fleet-rollups.ts): hundreds of rows instead
//   of one per device and bucket (72 million for 30 days of hours over 100,000 devices).
import type { DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { and, selectorCondition } from "../devices/sql.js";
import type { Labels } from "../devices/labels.js";
import { badRequest } from "../../trpc/errors.js";
import { MAX_BUCKETS, resolveRange } from "../telemetry/query.js";
import { EPOCH, ROLLUPS, SOURCE_NAMES, type RollupName } from "../telemetry/rollups.js";
import { INTERVALS } from "../telemetry/schemas.js";
import type { FleetSeriesInput } from "./schemas.js";

const DEFAULT_RANGE_MS = 24 * 3600_000;

export type FleetInterval = FleetSeriesInput["interval"];
export const FLEET_INTERVALS = ["5m", "1h", "1d"] as const satisfies readonly FleetInterval[];
/** The rollup each interval reads: the largest whose bucket divides it. */
export const ROLLUP_OF: Record<FleetInterval, RollupName> = { "5m": "5m", "1h": "1h", "1d": "1h" };

/** One bucket's figures, as TelemetryFleetRollup stores them. */
export type FleetBucketRow = {
  bucket: Date; devicesReporting: number; cpuAvg: number | null; cpuP95: number | null;
  containersFailed: number; devicesWithFailedContainers: number;
};

/**
 * The fleet's figures per (organizationId, bucket of `interval`), from the rows r of the
 * interval's per-device rollup that `where` keeps, each joined to its Device d of the same
 * organization (a deleted device no longer counts); `join` may narrow r further. Both the
 * selector query and the job's recompute of the whole fleet run this, so they agree.
 */
export function fleetBucketsSql(interval: FleetInterval, where: Prisma.Sql, join: Prisma.Sql = Prisma.empty): Prisma.Sql {
  const rollup = ROLLUPS[ROLLUP_OF[interval]];
  return Prisma.sql`
    SELECT "organizationId", "bucket", count(*)::int AS "devicesReporting",
           avg("cpu")::float8 AS "cpuAvg",
           percentile_cont(0.95) WITHIN GROUP (ORDER BY "cpu")::float8 AS "cpuP95",
           coalesce(sum("failed"), 0)::int AS "containersFailed",
           (count(*) FILTER (WHERE "failed" > 0))::int AS "devicesWithFailedContainers"
      FROM (
        SELECT r."organizationId", date_bin(${`${INTERVALS[interval]} seconds`}::interval, r."bucket", ${Prisma.raw(EPOCH)}) AS "bucket", r."deviceId",
               sum(r."cpuUsagePercentSum") / NULLIF(sum(r."cpuUsagePercentCount"), 0) AS "cpu",
               max(r."containersFailedMax") AS "failed"
          FROM ${Prisma.raw(`"${rollup.table}"`)} r
          JOIN "Device" d ON d."id" = r."deviceId" AND d."organizationId" = r."organizationId"
          ${join}
         WHERE ${where}
         GROUP BY 1, 2, 3
      ) per_device
     GROUP BY 1, 2`;
}

export async function fleetSeries(db: DbTx, organizationId: string, input: FleetSeriesInput & { selector: Labels }) {
  const to = input.to ? new Date(input.to) : new Date();
  const range = resolveRange({ from: input.from ?? new Date(to.getTime() - DEFAULT_RANGE_MS).toISOString(), to: to.toISOString() });
  const seconds = INTERVALS[input.interval];
  const buckets = Math.floor((range.to.getTime() - range.from.getTime()) / (seconds * 1000)) + 1;
  if (buckets > MAX_BUCKETS) {
    throw badRequest(`Invalid input: the range holds ${buckets} buckets of ${input.interval}; at most ${MAX_BUCKETS}: choose a larger interval or a shorter range`);
  }
  // Every interval bucket overlapping [from, to] counts whole: [bucket of from, end of the bucket of to).
  const step = seconds * 1000;
  const fromBucket = new Date(Math.floor(range.from.getTime() / step) * step).toISOString();
  const toEnd = new Date((Math.floor(range.to.getTime() / step) + 1) * step).toISOString();
  const wholeFleet = Object.keys(input.selector).length === 0;
  const rows: (FleetBucketRow & { computedAt?: Date })[] = wholeFleet
    ? await db.$queryRaw<(FleetBucketRow & { computedAt: Date })[]>`
        SELECT "bucket", "devicesReporting", "cpuAvg", "cpuP95", "containersFailed", "devicesWithFailedContainers", "computedAt"
          FROM "TelemetryFleetRollup"
         WHERE "organizationId" = ${organizationId}::uuid AND "interval" = ${input.interval}
           AND "bucket" >= ${fromBucket}::timestamptz AND "bucket" < ${toEnd}::timestamptz
         ORDER BY "bucket"`
    : await db.$queryRaw<FleetBucketRow[]>`
        SELECT * FROM (${fleetBucketsSql(input.interval, and([
          Prisma.sql`r."organizationId" = ${organizationId}::uuid`,
          selectorCondition(input.selector, "d"),
          Prisma.sql`r."bucket" >= ${fromBucket}::timestamptz`,
          Prisma.sql`r."bucket" < ${toEnd}::timestamptz`,
        ]))}) f ORDER BY "bucket"`;
  return {
    interval: input.interval,
    from: range.from.toISOString(),
    to: range.to.toISOString(),
    source: SOURCE_NAMES[ROLLUP_OF[input.interval]],
    data: rows.map((r) => ({
      timestamp: new Date(r.bucket).toISOString(),
      devicesReporting: r.devicesReporting,
      cpuUsagePercentAvg: r.cpuAvg,
      cpuUsagePercentP95: r.cpuP95,
      containersFailed: r.containersFailed,
      devicesWithFailedContainers: r.devicesWithFailedContainers,
      ...(r.computedAt ? { computedAt: new Date(r.computedAt).toISOString() } : {}),
    })),
  };
}
