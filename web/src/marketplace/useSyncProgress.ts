// The store's sync progress, live: the progress stream (app/useEventStream.ts: the snapshot at
// once, then every step of a run; reconnects with back-off, stops on 401/403/404 as the store's
// own answer says). When a run ends, the store, its history and the catalog are read again.
import { useRef, useState } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { q } from "../api/query";
import { useEventStream } from "../app/useEventStream";
import { PROGRESS_URL, type SyncProgress } from "./progress";

export function useSyncProgress(enabled: boolean) {
  const queryClient = useQueryClient();
  const [progress, setProgress] = useState<SyncProgress | null>(null);
  const lastState = useRef<SyncProgress["state"] | null>(null);

  const { connection: stream } = useEventStream({
    url: () => PROGRESS_URL,
    liveOn: "progress",
    events: {
      progress: (next: SyncProgress) => {
        const previous = lastState.current;
        lastState.current = next.state;
        setProgress(next);
        const ended = (next.state === "succeeded" || next.state === "failed") && previous !== null && previous !== next.state;
        if (ended || (previous !== null && previous !== next.state && next.state === "running")) {
          void queryClient.invalidateQueries({ queryKey: q.marketplaceStore.key() });
          if (ended) void queryClient.invalidateQueries({ queryKey: q.applications.key() });
        }
      },
    },
    probe: () => q.marketplaceStore.get.fetch(),
    enabled,
    resetOn: [],
  });

  return { progress, stream };
}
