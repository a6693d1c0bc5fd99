// The store's sync progress, live: a same-origin EventSource on the progress stream (the
// session cookie goes with it) gives the snapshot at once and every step of a run. On a failure
// it is closed and reopened with the realtime channel's back-off (devices/tabs/useLogFollow.ts
// does the same for logs); a stream that fails before its first event is explained by asking
// the API for the snapshot once: 401/403/404 stop it instead of retrying forever. When a run
// ends, the store, its history and the catalog are read again.
import { useEffect, useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { statusOf } from "../api/client";
import { q } from "../api/query";
import { backoffMs } from "../app/realtime";
import { PROGRESS_URL, type SyncProgress } from "./progress";

export type StreamState = { state: "connecting" } | { state: "live" } | { state: "reconnecting"; retryInSeconds: number } | { state: "stopped"; error: unknown };

export function useSyncProgress(enabled: boolean) {
  const queryClient = useQueryClient();
  const [progress, setProgress] = useState<SyncProgress | null>(null);
  const [stream, setStream] = useState<StreamState>({ state: "connecting" });
  const lastState = useRef<SyncProgress["state"] | null>(null);

  useEffect(() => {
    if (!enabled) return;
    let source: EventSource | null = null;
    let stopped = false;
    let attempt = 0;
    let retryTimer: number | undefined;

    const open = () => {
      if (stopped) return;
      let started = false;
      const es = new EventSource(PROGRESS_URL);
      source = es;
      es.addEventListener("progress", (event) => {
        const next = JSON.parse((event as MessageEvent<string>).data) as SyncProgress;
        if (!started) {
          started = true;
          attempt = 0;
          setStream({ state: "live" });
        }
        const previous = lastState.current;
        lastState.current = next.state;
        setProgress(next);
        const ended = (next.state === "succeeded" || next.state === "failed") && previous !== null && previous !== next.state;
        if (ended || (previous !== null && previous !== next.state && next.state === "running")) {
          void queryClient.invalidateQueries({ queryKey: q.marketplaceStore.key() });
          if (ended) void queryClient.invalidateQueries({ queryKey: q.applications.key() });
        }
      });
      es.onerror = () => {
        es.close();
        source = null;
        if (!stopped) void recover(started);
      };
    };

    const recover = async (started: boolean) => {
      if (!started) {
        try {
          await q.marketplaceStore.get.fetch();
        } catch (err) {
          const status = statusOf(err);
          if (status === 401 || status === 403 || status === 404) {
            if (!stopped) setStream({ state: "stopped", error: err });
            return;
          }
        }
      }
      if (stopped) return;
      const wait = backoffMs(attempt++);
      setStream({ state: "reconnecting", retryInSeconds: Math.ceil(wait / 1000) });
      retryTimer = window.setTimeout(open, wait);
    };

    setStream({ state: "connecting" });
    open();
    return () => {
      stopped = true;
      source?.close();
      window.clearTimeout(retryTimer);
    };
  }, [enabled, queryClient]);

  return { progress, stream };
}
