// Continuous rollups of raw telemetry: per device, 5-minute and hourly aggregates of every
// metric (count, sum, min, max, last; used and total summed over the snapshots reporting
// both), in TelemetryRollup5m and TelemetryRollup1h (migration 20261125160000_telemetry_rollups).
//
// Incremental by construction: the ingest statement aggregates the rows it has just inserted
// (and nothing else) per bucket and merges them into the rollup rows with ON CONFLICT DO
// UPDATE. Counts and sums add, minima and maxima compare, `last` follows the newer `lastAt`;
// the merge is associative, so any split of the snapshots into batches gives the aggregates
// of all of them. Being part of the same statement as the raw insert, a rollup never holds a
// snapshot the raw table lacks, or misses one it holds (kill -9 included).
//
// Reading (op 11): planSeries splits the range into parts answered by raw snapshots or by a
// rollup; each part yields mergeable partial aggregates per interval bucket and one outer
// query merges them, so a bucket straddling two sources is still one correct bucket.
import type { Config } from "../../config.js";
import { STORED_METRIC_NAMES, STORED_METRICS, type StoredMetric } from "./metrics.js";

export type RollupName = "5m" | "1h";
export type SourceName = "raw" | RollupName;

export type RollupRetention = Pick<Config, "TELEMETRY_ROLLUP_5M_RETENTION_DAYS" | "TELEMETRY_ROLLUP_1H_RETENTION_DAYS">;

export interface Rollup {
  table: "TelemetryRollup5m" | "TelemetryRollup1h";
  seconds: number;
  /** days its rows are kept (0 = forever) */
  retentionDays(config: RollupRetention): number;
}

/** How the answer of op 11 names each source. */
export const SOURCE_NAMES = { raw: "raw", "5m": "rollup-5m", "1h": "rollup-1h" } as const satisfies Record<SourceName, string>;

export const ROLLUPS: Record<RollupName, Rollup> = {
  "5m": { table: "TelemetryRollup5m", seconds: 300, retentionDays: (c) => c.TELEMETRY_ROLLUP_5M_RETENTION_DAYS },
  "1h": { table: "TelemetryRollup1h", seconds: 3600, retentionDays: (c) => c.TELEMETRY_ROLLUP_1H_RETENTION_DAYS },
};

/** The metrics whose used and total are summed together for the percentages. */
const BOTH = [
  ["memoryBoth", "memoryUsedBytes", "memoryTotalBytes"],
  ["diskBoth", "diskUsedBytes", "diskTotalBytes"],
] as const;

/** The origin of every bucket (date_bin), as everywhere in telemetry: 1h on the hour, 1d at midnight UTC. */
export const EPOCH = `TIMESTAMPTZ '1970-01-01 00:00:00+00'`;
const q = (name: string) => `"${name}"`;

// ---- writing: the rollup upsert of the ingest statement ----------------------------------

const ROLLUP_COLUMNS = [
  "deviceId", "organizationId", "bucket", "samples", "lastAt",
  ...STORED_METRIC_NAMES.flatMap((m) => [`${m}Count`, `${m}Sum`, `${m}Min`, `${m}Max`, `${m}Last`]),
  ...BOTH.flatMap(([name]) => [`${name}UsedSum`, `${name}TotalSum`]),
];

/**
 * One data-modifying CTE body: aggregates `source` (the rows just inserted, with "id",
 * "deviceId", "organizationId" and "timestamp") per device and bucket of `rollup` and merges
 * them into its table.
 */
export function rollupUpsertSql(rollup: Rollup, source: string): string {
  const t = q(rollup.table);
  const values = [
    `i."deviceId"`, `i."organizationId"`, `date_bin('${rollup.seconds} seconds', i."timestamp", ${EPOCH})`, "count(*)::int", `max(i."timestamp")`,
    ...STORED_METRIC_NAMES.flatMap((m) => [
      `count(i.${q(m)})::int`, `coalesce(sum(i.${q(m)}), 0)::float8`, `min(i.${q(m)})::float8`, `max(i.${q(m)})::float8`,
      // the value in the bucket's newest snapshot (null when that one did not report it)
      `(array_agg(i.${q(m)}::float8 ORDER BY i."timestamp" DESC, i."id" DESC))[1]`,
    ]),
    ...BOTH.flatMap(([, used, total]) => {
      const both = `FILTER (WHERE i.${q(used)} IS NOT NULL AND i.${q(total)} IS NOT NULL)`;
      return [`coalesce(sum(i.${q(used)}) ${both}, 0)::float8`, `coalesce(sum(i.${q(total)}) ${both}, 0)::float8`];
    }),
  ];
  const newer = `excluded."lastAt" >= ${t}."lastAt"`;
  const merges = [
    `"organizationId" = excluded."organizationId"`,
    `"samples" = ${t}."samples" + excluded."samples"`,
    `"lastAt" = GREATEST(${t}."lastAt", excluded."lastAt")`,
    ...STORED_METRIC_NAMES.flatMap((m) => [
      `"${m}Count" = ${t}."${m}Count" + excluded."${m}Count"`,
      `"${m}Sum" = ${t}."${m}Sum" + excluded."${m}Sum"`,
      `"${m}Min" = LEAST(${t}."${m}Min", excluded."${m}Min")`,
      `"${m}Max" = GREATEST(${t}."${m}Max", excluded."${m}Max")`,
      `"${m}Last" = CASE WHEN ${newer} THEN excluded."${m}Last" ELSE ${t}."${m}Last" END`,
    ]),
    ...BOTH.flatMap(([name]) => [`"${name}UsedSum" = ${t}."${name}UsedSum" + excluded."${name}UsedSum"`, `"${name}TotalSum" = ${t}."${name}TotalSum" + excluded."${name}TotalSum"`]),
  ];
  // Rows in (device, bucket) order: two statements meeting on several rows lock them in the same order.
  return `INSERT INTO ${t} (${ROLLUP_COLUMNS.map(q).join(", ")})
    SELECT ${values.join(", ")} FROM ${source} i GROUP BY 1, 2, 3 ORDER BY 1, 3
    ON CONFLICT ("deviceId", "bucket") DO UPDATE SET ${merges.join(", ")}`;
}

// ---- reading: aggregates per bucket, from one source or merged from several -----------------

/**
 * The partial aggregates of a bucket, each with how partials merge (added up or compared) and
 * how raw snapshots (alias s) compute it.
 */
const PARTIALS = new Map<string, { merge: "sum" | "max"; raw: string }>([
  ["samples", { merge: "sum", raw: "count(*)::int" }],
  ...STORED_METRIC_NAMES.flatMap((m) => [
    [`${m}Count`, { merge: "sum", raw: `count(s.${q(m)})::int` }],
    [`${m}Sum`, { merge: "sum", raw: `sum(s.${q(m)})::float8` }],
    [`${m}Max`, { merge: "max", raw: `max(s.${q(m)})::float8` }],
  ] as const),
  ...BOTH.flatMap(([name, used, total]) => {
    const both = `FILTER (WHERE s.${q(used)} IS NOT NULL AND s.${q(total)} IS NOT NULL)::float8`;
    return [
      [`${name}UsedSum`, { merge: "sum", raw: `sum(s.${q(used)}) ${both}` }],
      [`${name}TotalSum`, { merge: "sum", raw: `sum(s.${q(total)}) ${both}` }],
    ] as const;
  }),
]);

/** How a query reads one partial aggregate of its bucket (by its PARTIALS name). */
type PartialReader = (column: string) => string;

/** Raw snapshots (alias s), grouped by bucket. */
const fromRaw: PartialReader = (column) => PARTIALS.get(column)!.raw;

/** Rows of partial aggregates (a rollup's, or the parts' of a series), merged per bucket. */
const merged = (alias: string): PartialReader => (column) => `${PARTIALS.get(column)!.merge}(${alias}.${q(column)})`;
/** Rollup rows (alias r), several per bucket: the interval is a multiple of the rollup's step. */
const fromRollupGrouped = merged("r");
/** Rollup rows (alias r), one per bucket: the interval is the rollup's step. */
const fromRollupRow: PartialReader = (column) => `r.${q(column)}`;
/** Partials of several sources (alias p), merged per bucket. */
const fromPartials = merged("p");

/** The final value of each metric in a bucket, from its partial aggregates as `read` gets them. */
function finalColumns(read: PartialReader): string[] {
  const final = (m: StoredMetric) => {
    switch (STORED_METRICS[m]) {
      case "avg":
        return `${read(`${m}Sum`)}::float8 / NULLIF(${read(`${m}Count`)}, 0) AS "${m}"`;
      case "max":
        return `${read(`${m}Max`)}::float8 AS "${m}"`;
      case "sum":
        return `CASE WHEN ${read(`${m}Count`)} > 0 THEN ${read(`${m}Sum`)}::float8 END AS "${m}"`;
    }
  };
  return [
    `${read("samples")}::int AS "samples"`,
    ...STORED_METRIC_NAMES.map(final),
    `100.0 * ${read("memoryBothUsedSum")} / NULLIF(${read("memoryBothTotalSum")}, 0) AS "memoryUsagePercent"`,
    `100.0 * ${read("diskBothUsedSum")} / NULLIF(${read("diskBothTotalSum")}, 0) AS "diskUsagePercent"`,
  ];
}

/** The partial aggregates themselves, as columns named after PARTIALS (to be merged by fromPartials). */
const partialColumns = (read: PartialReader) => [...PARTIALS.keys()].map((column) => `${read(column)} AS ${q(column)}`);

export interface SeriesPart {
  source: SourceName;
  /** inclusive, ms */
  from: number;
  /** inclusive, ms */
  to: number;
}

/**
 * The series statement: $1 device; each part reads its source over its own range, per bucket
 * of `intervalSeconds`, oldest first. When every boundary between parts falls on a bucket
 * boundary, no bucket has rows in two parts: each part computes its buckets' final values
 * (a rollup whose step is the interval reads one row per bucket, without grouping). Otherwise
 * the parts yield partial aggregates and one outer query merges them per bucket.
 */
export function seriesSql(intervalSeconds: number, parts: SeriesPart[]): { text: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (v: unknown) => {
    values.push(v);
    return `$${values.length + 1}`;
  };
  const stepMs = intervalSeconds * 1000;
  const disjoint = parts.every((part, i) => i === 0 || part.from % stepMs === 0);
  const columns = (read: PartialReader) => (disjoint ? finalColumns(read) : partialColumns(read)).join(", ");
  const selects = parts.map((part) => {
    const from = `${param(new Date(part.from).toISOString())}::timestamptz`;
    const to = `${param(new Date(part.to).toISOString())}::timestamptz`;
    if (part.source === "raw") {
      return `SELECT date_bin('${intervalSeconds} seconds', s."timestamp", ${EPOCH}) AS "bucket", ${columns(fromRaw)}
        FROM "TelemetrySnapshot" s WHERE s."deviceId" = $1::uuid AND s."timestamp" >= ${from} AND s."timestamp" <= ${to} GROUP BY 1`;
    }
    const rollup = ROLLUPS[part.source];
    const range = `FROM ${q(rollup.table)} r WHERE r."deviceId" = $1::uuid AND r."bucket" >= ${from} AND r."bucket" <= ${to}`;
    return rollup.seconds === intervalSeconds
      ? `SELECT r."bucket", ${columns(fromRollupRow)} ${range}`
      : `SELECT date_bin('${intervalSeconds} seconds', r."bucket", ${EPOCH}) AS "bucket", ${columns(fromRollupGrouped)} ${range} GROUP BY 1`;
  });
  const text = disjoint
    ? `${selects.map((select) => `(${select})`).join("\nUNION ALL\n")} ORDER BY "bucket"`
    : `SELECT p."bucket", ${finalColumns(fromPartials).join(", ")}
    FROM (${selects.join("\nUNION ALL\n")}) p GROUP BY p."bucket" ORDER BY p."bucket"`;
  return { text, values };
}

const alignUp = (t: number, stepMs: number) => Math.ceil(t / stepMs) * stepMs;
const alignDown = (t: number, stepMs: number) => Math.floor(t / stepMs) * stepMs;

/**
 * Which source answers which part of [from, to] (inclusive, ms) at `intervalSeconds`:
 * the rollup with the largest bucket that divides the interval (so its buckets fit the
 * interval's exactly: 1h and 1d read hourly rollups, 5m reads 5-minute ones, 1m reads raw
 * snapshots) answers the whole rollup buckets inside the range that its retention still
 * holds; raw snapshots answer the rest: the partial buckets at both edges of the range and
 * anything older than the rollup's retention. The parts never overlap and cover the range.
 */
export function planSeries(intervalSeconds: number, from: number, to: number, now: number, config: RollupRetention): SeriesPart[] {
  const name = (["1h", "5m"] as const).find((r) => intervalSeconds % ROLLUPS[r].seconds === 0);
  if (!name) return [{ source: "raw", from, to }];
  const step = ROLLUPS[name].seconds * 1000;
  const days = ROLLUPS[name].retentionDays(config);
  const horizon = days === 0 ? -Infinity : alignUp(now - days * 86_400_000, step);
  const start = Math.max(alignUp(from, step), horizon);
  const end = alignDown(to + 1, step); // exclusive: the bucket holding `to` is partial unless `to` ends it
  if (start >= end) return [{ source: "raw", from, to }];
  const parts: SeriesPart[] = [];
  if (from < start) parts.push({ source: "raw", from, to: start - 1 });
  parts.push({ source: name, from: start, to: end - step }); // rollup rows are named by their bucket's start
  if (end <= to) parts.push({ source: "raw", from: end, to });
  return parts;
}
