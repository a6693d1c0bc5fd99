// The telemetry tab's pure logic: which time range and bucket interval the URL asks for
// (relative ranges end now, custom ones come from `from`/`to`), the interval chosen when the
// URL names none, and op 11's buckets as uPlot columns with gaps where the device was silent.
import type { RouterInputs, RouterOutputs } from "../../api/client";
import { alignWithGaps, type AlignedColumns } from "../../ui/time-series";
import type { DeviceDetailSearch } from "../search";

export type Interval = NonNullable<RouterInputs["telemetry"]["series"]["interval"]>;
export type Bucket = RouterOutputs["telemetry"]["series"]["data"][number];
export type RangeKey = NonNullable<DeviceDetailSearch["range"]>;
export type Metric = Exclude<keyof Bucket, "id" | "deviceId" | "timestamp" | "samples">;

/** Bucket sizes of op 11, in seconds (checked against the API's type). */
export const INTERVAL_SECONDS = { "1m": 60, "5m": 300, "1h": 3600, "1d": 86_400 } as const satisfies Record<Interval, number>;
export const INTERVALS = Object.keys(INTERVAL_SECONDS) as Interval[];

export const RELATIVE_RANGES = { "1h": 3_600_000, "24h": 86_400_000, "7d": 7 * 86_400_000 } as const satisfies Partial<Record<RangeKey, number>>;

/** op 11 refuses a range of more buckets than this (docs/telemetry.md). */
export const MAX_BUCKETS = 10_000;
/** The interval chosen by default is the finest that keeps a range within this many buckets. */
const DEFAULT_BUCKET_BUDGET = 800;

/** Buckets op 11 counts for a range: both ends inclusive, as the service counts them (a range of exactly 10,000 minutes holds 10,001). */
export function bucketCount(rangeMs: number, interval: Interval): number {
  return Math.floor(rangeMs / (INTERVAL_SECONDS[interval] * 1000)) + 1;
}

/** The finest interval that keeps the range readable (≤ 800 buckets): 1h → 1m, 24h → 5m, 7d → 1h, a year → 1d. */
export function defaultInterval(rangeMs: number): Interval {
  return INTERVALS.find((i) => bucketCount(rangeMs, i) <= DEFAULT_BUCKET_BUDGET) ?? "1d";
}

/** Intervals op 11 accepts for this range (not more than 10,000 buckets). */
export function allowedIntervals(rangeMs: number): Interval[] {
  return INTERVALS.filter((i) => bucketCount(rangeMs, i) <= MAX_BUCKETS);
}

export type ResolvedRange =
  | { ok: true; range: RangeKey; from: string; to: string; rangeMs: number; interval: Interval; intervalChosen: boolean; allowed: Interval[] }
  | { ok: false; range: "custom"; problem: string };

const MINUTE = 60_000;

/**
 * The range and interval the URL asks for at time `now`. A relative range ends at the next
 * whole minute (so the query, and its cache key, changes once a minute, not at every render);
 * a custom one needs a valid `from` before its `to`. An interval the range does not allow (or
 * none) gives way to the default.
 */
export function resolveRange(search: Pick<DeviceDetailSearch, "range" | "from" | "to" | "interval">, now: number): ResolvedRange {
  const range: RangeKey = search.range ?? "1h";
  let fromMs: number;
  let toMs: number;
  if (range === "custom") {
    fromMs = search.from ? Date.parse(search.from) : NaN;
    toMs = search.to ? Date.parse(search.to) : NaN;
    if (Number.isNaN(fromMs) || Number.isNaN(toMs)) return { ok: false, range, problem: "Choose when the range starts and ends." };
    if (fromMs >= toMs) return { ok: false, range, problem: "The start of the range must be before its end." };
  } else {
    toMs = Math.ceil(now / MINUTE) * MINUTE;
    fromMs = toMs - RELATIVE_RANGES[range];
  }
  const rangeMs = toMs - fromMs;
  const allowed = allowedIntervals(rangeMs);
  if (allowed.length === 0) return { ok: false, range: "custom", problem: `The range is too long: at most ${MAX_BUCKETS.toLocaleString()} days at the coarsest interval.` };
  const intervalChosen = !!search.interval && allowed.includes(search.interval);
  const interval = intervalChosen ? search.interval! : defaultInterval(rangeMs);
  return { ok: true, range, from: new Date(fromMs).toISOString(), to: new Date(toMs).toISOString(), rangeMs, interval, intervalChosen, allowed };
}

/** op 11's buckets (oldest first) as uPlot columns of `metrics`, with a null after every silent stretch. */
export function bucketsToColumns(buckets: readonly Bucket[], interval: Interval, metrics: readonly Metric[]): AlignedColumns {
  return bucketsToColumnSets(buckets, interval, [metrics])[0];
}

/** The same for several charts over one answer: each bucket's time is parsed once, not once per chart. */
export function bucketsToColumnSets(buckets: readonly Bucket[], interval: Interval, charts: readonly (readonly Metric[])[]): AlignedColumns[] {
  const seconds = buckets.map((b) => Date.parse(b.timestamp) / 1000);
  return charts.map((metrics) => alignWithGaps(
    buckets,
    (_b, index) => seconds[index],
    metrics.map((m) => (b: Bucket) => b[m]),
    INTERVAL_SECONDS[interval],
  ));
}

/** A `<input type="datetime-local">` value (local time, minutes) for an ISO instant, and back. */
export function toLocalInput(iso: string | undefined): string {
  if (!iso) return "";
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const d = new Date(t);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined;
  const t = new Date(value).getTime(); // a datetime-local value without offset is read as local time
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes in binary units, one decimal from KiB on: 3.2 GiB. */
export function formatBytes(bytes: number, locale?: string): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  const digits = unit === 0 ? 0 : 1;
  return `${new Intl.NumberFormat(locale, { maximumFractionDigits: digits }).format(value)} ${BYTE_UNITS[unit]}`;
}

/** An uptime in its two largest units: "3 d 4 h", "5 h 12 min", "42 s". */
export function formatUptime(seconds: number): string {
  const parts: [number, string][] = [
    [Math.floor(seconds / 86_400), "d"],
    [Math.floor((seconds % 86_400) / 3600), "h"],
    [Math.floor((seconds % 3600) / 60), "min"],
    [Math.floor(seconds % 60), "s"],
  ];
  const first = parts.findIndex(([n]) => n > 0);
  if (first < 0) return "0 s";
  return parts.slice(first, first + 2).filter(([n]) => n > 0).map(([n, u]) => `${n} ${u}`).join(" ");
}
