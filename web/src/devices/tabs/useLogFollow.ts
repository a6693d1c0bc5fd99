// Follow mode: a same-origin EventSource on the log stream (the session cookie goes with it),
// the last lines first, then every new one. Lines are applied a few times a second, not one
// React update per line. On any failure the stream is closed and reopened with back-off (1 s
// doubling to 30 s, as the realtime channel does), resuming after the last line received
// (`after`), so nothing is lost or shown twice. A stream that fails before it started is
// explained by asking the API once: a 401 ends the session (sign-in, then back), a 403 or 404
// stops following with the API's message instead of retrying forever (app/useEventStream.ts).
import { useCallback, useEffect, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { q } from "../../api/query";
import { useEventStream, type StreamConnection } from "../../app/useEventStream";
import { emptyFollowBuffer, pause, receive, resume, type FollowBuffer } from "./follow-buffer";
import { filterKey, logStreamUrl, type LogFilter, type LogLine } from "./logs";

/** Lines replayed when following starts. */
export const FOLLOW_TAIL = 200;
const FLUSH_EVERY_MS = 250;

export type FollowConnection = StreamConnection;

export function useLogFollow(deviceId: string, filter: LogFilter) {
  const queryClient = useQueryClient();
  const [buffer, setBuffer] = useState<FollowBuffer>(emptyFollowBuffer);
  // The newest line received survives reconnects (and "retry now"), so that they resume after it.
  const lastId = useRef<string | null>(null);
  const queue = useRef<LogLine[]>([]);
  const flushTimer = useRef<number | undefined>(undefined);

  const flush = useCallback(() => {
    window.clearTimeout(flushTimer.current);
    flushTimer.current = undefined;
    const batch = queue.current.splice(0);
    if (batch.length > 0) setBuffer((b) => receive(b, batch));
  }, []);
  useEffect(() => () => window.clearTimeout(flushTimer.current), []);

  const { connection, retryNow } = useEventStream({
    url: () => logStreamUrl(deviceId, filter, lastId.current ? { after: lastId.current } : { tail: FOLLOW_TAIL }),
    liveOn: "ready",
    events: {
      log: (line: LogLine) => {
        lastId.current = line.id;
        queue.current.push(line);
        flushTimer.current ??= window.setTimeout(flush, FLUSH_EVERY_MS);
      },
    },
    probe: () => queryClient.fetchQuery({ ...q.logs.sources.options({ id: deviceId }), staleTime: 0, retry: false }),
    resetOn: [deviceId, filterKey(filter)],
    // lines already counted in lastId must not be lost when the stream restarts
    onClose: flush,
  });

  return {
    buffer,
    connection,
    pause: useCallback(() => setBuffer(pause), []),
    resume: useCallback(() => setBuffer((b) => resume(b)), []),
    /** reconnect at once (after a stop, or instead of waiting for the next attempt) */
    retryNow,
  };
}
