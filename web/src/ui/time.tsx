// Times as people read them: "3 min ago" that keeps itself current (one shared ticker for
// the whole page), with the exact time in the tooltip and for screen readers.
import { useSyncExternalStore } from "react";

const listeners = new Set<() => void>();
let now = Date.now();
let timer: number | undefined;

function subscribe(listener: () => void) {
  listeners.add(listener);
  if (timer === undefined) {
    timer = window.setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 15_000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0 && timer !== undefined) {
      window.clearInterval(timer);
      timer = undefined;
    }
  };
}

/** The current time, refreshed every 15 s for every subscriber at once. */
export function useNow(): number {
  return useSyncExternalStore(subscribe, () => now);
}

const units: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 86_400_000],
  ["month", 30 * 86_400_000],
  ["day", 86_400_000],
  ["hour", 3_600_000],
  ["minute", 60_000],
];
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "short" });

export function formatRelative(iso: string, reference: number): string {
  const diff = new Date(iso).getTime() - reference;
  const abs = Math.abs(diff);
  if (abs < 45_000) return diff <= 0 ? "just now" : "in a moment";
  for (const [unit, ms] of units) {
    if (abs >= ms || unit === "minute") return relative.format(Math.round(diff / ms), unit);
  }
  return "";
}

// The console's one date format, wherever a date is shown (Users, Organization, certificates,
// sync runs, ...): "Dec 7, 2026, 2:09:01 AM" in the browser's language and time zone. Log lines
// add the milliseconds (lines a few ms apart stay apart), in the same format otherwise. No page
// formats a date itself (test/unit/console-dates.test.ts).
const DATE_TIME = { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit" } as const;
const absolute = new Intl.DateTimeFormat(undefined, DATE_TIME);
const precise = new Intl.DateTimeFormat(undefined, { ...DATE_TIME, fractionalSecondDigits: 3 });

/** A date and time as the console shows it everywhere. */
export function formatDateTime(iso: string): string {
  return absolute.format(new Date(iso));
}

/** The same, to the millisecond (log lines). */
export function formatPreciseDateTime(iso: string): string {
  return precise.format(new Date(iso));
}

/** A date in a table cell or a sentence: the console's format, machine-readable underneath. */
export function DateTime({ value }: { value: string }) {
  return <time dateTime={value} className="nowrap">{formatDateTime(value)}</time>;
}

export function RelativeTime({ value, never = "never" }: { value: string | null | undefined; never?: string }) {
  // The shared clock ticks every 15 s: data fetched since the last tick (a device seen a
  // second ago) would read "in a moment" against it. Never measure from before this render.
  const current = Math.max(useNow(), Date.now());
  if (!value) return <span className="faint">{never}</span>;
  return (
    <time dateTime={value} title={formatDateTime(value)} className="nowrap">
      {formatRelative(value, current)}
    </time>
  );
}
