// Telemetry DTOs: the agent's snapshot batch (ingest), the snapshot resource of the spec
// (ops 11 and 13) and the inputs of the range queries.
import { z } from "zod";
import { isoInstant } from "../../lib/iso-time.js";
import { pagingInput } from "../../lib/paging.js";
import { METRIC_NAMES, percentOf, STORED_METRIC_NAMES, type StoredMetric } from "./metrics.js";

/** Most items one ingest call may carry (telemetry and logs alike). */
export const MAX_BATCH_ITEMS = 1000;
/** Device clocks drift: timestamps up to this far in the future are accepted, later ones refused. */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;

// Body numbers are wrapped in a pipe so that trpc-to-openapi's body coercion (which would
// turn null or "" into 0) does not apply: a wrong type is a 400, not a silent zero.
const strict = (schema: z.ZodNumber) => schema.pipe(z.number());
const count = () => strict(z.number().int().min(0).max(2_147_483_647)).optional();
const bytes = () => strict(z.number().int().min(0).max(Number.MAX_SAFE_INTEGER)).optional();

/** ISO 8601 with an offset (Z or ±hh:mm), not later than now plus the allowed skew. */
export const sampleTimestamp = z.iso
  .datetime({ offset: true })
  .refine((v) => Date.parse(v) <= Date.now() + MAX_FUTURE_SKEW_MS, {
    message: `timestamp is in the future (more than ${MAX_FUTURE_SKEW_MS / 60_000} minutes ahead of the server clock)`,
  });

export const snapshotInput = z
  .object({
    timestamp: sampleTimestamp,
    cpuUsagePercent: strict(z.number().min(0).max(100)).optional(),
    memoryUsedBytes: bytes(),
    memoryTotalBytes: bytes(),
    diskUsedBytes: bytes(),
    diskTotalBytes: bytes(),
    uptimeSeconds: bytes(),
    restartCount: count(),
    containersRunning: count(),
    containersFailed: count(),
    errorCount: count(),
  })
  .superRefine((s, ctx) => {
    for (const [used, total] of [["memoryUsedBytes", "memoryTotalBytes"], ["diskUsedBytes", "diskTotalBytes"]] as const) {
      if (s[used] != null && s[total] != null && s[used]! > s[total]!) {
        ctx.addIssue({ code: "custom", path: [used], message: `${used} must not exceed ${total}` });
      }
    }
  });
export type SnapshotInput = z.infer<typeof snapshotInput>;

export const telemetryBatchInput = z.object({
  snapshots: z.array(snapshotInput).min(1).max(MAX_BATCH_ITEMS),
});

export const ingestOutput = z.object({ accepted: z.number().int() });

/** What the ingest operations' descriptions say about backpressure (docs/telemetry.md, "When ingest is busy"). */
export const BUSY_ANSWER =
  "Busy: 503 (ingest at capacity, or the database not keeping up) or 429 (the device's request budget), both with Retry-After " +
  "in seconds; nothing of the batch was stored: keep it and send it again after that delay.";

const metricValue = z.number().optional();
export const snapshotOutput = z.object({
  id: z.string(),
  deviceId: z.string(),
  timestamp: z.string(),
  cpuUsagePercent: metricValue,
  memoryUsedBytes: metricValue,
  memoryTotalBytes: metricValue,
  memoryUsagePercent: metricValue,
  diskUsedBytes: metricValue,
  diskTotalBytes: metricValue,
  diskUsagePercent: metricValue,
  uptimeSeconds: metricValue,
  restartCount: metricValue,
  containersRunning: metricValue,
  containersFailed: metricValue,
  errorCount: metricValue,
  /** downsampled buckets only: how many raw snapshots the bucket aggregates */
  samples: z.number().int().optional(),
});
export type SnapshotDto = z.infer<typeof snapshotOutput>;

export const INTERVALS = { "1m": 60, "5m": 300, "1h": 3600, "1d": 86_400 } as const;
export type Interval = keyof typeof INTERVALS;

/** ISO 8601: a date-time with offset, or a plain date (midnight UTC). */

export const rangeInput = {
  id: z.uuid(),
  from: isoInstant.optional().describe("start of the range, ISO 8601 (default: one hour before `to`)"),
  to: isoInstant.optional().describe("end of the range, ISO 8601 (default: now)"),
};

export const seriesInput = z.object({
  ...rangeInput,
  interval: z.enum(Object.keys(INTERVALS) as [Interval, ...Interval[]]).default("1m").describe("bucket size: 1m, 5m, 1h or 1d"),
});

const seriesSource = z.enum(["raw", "rollup-5m", "rollup-1h"]);

export const seriesOutput = z.object({
  data: z.array(snapshotOutput),
  /** raw snapshots in the range */
  total: z.number().int(),
  interval: z.string(),
  from: z.string(),
  to: z.string(),
  source: seriesSource.describe("the rollup the buckets were read from, or raw when only raw snapshots answered"),
  sources: z
    .array(z.object({ source: seriesSource, from: z.string(), to: z.string() }))
    .describe("which source answered which part of the range (inclusive bounds), oldest first"),
});

export const rawInput = z.object({
  ...rangeInput,
  metric: z.enum(METRIC_NAMES),
  order: z.enum(["desc", "asc"]).default("desc").describe("newest first by default"),
  ...pagingInput,
});

export const rawOutput = z.object({
  metric: z.string(),
  items: z.array(z.object({ snapshotId: z.string(), timestamp: z.string(), value: z.number() })),
  total: z.number().int(),
  hasMore: z.boolean(),
});

/** A stored row (or bucket) with numbers that may arrive as bigint, number or null. */
export type MetricRow = { [K in StoredMetric]?: number | bigint | null } & { timestamp: Date | string };

const toNumber = (v: number | bigint | null | undefined) => (v == null ? undefined : Number(v));

/** The spec's snapshot resource: absent values are omitted, percentages computed from used/total. */
export function toSnapshotDto(id: string, deviceId: string, row: MetricRow, extra: Partial<SnapshotDto> = {}): SnapshotDto {
  const dto: SnapshotDto = { id, deviceId, timestamp: new Date(row.timestamp).toISOString() };
  for (const m of STORED_METRIC_NAMES) {
    const v = toNumber(row[m]);
    if (v !== undefined) dto[m] = v;
  }
  const memoryUsagePercent = extra.memoryUsagePercent ?? percentOf(dto.memoryUsedBytes, dto.memoryTotalBytes);
  const diskUsagePercent = extra.diskUsagePercent ?? percentOf(dto.diskUsedBytes, dto.diskTotalBytes);
  if (memoryUsagePercent !== undefined) dto.memoryUsagePercent = memoryUsagePercent;
  if (diskUsagePercent !== undefined) dto.diskUsagePercent = diskUsagePercent;
  if (extra.samples !== undefined) dto.samples = extra.samples;
  return dto;
}
