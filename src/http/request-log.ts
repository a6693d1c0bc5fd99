// The level of a request's log line (src/app.ts). One info line per request buried everything
// else (a fleet heartbeats all the time; the first-start block scrolled away in seconds), so an
// ordinary request is logged at `debug` (LOG_LEVEL=debug shows them all); a server error, or a
// request slower than LOG_SLOW_REQUEST_MS (0: none is slow), at `warn`. A stream of
// server-sent events lasts as long as its reader wants: never slow.
export function requestLogLevel(status: number, ms: number, contentType: string, slowMs: number): "debug" | "warn" {
  if (status >= 500) return "warn";
  if (slowMs > 0 && ms >= slowMs && !contentType.startsWith("text/event-stream")) return "warn";
  return "debug";
}
