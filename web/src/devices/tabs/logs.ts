// The logs tab's pure logic: the filters as the URL holds them (levels comma-separated,
// source, text search) and as the API takes them, and the follow stream's address.
import type { RouterInputs, RouterOutputs } from "../../api/client";
import type { DeviceDetailSearch } from "../search";

export type LogLevel = NonNullable<RouterInputs["logs"]["list"]["level"]>[number];
export type LogLine = RouterOutputs["logs"]["list"]["items"][number];

/** Every level, least to most severe (checked against the API's type). */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "fatal"] as const satisfies readonly LogLevel[];

export interface LogFilter {
  level?: LogLevel[];
  source?: string;
  q?: string;
}

/** Known levels of a comma-separated list, in severity order, once each; none or only unknown ones: every level. */
export function parseLevels(text: string | undefined): LogLevel[] | undefined {
  const wanted = new Set((text ?? "").split(",").map((l) => l.trim().toLowerCase()));
  const levels = LOG_LEVELS.filter((l) => wanted.has(l));
  return levels.length > 0 && levels.length < LOG_LEVELS.length ? levels : undefined;
}

/** The URL's form of a level selection (undefined: every level). */
export function formatLevels(levels: readonly LogLevel[]): string | undefined {
  return parseLevels(levels.join(","))?.join(",");
}

/** The API's filter from the URL: the search trimmed (the API refuses an empty one, and more than 200 characters). */
export function logFilterOf(search: Pick<DeviceDetailSearch, "level" | "source" | "search">): LogFilter {
  const q = search.search?.trim().slice(0, 200);
  return { level: parseLevels(search.level), source: search.source || undefined, q: q || undefined };
}

/** A stable text for a filter: what the follow stream restarts on. */
export function filterKey(filter: LogFilter): string {
  return JSON.stringify([filter.level ?? null, filter.source ?? null, filter.q ?? null]);
}

/**
 * The follow stream (SSE) of a device: the last `tail` lines, or, after a reconnect, every line
 * after `after` (the last one received), then new lines as they arrive.
 */
export function logStreamUrl(deviceId: string, filter: LogFilter, from: { tail: number } | { after: string }): string {
  const params = new URLSearchParams();
  if ("after" in from) params.set("after", from.after);
  else params.set("tail", String(from.tail));
  for (const level of filter.level ?? []) params.append("level", level);
  if (filter.source) params.set("source", filter.source);
  if (filter.q) params.set("q", filter.q);
  return `/api/v1/devices/${encodeURIComponent(deviceId)}/logs/stream?${params}`;
}
