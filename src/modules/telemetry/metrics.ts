// The metrics of a telemetry snapshot in one table: which column holds each, how a
// downsampling bucket aggregates it (applied by rollups.ts), and the SQL that computes the two
// percentages. Every query of telemetry (ops 11 and 13, raw values) and every alert rule reads from here, so
// identifiers in SQL only ever come from this fixed list, never from input.
import { Prisma } from "../../generated/prisma/client.js";

/**
 * How a bucket aggregates a metric:
 *  - avg: gauges (a level at an instant: CPU, memory, disk, running/failed containers);
 *  - max: cumulative counters (restartCount, uptimeSeconds): the bucket's last, highest reading;
 *  - sum: per-window counts (errorCount is "errors in the aggregation window" of one snapshot,
 *    so the errors of a bucket are the sum over its snapshots).
 */
export type Aggregate = "avg" | "max" | "sum";

export const STORED_METRICS = {
  cpuUsagePercent: "avg",
  memoryUsedBytes: "avg",
  memoryTotalBytes: "avg",
  diskUsedBytes: "avg",
  diskTotalBytes: "avg",
  uptimeSeconds: "max",
  restartCount: "max",
  containersRunning: "avg",
  containersFailed: "avg",
  errorCount: "sum",
} as const satisfies Record<string, Aggregate>;

export type StoredMetric = keyof typeof STORED_METRICS;
export const STORED_METRIC_NAMES = Object.keys(STORED_METRICS) as StoredMetric[];

/** Computed from used and total; never stored. */
export const COMPUTED_METRICS = ["memoryUsagePercent", "diskUsagePercent"] as const;
export type ComputedMetric = (typeof COMPUTED_METRICS)[number];

export type Metric = StoredMetric | ComputedMetric;
export const METRIC_NAMES = [...STORED_METRIC_NAMES, ...COMPUTED_METRICS] as unknown as [Metric, ...Metric[]];

const PERCENT_PARTS: Record<ComputedMetric, [StoredMetric, StoredMetric]> = {
  memoryUsagePercent: ["memoryUsedBytes", "memoryTotalBytes"],
  diskUsagePercent: ["diskUsedBytes", "diskTotalBytes"],
};

const col = (alias: string, name: StoredMetric) => `${alias}."${name}"`;

/** The value of `metric` in one row of a snapshot table (null when not reported). */
export function metricExpression(metric: Metric, alias = "s"): Prisma.Sql {
  if (metric in PERCENT_PARTS) {
    const [used, total] = PERCENT_PARTS[metric as ComputedMetric];
    return Prisma.raw(`(100.0 * ${col(alias, used)} / NULLIF(${col(alias, total)}, 0))::float8`);
  }
  return Prisma.raw(`${col(alias, metric as StoredMetric)}::float8`);
}

/** Percent of used over total, or undefined when either is missing or total is 0. */
export function percentOf(used: number | null | undefined, total: number | null | undefined): number | undefined {
  if (used == null || total == null || total === 0) return undefined;
  return (100 * used) / total;
}
