import { describe, expect, it } from "vitest";
import { alignWithGaps, formatters, isolatedIndices, isolatedIndicesOnce } from "./time-series";

interface Point {
  t: number;
  a?: number;
  b?: number;
}
const align = (points: Point[], step = 60) => alignWithGaps(points, (p) => p.t, [(p) => p.a, (p) => p.b], step);

describe("alignWithGaps", () => {
  it("keeps consecutive points as they are, one column per series", () => {
    expect(align([{ t: 0, a: 1, b: 2 }, { t: 60, a: 3, b: 4 }, { t: 120, a: 5, b: 6 }])).toEqual([
      [0, 60, 120],
      [1, 3, 5],
      [2, 4, 6],
    ]);
  });

  it("puts a null row one step after a point followed by a silent step, so the line breaks there", () => {
    // 60 and 120 are missing: the device sent nothing for two buckets
    expect(align([{ t: 0, a: 1, b: 1 }, { t: 180, a: 2, b: 2 }, { t: 240, a: 3, b: 3 }])).toEqual([
      [0, 60, 180, 240],
      [1, null, 2, 3],
      [1, null, 2, 3],
    ]);
  });

  it("makes a metric a point does not report null in its column only", () => {
    expect(align([{ t: 0, a: 1 }, { t: 60, b: 5 }])).toEqual([
      [0, 60],
      [1, null],
      [null, 5],
    ]);
  });

  it("answers empty columns for no points, and draws 10,000 points with their gaps in one pass", () => {
    expect(align([])).toEqual([[], [], []]);
    const points = Array.from({ length: 10_000 }, (_, i) => ({ t: i * 300 + (i >= 5000 ? 3000 : 0), a: i }));
    const [xs, as] = align(points, 300);
    expect(xs).toHaveLength(10_001);
    expect(as[5000]).toBeNull();
    expect(xs[5000]).toBe(4999 * 300 + 300);
  });
});

describe("isolatedIndices", () => {
  it("finds values with no neighbour on either side", () => {
    expect(isolatedIndices([1, null, 2, null, null, 3, 4, null, 5])).toEqual([0, 2, 8]);
    expect(isolatedIndices([1, 2, 3])).toEqual([]);
    expect(isolatedIndices([7])).toEqual([0]);
    expect(isolatedIndices([])).toEqual([]);
  });

  it("is remembered per column: the same array answers the same (identical) list, a new array is scanned", () => {
    const column = [1, null, 2, 3];
    const first = isolatedIndicesOnce(column);
    expect(first).toEqual([0]);
    expect(isolatedIndicesOnce(column)).toBe(first);
    expect(isolatedIndicesOnce([null, 5, null])).toEqual([1]);
  });
});

describe("formatters", () => {
  const f = formatters("en-GB", "UTC");
  const at = (iso: string) => Date.parse(iso) / 1000;

  it("labels ticks under a day with the time, and the date under the first tick of each day", () => {
    const splits = [at("2026-03-04T22:00:00Z"), at("2026-03-04T23:00:00Z"), at("2026-03-05T00:00:00Z"), at("2026-03-05T01:00:00Z")];
    expect(f.timeTicks(splits, 3600)).toEqual(["22:00\n4 Mar", "23:00", "00:00\n5 Mar", "01:00"]);
  });

  it("adds seconds under a minute, and shows dates only for ticks a day or more apart", () => {
    expect(f.timeTicks([at("2026-03-04T10:00:30Z")], 30)).toEqual(["10:00:30\n4 Mar"]);
    expect(f.timeTicks([at("2026-03-04T00:00:00Z"), at("2026-03-05T00:00:00Z")], 86_400)).toEqual(["4 Mar", "5 Mar"]);
  });

  it("follows the locale and time zone it is given", () => {
    const us = formatters("en-US", "America/New_York");
    expect(us.timeTicks([at("2026-03-05T01:00:00Z")], 3600)).toEqual(["08:00 PM\nMar 4"]);
    expect(us.pointTime(at("2026-03-05T01:00:00Z"))).toBe("Mar 4, 2026, 8:00 PM");
  });

  it("formats values with their unit, and a missing value as a dash", () => {
    expect(f.value(42.123, "percent")).toBe("42.1%");
    expect(formatters("de-DE").value(42.16, "percent")).toBe("42,2\u00a0%"); // a no-break space, as German writes it
    expect(f.value(2.5, "count")).toBe("2.5");
    expect(f.value(1234, "count")).toBe("1,234");
    expect(f.value(null, "count")).toBe("–");
    expect(f.value(undefined, "percent")).toBe("–");
  });
});
