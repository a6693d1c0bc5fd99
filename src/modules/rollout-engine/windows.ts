// Maintenance windows of deployments and jobs: when a weekly window is open, when it opens
// next, and when a batch timeout runs out if only time inside windows counts. Pure (the
// instant is an argument).
// Local times are read and made with the platform's Intl time zone data, never with offsets
// kept by hand: a window "02:00-04:00" in Europe/Berlin lasts one hour on the night the clocks
// go forward and three on the night they go back (test/unit/rollout-engine/windows.test.ts).
//
// A local time that does not exist (in the gap when clocks go forward) is read as the instant
// the same length of time after the gap started, and one that exists twice (clocks go back)
// as the earlier one: the "compatible" rule of Temporal and of most calendars.
import { WEEKDAYS, type MaintenanceWindows, type WindowOptions, type WeeklyWindow } from "./options.js";
import { isTimeZone } from "./window-rules.js";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

const formats = new Map<string, Intl.DateTimeFormat>();
function formatOf(timeZone: string): Intl.DateTimeFormat {
  let f = formats.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", { timeZone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    formats.set(timeZone, f);
  }
  return f;
}

/** The wall-clock time at `instant` in `timeZone`, written as if it were UTC (for arithmetic on dates). */
function wallClock(instant: number, timeZone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatOf(timeZone).formatToParts(new Date(instant))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
}

/** The instant at which the wall clock of `timeZone` shows `wall` (see the rule above). */
export function instantOf(wall: number, timeZone: string): number {
  // At most one clock change lies within half a day of any time: the offsets before and after it.
  const early = wall - (wallClock(wall - 14 * HOUR, timeZone) - (wall - 14 * HOUR));
  const late = wall - (wallClock(wall + 14 * HOUR, timeZone) - (wall + 14 * HOUR));
  const fits = [early, late].filter((t) => wallClock(t, timeZone) === wall);
  if (fits.length) return Math.min(...fits);
  return early;
}

export interface Interval {
  open: number;
  close: number;
}

function minutesOf(clock: string): number {
  const [h, m] = clock.split(":").map(Number);
  return h * 60 + m;
}

/** The openings of `windows` whose local opening day lies in [fromDay - 1, fromDay + days], merged and sorted. */
export function openIntervals(windows: WeeklyWindow[], timeZone: string, from: number, days: number): Interval[] {
  const today = wallClock(from, timeZone);
  const firstDay = Date.UTC(new Date(today).getUTCFullYear(), new Date(today).getUTCMonth(), new Date(today).getUTCDate()) - DAY;
  const intervals: Interval[] = [];
  for (let i = 0; i <= days + 1; i++) {
    const day = firstDay + i * DAY;
    // getUTCDay: 0 = Sunday; WEEKDAYS starts on Monday
    const weekday = WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7];
    for (const w of windows) {
      if (!w.days.includes(weekday)) continue;
      const start = minutesOf(w.start);
      const end = minutesOf(w.end);
      const endDay = end > start ? day : day + DAY;
      const open = instantOf(day + start * MINUTE, timeZone);
      const close = instantOf(endDay + end * MINUTE, timeZone);
      if (close > open) intervals.push({ open, close });
    }
  }
  intervals.sort((a, b) => a.open - b.open);
  const merged: Interval[] = [];
  for (const i of intervals) {
    const last = merged[merged.length - 1];
    if (last && i.open <= last.close) last.close = Math.max(last.close, i.close);
    else merged.push({ ...i });
  }
  return merged;
}

/** Whether a window is open at `at`. */
export function isOpen(windows: WeeklyWindow[], timeZone: string, at: number): boolean {
  return openIntervals(windows, timeZone, at, 1).some((i) => i.open <= at && at < i.close);
}

/** When a window is open next, from `at` on (`at` itself when one is open); null when none opens within two weeks. */
export function nextOpening(windows: WeeklyWindow[], timeZone: string, at: number): number | null {
  const next = openIntervals(windows, timeZone, at, 14).find((i) => i.close > at);
  return next ? Math.max(next.open, at) : null;
}

/**
 * When `seconds` of time inside the windows will have passed since `from`: a batch timeout
 * that counts only time in which its devices may install. Null when no window opens.
 */
export function deadlineInWindows(windows: WeeklyWindow[], timeZone: string, from: number, seconds: number): number | null {
  let left = seconds * 1000;
  let cursor = from;
  // Weekly windows repeat: look a few weeks ahead at a time.
  for (let round = 0; round < 60; round++) {
    const intervals = openIntervals(windows, timeZone, cursor, 21);
    for (const i of intervals) {
      if (i.close <= cursor) continue;
      const start = Math.max(i.open, cursor);
      if (i.close - start >= left) return start + left;
      left -= i.close - start;
      cursor = i.close;
    }
    if (!intervals.length) return null;
    cursor = Math.max(cursor, intervals[intervals.length - 1].close);
  }
  return null;
}

/** The time zone a device's windows are read in: its label's when that names a valid zone, else the rollout's. */
export function timeZoneFor(options: WindowOptions, labels: Record<string, string> | null | undefined, isValid: (tz: string) => boolean): string {
  const own = options.timeZoneLabel ? labels?.[options.timeZoneLabel] : undefined;
  return own && isValid(own) ? own : options.timeZone;
}

export type WindowPhase = "install" | "download" | "wait";

/**
 * What a device may do with a deployment now: install (or remove) inside an install window;
 * only download inside a download window (any time when there is none); else wait. With the
 * next install window's start when it may not install now.
 */
export function windowPhase(options: MaintenanceWindows, timeZone: string, at: number): { phase: WindowPhase; nextWindowAt: number | null } {
  if (isOpen(options.windows, timeZone, at)) return { phase: "install", nextWindowAt: null };
  const nextWindowAt = nextOpening(options.windows, timeZone, at);
  const mayDownload = !options.downloadWindows?.length || isOpen(options.downloadWindows, timeZone, at);
  return { phase: mayDownload ? "download" : "wait", nextWindowAt };
}

/**
 * Whether a device may be handed a job's action now (a window open in its time zone), and
 * when not, when its next window opens (null: none within two weeks).
 */
export function actionWindowState(options: WindowOptions, labels: Record<string, string> | null | undefined, at: number): { open: boolean; opensAt: number | null } {
  const timeZone = timeZoneFor(options, labels, isTimeZone);
  if (isOpen(options.windows, timeZone, at)) return { open: true, opensAt: null };
  return { open: false, opensAt: nextOpening(options.windows, timeZone, at) };
}
