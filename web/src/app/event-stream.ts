// The pure half of useEventStream.ts: the states a stream shows, the guarded parse of an event's
// data, and what a failed attempt leads to.
import { statusOf } from "../api/client";
import { backoffMs } from "./realtime";

export type StreamConnection =
  | { state: "connecting" }
  | { state: "live" }
  /** retryInSeconds: the wait before the next attempt; null while an attempt is under way */
  | { state: "reconnecting"; retryInSeconds: number | null }
  | { state: "stopped"; error: unknown };

/** An event's JSON data, or undefined when it is not JSON (a broken event is skipped, not thrown). */
export function parseEventData(data: unknown): unknown {
  if (typeof data !== "string") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** The stream is refused for good (session ended, no permission, gone): stop, do not retry. */
export function stopsStream(error: unknown): boolean {
  const status = statusOf(error);
  return status === 401 || status === 403 || status === 404;
}

/**
 * After a failed attempt: `probeError` is what the probe threw (undefined: it answered, or the
 * stream had started and was not probed). Either stop with the error, or wait `waitMs`.
 */
export function afterFailure(attempt: number, probeError: unknown, random = Math.random()): { next: StreamConnection; waitMs: number | null } {
  if (probeError !== undefined && stopsStream(probeError)) return { next: { state: "stopped", error: probeError }, waitMs: null };
  const waitMs = backoffMs(attempt, random);
  return { next: { state: "reconnecting", retryInSeconds: Math.ceil(waitMs / 1000) }, waitMs };
}
