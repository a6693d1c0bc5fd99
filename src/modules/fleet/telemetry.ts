// Fleet-wide (or selector-wide) telemetry over time, for the console's overview and for
// dashboards: per interval bucket, how many devices reported, their average and 95th
// percentile CPU, and failed containers. Read from the per-device rollups (never raw
// snapshots): each device first gets one value per bucket (its own average CPU, its highest
// count of failed containers), then the fleet's figures are taken across devices, so a device
// sending every 5 s weighs as much as one sending every minute.
import type { DbTx } from "../../db/client.js";
import { Prisma } from "../../generated/prisma/client.js";
import { and, selectorCondition } from "../devices/sql.js";
import type { Labels } from "../devices/labels.js";
import { badRequest } from "../../trpc/errors.js";
import { MAX_BUCKETS, resolveRange } from "../telemetry/query.js";
import { ROLLUPS, SOURCE_NAMES, type RollupName } from "../telemetry/rollups.js";
import { INTERVALS } from "../telemetry/schemas.js";
import type { FleetSeriesInput } from "./schemas.js";

const DEFAULT_RANGE_MS = 24 * 3600_000;
/** The rollup each interval reads: the largest whose bucket divides it. */
const ROLLUP_OF: Record<FleetSeriesInput["interval"], RollupName> = { "5m": "5m", "1h": "1h", "1d": "1h" };

type Row = {
  bucket: Date; devicesReporting: number; cpuAvg: number | null; cpuP95: number | null;
  containersFailed: number; devicesWithFailedContainers: number;
};

export async function fleetSeries(db: DbTx, organizationId: string, input: FleetSeriesInput & { selector: Labels }) {
  const to = input.to ? new Date(input.to) : new Date();
  const range = resolveRange({ from: input.from ?? new Date(to.getTime() - DEFAULT_RANGE_MS).toISOString(), to: to.toISOString() });
  const seconds = INTERVALS[input.interval];
  const buckets = Math.floor((range.to.getTime() - range.from.getTime()) / (seconds * 1000)) + 1;
  if (buckets > MAX_BUCKETS) {
    throw badRequest(`Invalid input: the range holds ${buckets} buckets of ${input.interval}; at most ${MAX_BUCKETS}: choose a larger interval or a shorter range`);
  }
  const rollup = ROLLUPS[ROLLUP_OF[input.interval]];
  // Whole rollup buckets overlapping the range: the one holding `from` counts entirely.
  const fromBucket = new Date(Math.floor(range.from.getTime() / (rollup.seconds * 1000)) * rollup.seconds * 1000);
  const rows = await db.$queryRaw<Row[]>`
    WITH per_device AS (
      SELECT date_bin(${`${seconds} seconds`}::interval, r."bucket", TIMESTAMPTZ '1970-01-01 00:00:00+00') AS "bucket", r."deviceId",
             sum(r."cpuUsagePercentSum") / NULLIF(sum(r."cpuUsagePercentCount"), 0) AS "cpu",
             max(r."containersFailedMax") AS "failed"
        FROM ${Prisma.raw(`"${rollup.table}"`)} r
        JOIN "Device" d ON d."id" = r."deviceId"
       WHERE ${and([
         Prisma.sql`r."organizationId" = ${organizationId}::uuid`,
         Prisma.sql`d."organizationId" = ${organizationId}::uuid`,
         selectorCondition(input.selector, "d"),
         Prisma.sql`r."bucket" >= ${fromBucket.toISOString()}::timestamptz`,
         Prisma.sql`r."bucket" <= ${range.to.toISOString()}::timestamptz`,
       ])}
       GROUP BY 1, 2
    )
    SELECT "bucket", count(*)::int AS "devicesReporting",
           avg("cpu")::float8 AS "cpuAvg",
           percentile_cont(0.95) WITHIN GROUP (ORDER BY "cpu")::float8 AS "cpuP95",
           coalesce(sum("failed"), 0)::int AS "containersFailed",
           (count(*) FILTER (WHERE "failed" > 0))::int AS "devicesWithFailedContainers"
      FROM per_device GROUP BY "bucket" ORDER BY "bucket"`;
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
    })),
  };
}
