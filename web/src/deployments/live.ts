// Deployments move as devices report: the realtime channel's deployment events mark the
// deployment queries stale, at most a few times a second however many devices report.
import { useEffect, useRef } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { q } from "../api/query";
import { useRealtimeEvents } from "../app/realtime";

const DEPLOYMENT_EVENTS = new Set(["deployment.status_changed", "deployment.progress", "rollout.state_changed"]);
const REFRESH_EVERY_MS = 400;

export function useLiveDeployments(): void {
  const queryClient = useQueryClient();
  const pending = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(pending.current), []);
  useRealtimeEvents((event) => {
    if (!DEPLOYMENT_EVENTS.has(event.type) || pending.current !== undefined) return;
    pending.current = window.setTimeout(() => {
      pending.current = undefined;
      void queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    }, REFRESH_EVERY_MS);
  });
}
