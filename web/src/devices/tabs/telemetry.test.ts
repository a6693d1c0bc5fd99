import { describe, expect, it } from "vitest";
import { allowedIntervals, bucketsToColumns, bucketsToColumnSets, defaultInterval, formatBytes, formatUptime, fromLocalInput, resolveRange, toLocalInput, type Bucket } from "./telemetry";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const now = Date.parse("2026-03-05T10:17:42Z");

describe("defaultInterval and allowedIntervals", () => {
  it("choose the finest interval that keeps a range within 800 buckets", () => {
    expect(defaultInterval(HOUR)).toBe("1m");
    expect(defaultInterval(DAY)).toBe("5m");
    expect(defaultInterval(7 * DAY)).toBe("1h");
    expect(defaultInterval(30 * DAY)).toBe("1h");
    expect(defaultInterval(365 * DAY)).toBe("1d");
  });

  it("allow only intervals op 11 accepts (at most 10,000 buckets)", () => {
    expect(allowedIntervals(DAY)).toEqual(["1m", "5m", "1h", "1d"]);
    expect(allowedIntervals(7 * DAY)).toEqual(["5m", "1h", "1d"]); // 10,080 minutes
    expect(allowedIntervals(2 * 365 * DAY)).toEqual(["1d"]);
    // The service counts both ends: 10,000 minutes are 10,001 one-minute buckets, one too many.
    expect(allowedIntervals(10_000 * 60_000)).toEqual(["5m", "1h", "1d"]);
    expect(allowedIntervals(9_999 * 60_000)).toEqual(["1m", "5m", "1h", "1d"]);
  });
});

describe("resolveRange", () => {
  it("defaults to the last hour at 1m, ending at the next whole minute", () => {
    expect(resolveRange({}, now)).toEqual({
      ok: true, range: "1h", from: "2026-03-05T09:18:00.000Z", to: "2026-03-05T10:18:00.000Z", rangeMs: HOUR,
      interval: "1m", intervalChosen: false, allowed: ["1m", "5m", "1h", "1d"],
    });
  });

  it("keeps the same from/to within a minute, so the query is not asked again at every render", () => {
    const a = resolveRange({ range: "24h" }, now);
    const b = resolveRange({ range: "24h" }, now + 10_000);
    expect(a).toEqual(b);
    expect(a).toMatchObject({ ok: true, from: "2026-03-04T10:18:00.000Z", interval: "5m" });
  });

  it("takes the interval of the URL when the range allows it, the default otherwise", () => {
    expect(resolveRange({ range: "7d", interval: "5m" }, now)).toMatchObject({ ok: true, interval: "5m", intervalChosen: true });
    expect(resolveRange({ range: "7d", interval: "1m" }, now)).toMatchObject({ ok: true, interval: "1h", intervalChosen: false });
  });

  it("reads a custom range from from/to, and says what is wrong with a bad one", () => {
    expect(resolveRange({ range: "custom", from: "2026-03-01T00:00:00Z", to: "2026-03-03T00:00:00Z" }, now)).toMatchObject({
      ok: true, range: "custom", from: "2026-03-01T00:00:00.000Z", to: "2026-03-03T00:00:00.000Z", rangeMs: 2 * DAY, interval: "5m",
    });
    expect(resolveRange({ range: "custom" }, now)).toEqual({ ok: false, range: "custom", problem: "Choose when the range starts and ends." });
    expect(resolveRange({ range: "custom", from: "yesterday", to: "2026-03-03T00:00:00Z" }, now)).toMatchObject({ ok: false });
    expect(resolveRange({ range: "custom", from: "2026-03-03T00:00:00Z", to: "2026-03-01T00:00:00Z" }, now)).toEqual({
      ok: false, range: "custom", problem: "The start of the range must be before its end.",
    });
    expect(resolveRange({ range: "custom", from: "1990-01-01T00:00:00Z", to: "2026-03-01T00:00:00Z" }, now)).toMatchObject({ ok: false });
  });
});

describe("bucketsToColumns", () => {
  const bucket = (iso: string, values: Partial<Bucket>): Bucket => ({ id: `5m:${iso}`, deviceId: "d", timestamp: iso, ...values });

  it("turns op 11's buckets into uPlot columns with a null where buckets are missing", () => {
    const buckets = [
      bucket("2026-03-05T10:00:00.000Z", { cpuUsagePercent: 10, memoryUsagePercent: 50 }),
      bucket("2026-03-05T10:05:00.000Z", { cpuUsagePercent: 20 }),
      // 10:10 and 10:15: the device sent nothing
      bucket("2026-03-05T10:20:00.000Z", { cpuUsagePercent: 30, memoryUsagePercent: 52 }),
    ];
    const t = (iso: string) => Date.parse(iso) / 1000;
    expect(bucketsToColumns(buckets, "5m", ["cpuUsagePercent", "memoryUsagePercent"])).toEqual([
      [t("2026-03-05T10:00:00Z"), t("2026-03-05T10:05:00Z"), t("2026-03-05T10:10:00Z"), t("2026-03-05T10:20:00Z")],
      [10, 20, null, 30],
      [50, null, null, 52],
    ]);
  });

  it("gives several charts the columns each would get alone (times parsed once for all)", () => {
    const buckets = Array.from({ length: 50 }, (_, i) => bucket(new Date(Date.UTC(2026, 2, 5, 10, i % 7 === 3 ? i + 100 : i)).toISOString(), {
      cpuUsagePercent: i, memoryUsagePercent: i % 3 ? 100 - i : undefined, containersRunning: 2,
    })).sort((a, b) => a.timestamp.localeCompare(b.timestamp));
    const charts = [["cpuUsagePercent", "memoryUsagePercent"], ["containersRunning"]] as const;
    expect(bucketsToColumnSets(buckets, "1m", charts)).toEqual(charts.map((metrics) => bucketsToColumns(buckets, "1m", metrics)));
  });
});

describe("datetime-local inputs", () => {
  it("round-trip an instant through the local-time input value", () => {
    const iso = "2026-03-05T10:17:00.000Z";
    expect(fromLocalInput(toLocalInput(iso))).toBe(iso);
    expect(toLocalInput(undefined)).toBe("");
    expect(toLocalInput("nonsense")).toBe("");
    expect(fromLocalInput("")).toBeUndefined();
  });
});

describe("formatBytes and formatUptime", () => {
  it("show bytes in binary units", () => {
    expect(formatBytes(512, "en")).toBe("512 B");
    expect(formatBytes(3.25 * 1024 ** 3, "en")).toBe("3.3 GiB");
    expect(formatBytes(1024 ** 2, "en")).toBe("1 MiB");
  });

  it("show an uptime in its two largest units", () => {
    expect(formatUptime(0)).toBe("0 s");
    expect(formatUptime(42)).toBe("42 s");
    expect(formatUptime(5 * 3600 + 12 * 60 + 9)).toBe("5 h 12 min");
    expect(formatUptime(3 * 86_400 + 4 * 3600 + 59)).toBe("3 d 4 h");
    expect(formatUptime(2 * 86_400 + 30)).toBe("2 d");
  });
});
