// SIGINT and SIGTERM ask for a graceful stop; pressing Ctrl-C again means "leave now". But one
// Ctrl-C often arrives two or three times within milliseconds: the terminal sends it to every
// process of the foreground group, and npm and tsx also relay it to their child. So a repeat
// only forces the exit when it comes a moment after the first (a person pressing again), not
// as the echo of the same keypress, which would cut in-flight requests and jobs short.

/** Repeats closer than this to the first signal are the same request to stop. */
export const SIGNAL_ECHO_MS = 1000;

export interface StopSignals {
  /** Whether a stop has been asked for (by a signal or through `request`). */
  readonly stopping: boolean;
  /** Asks for the graceful stop from elsewhere (a cluster primary's message); no-op once stopping. */
  request(reason: string): void;
}

/**
 * Calls `stop` on the first SIGINT or SIGTERM (or `request`), and `leaveNow` on a signal that
 * comes at least SIGNAL_ECHO_MS later; echoes in between are ignored.
 */
export function onStopSignals(stop: (reason: string) => void, leaveNow: () => void, now: () => number = Date.now): StopSignals {
  let firstAt: number | null = null;
  const request = (reason: string) => {
    if (firstAt !== null) return;
    firstAt = now();
    stop(reason);
  };
  const signal = (name: string) => {
    if (firstAt === null) return request(name);
    if (now() - firstAt >= SIGNAL_ECHO_MS) leaveNow();
  };
  process.on("SIGINT", () => signal("SIGINT"));
  process.on("SIGTERM", () => signal("SIGTERM"));
  return {
    get stopping() {
      return firstAt !== null;
    },
    request,
  };
}
