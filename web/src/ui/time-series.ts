// Pure helpers behind TimeSeriesChart: points as uPlot's aligned columns with a null wherever
// the source was silent (so the line breaks instead of bridging the hole), which points are
// isolated between gaps (a line cannot show them: they are drawn as dots), and axis and
// read-out labels in the user's locale. No DOM, no uPlot import: unit-tested in node.

/** uPlot's data: x values (seconds since the epoch, ascending), then one column per series. */
export type AlignedColumns = [number[], ...(number | null)[][]];

/**
 * Aligned columns from points ordered by time. Where two consecutive points lie more than
 * one and a half steps apart (at least one whole step without data), a row of nulls is placed
 * one step after the earlier point: uPlot ends the line there and starts again at the next
 * point. A value a point does not have (undefined or null) is null in its column too.
 */
export function alignWithGaps<P>(
  points: readonly P[],
  timeOf: (point: P, index: number) => number,
  series: readonly ((point: P) => number | null | undefined)[],
  stepSeconds: number,
): AlignedColumns {
  const xs: number[] = [];
  const columns: (number | null)[][] = series.map(() => []);
  let previous: number | null = null;
  for (let index = 0; index < points.length; index++) {
    const point = points[index];
    const t = timeOf(point, index);
    if (previous !== null && t - previous > stepSeconds * 1.5) {
      xs.push(previous + stepSeconds);
      for (const column of columns) column.push(null);
    }
    xs.push(t);
    series.forEach((valueOf, i) => columns[i].push(valueOf(point) ?? null));
    previous = t;
  }
  return [xs, ...columns];
}

const isolatedOf = new WeakMap<readonly (number | null | undefined)[], number[]>();

/**
 * isolatedIndices, remembered per column: uPlot asks on every redraw (cursor, zoom, resize) and
 * a column is never changed in place (new data is a new array), so each is scanned once.
 */
export function isolatedIndicesOnce(values: readonly (number | null | undefined)[]): number[] {
  let found = isolatedOf.get(values);
  if (!found) isolatedOf.set(values, (found = isolatedIndices(values)));
  return found;
}

/** Indices of values with no neighbour on either side: a line through them draws nothing. */
export function isolatedIndices(values: readonly (number | null | undefined)[]): number[] {
  const found: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (values[i] == null) continue;
    if ((i === 0 || values[i - 1] == null) && (i === values.length - 1 || values[i + 1] == null)) found.push(i);
  }
  return found;
}

export interface Formatters {
  /** tick labels of the time axis for splits `incrSeconds` apart */
  timeTicks(splits: readonly number[], incrSeconds: number): string[];
  /** the exact time of a point in the read-out */
  pointTime(seconds: number): string;
  /** a value with its unit, for the read-out and the value axis */
  value(value: number | null | undefined, unit: ValueUnit): string;
}

export type ValueUnit = "percent" | "count";

/**
 * Labels in `locale` (the browser's when undefined) and `timeZone` (the browser's when
 * undefined; tests pin both). Ticks under a day show the time, with the date under the first
 * tick of each day; ticks a day or more apart show the date.
 */
export function formatters(locale?: string, timeZone?: string): Formatters {
  const time = new Intl.DateTimeFormat(locale, { hour: "2-digit", minute: "2-digit", timeZone });
  const timeWithSeconds = new Intl.DateTimeFormat(locale, { hour: "2-digit", minute: "2-digit", second: "2-digit", timeZone });
  const day = new Intl.DateTimeFormat(locale, { month: "short", day: "numeric", timeZone });
  const full = new Intl.DateTimeFormat(locale, { dateStyle: "medium", timeStyle: "short", timeZone });
  const decimal = new Intl.NumberFormat(locale, { maximumFractionDigits: 1 });
  const percent = new Intl.NumberFormat(locale, { style: "percent", maximumFractionDigits: 1 });
  return {
    timeTicks(splits, incrSeconds) {
      if (incrSeconds >= 86_400) return splits.map((s) => day.format(s * 1000));
      const clock = incrSeconds < 60 ? timeWithSeconds : time;
      let lastDay = "";
      return splits.map((s, i) => {
        const date = day.format(s * 1000);
        const label = clock.format(s * 1000);
        const newDay = i === 0 || date !== lastDay;
        lastDay = date;
        return newDay ? `${label}\n${date}` : label;
      });
    },
    pointTime: (seconds) => full.format(seconds * 1000),
    value(value, unit) {
      if (value == null || Number.isNaN(value)) return "–";
      return unit === "percent" ? percent.format(value / 100) : decimal.format(value);
    },
  };
}
