// Follow mode: a same-origin EventSource on the log stream (the session cookie goes with it),
// the last lines first, then every new one. Lines are applied a few times a second, not one
// React update per line. On any failure the stream is closed and reopened with back-off (1 s
// doubling to 30 s, as the realtime channel does), resuming after the last line received
// (`after`), so nothing is lost or shown twice. A stream that fails before it started is
// explained by asking the API once: a 401 ends the session (sign-in, then back), a 403 or 404
// stops following with the API's message instead of retrying forever.
import { useCallback, useEffect, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { statusOf } from "../../api/client";
import { q } from "../../api/query";
import { backoffMs } from "../../app/realtime";
import { emptyFollowBuffer, pause, receive, resume, type FollowBuffer } from "./follow-buffer";
import { filterKey, logStreamUrl, type LogFilter, type LogLine } from "./logs";

/** Lines replayed when following starts. */
export const FOLLOW_TAIL = 200;
const FLUSH_EVERY_MS = 250;

export type FollowConnection =
  | { state: "connecting" }
  | { state: "live" }
  /** retryInSeconds: the wait before the next attempt; null while an attempt is under way */
  | { state: "reconnecting"; retryInSeconds: number | null }
  | { state: "stopped"; error: unknown };

export function useLogFollow(deviceId: string, filter: LogFilter) {
  const queryClient = useQueryClient();
  const [buffer, setBuffer] = useState<FollowBuffer>(emptyFollowBuffer);
  const [connection, setConnection] = useState<FollowConnection>({ state: "connecting" });
  const [attemptNow, setAttemptNow] = useState(0);
  // The newest line received survives reconnects (and "retry now"), so that they resume after it.
  const lastId = useRef<string | null>(null);
  const key = filterKey(filter);
  const latestFilter = useRef(filter);
  latestFilter.current = filter;

  useEffect(() => {
    let source: EventSource | null = null;
    let stopped = false;
    let attempt = 0;
    let retryTimer: number | undefined;
    let flushTimer: number | undefined;
    const queue: LogLine[] = [];

    const flush = () => {
      flushTimer = undefined;
      const batch = queue.splice(0);
      if (batch.length > 0) setBuffer((b) => receive(b, batch));
    };

    const open = () => {
      if (stopped) return;
      if (attempt > 0) setConnection({ state: "reconnecting", retryInSeconds: null });
      let started = false;
      const from = lastId.current ? { after: lastId.current } : { tail: FOLLOW_TAIL };
      const es = new EventSource(logStreamUrl(deviceId, latestFilter.current, from));
      source = es;
      es.addEventListener("log", (event) => {
        const line = JSON.parse((event as MessageEvent<string>).data) as LogLine;
        lastId.current = line.id;
        queue.push(line);
        flushTimer ??= window.setTimeout(flush, FLUSH_EVERY_MS);
      });
      es.addEventListener("ready", () => {
        started = true;
        attempt = 0;
        setConnection({ state: "live" });
      });
      es.onerror = () => {
        // EventSource would retry by itself at a fixed pace; we retry with back-off instead.
        es.close();
        source = null;
        if (!stopped) void recover(started);
      };
    };

    const recover = async (started: boolean) => {
      if (!started) {
        try {
          await queryClient.fetchQuery({ ...q.logs.sources.options({ id: deviceId }), staleTime: 0, retry: false });
        } catch (err) {
          const status = statusOf(err);
          if (status === 401 || status === 403 || status === 404) {
            if (!stopped) setConnection({ state: "stopped", error: err });
            return;
          }
        }
      }
      if (stopped) return;
      const wait = backoffMs(attempt++);
      setConnection({ state: "reconnecting", retryInSeconds: Math.ceil(wait / 1000) });
      retryTimer = window.setTimeout(open, wait);
    };

    setConnection({ state: "connecting" });
    open();
    return () => {
      stopped = true;
      source?.close();
      window.clearTimeout(retryTimer);
      window.clearTimeout(flushTimer);
      flush(); // lines already counted in lastId must not be lost when the stream restarts
    };
  }, [deviceId, key, attemptNow, queryClient]);

  return {
    buffer,
    connection,
    pause: useCallback(() => setBuffer(pause), []),
    resume: useCallback(() => setBuffer((b) => resume(b)), []),
    /** reconnect at once (after a stop, or instead of waiting for the next attempt) */
    retryNow: useCallback(() => setAttemptNow((n) => n + 1), []),
  };
}
