// One life cycle for the console's server-sent event streams (log follow, the marketplace's sync
// progress): a same-origin EventSource (the session cookie goes with it) opened on `url()` (read
// per attempt, so a reconnect can resume), its events' JSON handed to `events`, "live" once the
// `liveOn` event arrives. On a failure the stream is closed and reopened with the realtime
// channel's back-off (EventSource would retry by itself at a fixed pace); a stream that fails
// before it went live is explained by `probe` (asking the API the same question once): a
// 401/403/404 stops it with the API's error instead of retrying forever. The handlers are read
// when events arrive (useEffectEvent), so changing them never reopens the stream; `resetOn` does.
import { useCallback, useEffect, useEffectEvent, useState } from "react";
import { afterFailure, parseEventData, type StreamConnection } from "./event-stream";

export type { StreamConnection } from "./event-stream";

export function useEventStream({ url, events, liveOn, probe, enabled = true, resetOn, onClose }: {
  url: () => string;
  /** per event name, its handler of the parsed data (an event that is not JSON is skipped) */
  events: Record<string, (data: any) => void>;
  /** the event that says the stream is live */
  liveOn: string;
  /** asked when an attempt fails before the stream went live: what it throws decides stop or retry */
  probe: () => Promise<unknown>;
  enabled?: boolean;
  /** values whose change opens the stream anew */
  resetOn: readonly unknown[];
  /** when the stream is closed for good (unmount, reset) */
  onClose?: () => void;
}) {
  const [connection, setConnection] = useState<StreamConnection>({ state: "connecting" });
  const [attemptNow, setAttemptNow] = useState(0);
  const currentUrl = useEffectEvent(url);
  const names = useEffectEvent(() => Object.keys(events));
  const dispatch = useEffectEvent((name: string, data: unknown) => events[name]?.(data));
  const ask = useEffectEvent(probe);
  const closed = useEffectEvent(() => onClose?.());

  useEffect(() => {
    if (!enabled) return;
    let source: EventSource | null = null;
    let stopped = false;
    let attempt = 0;
    let retryTimer: number | undefined;

    const open = () => {
      if (stopped) return;
      if (attempt > 0) setConnection({ state: "reconnecting", retryInSeconds: null });
      let started = false;
      const es = new EventSource(currentUrl());
      source = es;
      const eventNames = new Set([...names(), liveOn]);
      for (const name of eventNames) {
        es.addEventListener(name, (event) => {
          if (name === liveOn && !started) {
            started = true;
            attempt = 0;
            setConnection({ state: "live" });
          }
          const data = parseEventData((event as MessageEvent<unknown>).data);
          if (data !== undefined) dispatch(name, data);
        });
      }
      es.onerror = () => {
        es.close();
        source = null;
        if (!stopped) void recover(started);
      };
    };

    const recover = async (started: boolean) => {
      let probeError: unknown;
      if (!started) {
        try {
          await ask();
        } catch (err) {
          probeError = err;
        }
      }
      if (stopped) return;
      const { next, waitMs } = afterFailure(attempt++, probeError);
      setConnection(next);
      if (waitMs !== null) retryTimer = window.setTimeout(open, waitMs);
    };

    setConnection({ state: "connecting" });
    open();
    return () => {
      stopped = true;
      source?.close();
      window.clearTimeout(retryTimer);
      closed();
    };
  }, [enabled, liveOn, attemptNow, ...resetOn]); // eslint-disable-line react-hooks/exhaustive-deps

  return {
    connection,
    /** reconnect at once (after a stop, or instead of waiting for the next attempt) */
    retryNow: useCallback(() => setAttemptNow((n) => n + 1), []),
  };
}
