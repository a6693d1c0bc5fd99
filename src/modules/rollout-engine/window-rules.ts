// The rules of maintenance windows, pure (no import) so the console checks a window exactly
// as the API does and says so in the same words: options.ts builds its schema from them.

export const WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Weekday = (typeof WEEKDAYS)[number];

export const CLOCK_START = /^([01]\d|2[0-3]):[0-5]\d$/;
export const CLOCK_END = /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/;
export const CLOCK_START_MESSAGE = "a time of day HH:MM (00:00 to 23:59)";
export const CLOCK_END_MESSAGE = "a time of day HH:MM (00:00 to 24:00)";
export const TIME_ZONE_MESSAGE = "not an IANA time zone (such as Europe/Berlin)";
export const MAX_WINDOWS = 50;

export interface WindowShape {
  days: readonly string[];
  start: string;
  end: string;
}

/** Whether the platform knows the IANA time zone (no hand-kept list). */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** Why a window never opens, or null when it does. */
export function neverOpens(w: WindowShape): string | null {
  if (w.days.length === 0) return "this window never opens: it names no day";
  if (w.start === w.end) return `this window never opens: it starts and ends at ${w.start}`;
  return null;
}

/**
 * Every problem of a set of windows, keyed by its path below the windows object
 * (`timeZone`, `windows.0.start`, `downloadWindows.1`), in the API's words; {} when none.
 */
export function windowProblems(value: { timeZone: string; windows: readonly WindowShape[]; downloadWindows?: readonly WindowShape[] }): Record<string, string> {
  const problems: Record<string, string> = {};
  if (!isTimeZone(value.timeZone)) problems.timeZone = TIME_ZONE_MESSAGE;
  for (const key of ["windows", "downloadWindows"] as const) {
    const list = value[key] ?? [];
    if (list.length > MAX_WINDOWS) problems[key] = `at most ${MAX_WINDOWS} windows`;
    list.forEach((w, i) => {
      if (!CLOCK_START.test(w.start)) problems[`${key}.${i}.start`] = CLOCK_START_MESSAGE;
      if (!CLOCK_END.test(w.end)) problems[`${key}.${i}.end`] = CLOCK_END_MESSAGE;
      const why = neverOpens(w);
      if (why) problems[`${key}.${i}`] = why;
    });
  }
  if (value.windows.length === 0) problems.windows = "name at least one window";
  return problems;
}
