// Reading telemetry: the downsampled series (spec op 11), the newest snapshot (op 13) and
// the raw values of one metric. Buckets are computed in SQL with date_bin (PostgreSQL 14+,
// PGlite included), aligned to the Unix epoch so that 1h and 1d buckets start on the hour
// and at midnight UTC.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { RawDatabase } from "../../db/adapters.js";
import { badRequest, notFound } from "../../trpc/errors.js";
import { COMPUTED_METRICS, metricExpression, STORED_METRIC_NAMES, type ComputedMetric, type Metric, type StoredMetric } from "./metrics.js";
import { planSeries, seriesSql, SOURCE_NAMES, type RollupRetention } from "./rollups.js";
import { INTERVALS, toSnapshotDto, type Interval, type SnapshotDto } from "./schemas.js";
import { requireDevice } from "./device.js";

/** A series longer than this would be a response nobody can draw; ask for a larger interval. */
export const MAX_BUCKETS = 10_000;
const DEFAULT_RANGE_MS = 3600_000;

export interface TimeRange {
  from: Date;
  to: Date;
}

/** Defaults: the last hour until now. `from` after `to` is a 400. */
export function resolveRange(input: { from?: string; to?: string }, now = new Date()): TimeRange {
  const to = input.to ? new Date(input.to) : now;
  const from = input.from ? new Date(input.from) : new Date(to.getTime() - DEFAULT_RANGE_MS);
  if (from.getTime() > to.getTime()) throw badRequest("Invalid input: from must not be after to");
  return { from, to };
}

type BucketRow = { bucket: Date; samples: number } & { [K in StoredMetric | ComputedMetric]: number | null };

/**
 * Spec op 11: buckets of `interval` over [from, to] (both inclusive), oldest first, from raw
 * snapshots or rollups (planSeries says which answers which part; the answer names them).
 * The statement runs on the driver (`raw`), beside the device check: a month of hours is 721
 * rows of 15 columns, which Prisma's raw query path took 2-3 ms longer to hand back
 * (docs/benchmarks.md, "Telemetry at 100,000 devices"). Another organization's device is
 * still a 404: its rows are read but never returned.
 */
export async function telemetrySeries(
  db: DbTx,
  raw: RawDatabase,
  config: RollupRetention,
  organizationId: string,
  input: { id: string; from?: string; to?: string; interval: Interval },
) {
  const { from, to } = resolveRange(input);
  const seconds = INTERVALS[input.interval];
  const buckets = Math.floor((to.getTime() - from.getTime()) / (seconds * 1000)) + 1;
  if (buckets > MAX_BUCKETS) {
    throw badRequest(`Invalid input: the range holds ${buckets} buckets of ${input.interval}; at most ${MAX_BUCKETS}: choose a larger interval or a shorter range`);
  }
  // Raw snapshots, rollups, or both (rollups.ts): one statement merging partial aggregates per bucket.
  const parts = planSeries(seconds, from.getTime(), to.getTime(), Date.now(), config);
  const sql = seriesSql(seconds, parts);
  const [, rows] = await Promise.all([requireDevice(db, organizationId, input.id), raw.query<BucketRow>(sql.text, [input.id, ...sql.values])]);
  const data = rows.map((r) => bucketDto(input.interval, input.id, r));
  const total = rows.reduce((n, r) => n + r.samples, 0);
  const sources = parts.map((p) => ({ source: SOURCE_NAMES[p.source], from: new Date(p.from).toISOString(), to: new Date(p.to).toISOString() }));
  const source = sources.find((p) => p.source !== "raw")?.source ?? "raw";
  return { data, total, interval: input.interval, from: from.toISOString(), to: to.toISOString(), source, sources };
}

const BUCKET_METRICS = [...STORED_METRIC_NAMES, ...COMPUTED_METRICS];

/**
 * One bucket as the spec's snapshot resource (metrics without a value omitted), built directly
 * from the row: a month of hours is 721 of them per call, and going through toSnapshotDto (a
 * copy of each row, dates parsed and printed twice) cost more than the statement.
 */
function bucketDto(interval: Interval, deviceId: string, row: BucketRow): SnapshotDto {
  const timestamp = row.bucket.toISOString();
  const dto: SnapshotDto = { id: `${interval}:${timestamp}`, deviceId, timestamp, samples: row.samples };
  for (const m of BUCKET_METRICS) {
    const value = row[m];
    if (value !== null) dto[m] = value;
  }
  return dto;
}

/** Spec op 13: the newest snapshot; 404 for an unknown device or one without telemetry. */
export async function latestSnapshot(db: DbTx, organizationId: string, deviceId: string): Promise<SnapshotDto> {
  await requireDevice(db, organizationId, deviceId);
  const row = await db.telemetrySnapshot.findFirst({
    where: { deviceId },
    orderBy: [{ timestamp: "desc" }, { id: "desc" }],
  });
  if (!row) throw notFound("Telemetry of this device");
  return toSnapshotDto(String(row.id), deviceId, row);
}

/** Every raw value of one metric in the range (snapshots that did not report it are skipped), paged. */
export async function rawMetricValues(
  db: DbTx,
  organizationId: string,
  input: { id: string; from?: string; to?: string; metric: Metric; order: "asc" | "desc"; limit: number; offset: number },
) {
  await requireDevice(db, organizationId, input.id);
  const { from, to } = resolveRange(input);
  const value = metricExpression(input.metric, "s");
  const where = Prisma.sql`
     WHERE s."deviceId" = ${input.id}::uuid
       AND s."timestamp" >= ${from.toISOString()}::timestamptz
       AND s."timestamp" <= ${to.toISOString()}::timestamptz
       AND ${value} IS NOT NULL`;
  const order = Prisma.raw(input.order === "asc" ? `s."timestamp" ASC, s."id" ASC` : `s."timestamp" DESC, s."id" DESC`);
  const [rows, counted] = await Promise.all([
    db.$queryRaw<{ id: bigint; timestamp: Date; value: number }[]>`
      SELECT s."id", s."timestamp", ${value} AS "value" FROM "TelemetrySnapshot" s ${where}
       ORDER BY ${order} LIMIT ${input.limit} OFFSET ${input.offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS "n" FROM "TelemetrySnapshot" s ${where}`,
  ]);
  const total = counted[0]?.n ?? 0;
  return {
    metric: input.metric,
    items: rows.map((r) => ({ snapshotId: String(r.id), timestamp: new Date(r.timestamp).toISOString(), value: Number(r.value) })),
    total,
    hasMore: input.offset + rows.length < total,
  };
}
