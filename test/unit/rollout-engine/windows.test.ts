// Maintenance windows read in IANA time zones with Intl, across daylight-saving changes in two
// zones (Europe/Berlin: 29 March and 25 October 2026; America/New_York: 8 March and 1 November
// 2026), windows across midnight, the next opening, and batch timeouts counting only time
// inside windows.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { deadlineInWindows, instantOf, isOpen, nextOpening, openIntervals, timeZoneFor, windowPhase } from "../../../src/modules/rollout-engine/windows.js";
import type { WeeklyWindow } from "../../../src/modules/rollout-engine/options.js";
import { isTimeZone } from "../../../src/modules/rollout-engine/window-rules.js";

const t = (iso: string) => Date.parse(iso);
const EVERY_DAY: WeeklyWindow["days"] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const night: WeeklyWindow[] = [{ days: EVERY_DAY, start: "02:00", end: "04:00" }];
const hours = (i: { open: number; close: number }) => (i.close - i.open) / 3_600_000;
const intervalOn = (windows: WeeklyWindow[], tz: string, dayIso: string) => openIntervals(windows, tz, t(dayIso), 0).find((i) => new Date(i.open).toISOString().startsWith(dayIso.slice(0, 10)) || new Date(i.close).toISOString().startsWith(dayIso.slice(0, 10)))!;

describe("local times in a time zone", () => {
  it("maps wall-clock times to instants in winter and summer", () => {
    expect(instantOf(t("2026-01-15T02:00:00Z"), "Europe/Berlin")).toBe(t("2026-01-15T01:00:00Z"));
    expect(instantOf(t("2026-07-15T02:00:00Z"), "Europe/Berlin")).toBe(t("2026-07-15T00:00:00Z"));
    expect(instantOf(t("2026-07-15T02:00:00Z"), "America/New_York")).toBe(t("2026-07-15T06:00:00Z"));
  });

  it("reads a time in the spring gap as after it, and a repeated autumn time as the first", () => {
    // Berlin 29 March 2026: 02:00 CET -> 03:00 CEST; 02:30 does not exist
    expect(instantOf(t("2026-03-29T02:30:00Z"), "Europe/Berlin")).toBe(t("2026-03-29T01:30:00Z"));
    // Berlin 25 October 2026: 03:00 CEST -> 02:00 CET; 02:30 happens twice
    expect(instantOf(t("2026-10-25T02:30:00Z"), "Europe/Berlin")).toBe(t("2026-10-25T00:30:00Z"));
    // New York 8 March 2026: 02:00 EST -> 03:00 EDT
    expect(instantOf(t("2026-03-08T02:30:00Z"), "America/New_York")).toBe(t("2026-03-08T07:30:00Z"));
    // New York 1 November 2026: 02:00 EDT -> 01:00 EST; 01:30 happens twice
    expect(instantOf(t("2026-11-01T01:30:00Z"), "America/New_York")).toBe(t("2026-11-01T05:30:00Z"));
  });

  it("property: a wall-clock time that exists maps back to itself", () => {
    fc.assert(
      fc.property(fc.integer({ min: t("2026-01-01T00:00:00Z") / 60_000, max: t("2027-01-01T00:00:00Z") / 60_000 }), fc.constantFrom("Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney"), (minute, tz) => {
        const instant = minute * 60_000;
        const wall = new Date(new Intl.DateTimeFormat("sv-SE", { timeZone: tz, dateStyle: "short", timeStyle: "short" }).format(instant).replace(" ", "T") + ":00Z").getTime();
        expect(instantOf(wall, tz) <= instant).toBe(true);
        expect(new Intl.DateTimeFormat("sv-SE", { timeZone: tz, dateStyle: "short", timeStyle: "short" }).format(instantOf(wall, tz))).toBe(
          new Intl.DateTimeFormat("sv-SE", { timeZone: tz, dateStyle: "short", timeStyle: "short" }).format(instant),
        );
      }),
    );
  });
});

describe("windows across daylight-saving changes", () => {
  it("Europe/Berlin: the 02:00-04:00 window lasts 1 hour when clocks go forward, 3 when they go back, 2 otherwise", () => {
    expect(hours(intervalOn(night, "Europe/Berlin", "2026-03-28T12:00:00Z"))).toBe(2);
    const spring = openIntervals(night, "Europe/Berlin", t("2026-03-29T00:00:00Z"), 0).find((i) => i.open >= t("2026-03-29T00:00:00Z"))!;
    expect(spring).toEqual({ open: t("2026-03-29T01:00:00Z"), close: t("2026-03-29T02:00:00Z") });
    const autumn = openIntervals(night, "Europe/Berlin", t("2026-10-25T00:00:00Z"), 0).find((i) => i.open >= t("2026-10-24T23:00:00Z"))!;
    expect(autumn).toEqual({ open: t("2026-10-25T00:00:00Z"), close: t("2026-10-25T03:00:00Z") });
  });

  it("America/New_York: the same window opens at 06:00 or 07:00 UTC with the season, an hour short on 8 March", () => {
    expect(nextOpening(night, "America/New_York", t("2026-03-07T12:00:00Z"))).toBe(t("2026-03-08T07:00:00Z"));
    const spring = openIntervals(night, "America/New_York", t("2026-03-08T00:00:00Z"), 1).find((i) => i.open >= t("2026-03-08T06:00:00Z"))!;
    expect(spring).toEqual({ open: t("2026-03-08T07:00:00Z"), close: t("2026-03-08T08:00:00Z") });
    expect(nextOpening(night, "America/New_York", t("2026-03-08T12:00:00Z"))).toBe(t("2026-03-09T06:00:00Z"));
    expect(isOpen(night, "America/New_York", t("2026-11-01T07:30:00Z"))).toBe(true); // 02:30 EST, after the change
    expect(isOpen(night, "America/New_York", t("2026-11-01T09:00:00Z"))).toBe(false); // 04:00 EST
  });

  it("one deployment, two sites: each opens at its own night", () => {
    const at = t("2026-06-01T12:00:00Z");
    expect(nextOpening(night, "Europe/Berlin", at)).toBe(t("2026-06-02T00:00:00Z"));
    expect(nextOpening(night, "America/New_York", at)).toBe(t("2026-06-02T06:00:00Z"));
  });
});

describe("weekly windows", () => {
  const weekdays: WeeklyWindow[] = [{ days: ["mon", "tue", "wed", "thu", "fri"], start: "22:00", end: "02:00" }];

  it("a window across midnight belongs to the day it opens on", () => {
    // Friday 2026-06-05 22:00 Berlin (20:00Z) to Saturday 02:00 (00:00Z)
    expect(isOpen(weekdays, "Europe/Berlin", t("2026-06-06T00:30:00Z"))).toBe(false);
    expect(isOpen(weekdays, "Europe/Berlin", t("2026-06-05T23:30:00Z"))).toBe(true);
    // Saturday and Sunday nights stay closed: next is Monday 22:00
    expect(nextOpening(weekdays, "Europe/Berlin", t("2026-06-06T01:00:00Z"))).toBe(t("2026-06-08T20:00:00Z"));
  });

  it("a phase: install inside, download (or wait outside the download windows) with the next window's start", () => {
    const options = { timeZone: "Europe/Berlin", windows: night, downloadWindows: [{ days: EVERY_DAY, start: "20:00", end: "02:00" }] };
    expect(windowPhase(options, "Europe/Berlin", t("2026-06-02T00:30:00Z"))).toEqual({ phase: "install", nextWindowAt: null });
    expect(windowPhase(options, "Europe/Berlin", t("2026-06-01T19:00:00Z"))).toEqual({ phase: "download", nextWindowAt: t("2026-06-02T00:00:00Z") });
    expect(windowPhase(options, "Europe/Berlin", t("2026-06-01T10:00:00Z"))).toEqual({ phase: "wait", nextWindowAt: t("2026-06-02T00:00:00Z") });
    expect(windowPhase({ timeZone: "UTC", windows: night }, "UTC", t("2026-06-01T10:00:00Z")).phase).toBe("download");
  });

  it("batch timeouts count only time inside windows", () => {
    // 3 hours of window time from Monday noon Berlin: Tue 02-04 (2h) + Wed 02:00-03:00
    expect(deadlineInWindows(night, "Europe/Berlin", t("2026-06-01T10:00:00Z"), 3 * 3600)).toBe(t("2026-06-03T01:00:00Z"));
    // started inside a window: the rest of it counts
    expect(deadlineInWindows(night, "Europe/Berlin", t("2026-06-02T01:00:00Z"), 1800)).toBe(t("2026-06-02T01:30:00Z"));
    // across the spring change the window is one hour long
    expect(deadlineInWindows(night, "Europe/Berlin", t("2026-03-28T12:00:00Z"), 2 * 3600)).toBe(t("2026-03-30T01:00:00Z"));
  });

  it("property: the deadline is never earlier than the time it counts, and falls inside or at the end of a window", () => {
    fc.assert(
      fc.property(fc.integer({ min: t("2026-01-01T00:00:00Z"), max: t("2026-12-31T00:00:00Z") }), fc.integer({ min: 60, max: 5 * 86_400 }), (from, seconds) => {
        const deadline = deadlineInWindows(night, "Europe/Berlin", from, seconds)!;
        expect(deadline - from).toBeGreaterThanOrEqual(seconds * 1000);
        expect(isOpen(night, "Europe/Berlin", deadline - 1)).toBe(true);
      }),
      { numRuns: 50 },
    );
  });

  it("a device's time zone comes from its label when that names a valid zone", () => {
    const options = { timeZone: "Europe/Berlin", timeZoneLabel: "tz", windows: night };
    expect(timeZoneFor(options, { tz: "America/New_York" }, isTimeZone)).toBe("America/New_York");
    expect(timeZoneFor(options, { tz: "Nowhere/Land" }, isTimeZone)).toBe("Europe/Berlin");
    expect(timeZoneFor(options, {}, isTimeZone)).toBe("Europe/Berlin");
  });
});
