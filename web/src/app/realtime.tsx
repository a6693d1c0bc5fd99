// The live part of the console: one WebSocket per tab to /api/v1/realtime, opened with a
// single-use ticket (POST /realtime/ticket, authenticated by the session cookie). It
// reconnects by itself with exponential back-off and jitter (1 s doubling to 30 s), and the
// shell shows its state. Pages subscribe to event types; on top of that, some events mark
// cached reads stale (STALE_AFTER below), at most every 2 s, so every open page catches up
// without a reload and a burst of changes costs one refetch per area.
import { createContext, useCallback, useContext, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { useQueryClient, type QueryKey } from "@tanstack/react-query";
import type { FleetEvents } from "../../../src/lib/events";
import { statusOf } from "../api/client";
import { q } from "../api/query";

export type ConnectionState = "connecting" | "live" | "reconnecting" | "unavailable";

export type RealtimeEvent =
  | { [K in keyof FleetEvents]: { type: K; channel: string; data: FleetEvents[K]; at: string } }[keyof FleetEvents]
  | { type: Exclude<string, keyof FleetEvents>; channel: string; data: Record<string, unknown>; at: string };

type Listener = (event: RealtimeEvent) => void;

interface Realtime {
  state: ConnectionState;
  /** seconds until the next attempt while reconnecting */
  retryInSeconds: number | null;
  subscribe(listener: Listener): () => void;
}

const RealtimeContext = createContext<Realtime>({ state: "connecting", retryInSeconds: null, subscribe: () => () => undefined });

const INVALIDATE_EVERY_MS = 2_000;

const fleetKeys = (): QueryKey[] => [q.devices.key(), q.groups.key(), q.fleet.key(), q.alerts.key()];
const deploymentKeys = (): QueryKey[] => [q.deployments.key()];
const alertKeys = (): QueryKey[] => [...fleetKeys(), q.alertRules.key()];

/**
 * The reads an event makes stale. A status change moves the fleet's numbers; an alert that fires
 * or resolves moves the active alerts, the health summary's count of them and the rules' firing
 * counts (the navigation's count of firing alerts is an alerts query too); a deployment's
 * status, progress or rollout state moves every view of deployments (the overview's
 * "Deployments in progress", the list, a rollout page).
 */
export const STALE_AFTER: Readonly<Record<string, () => QueryKey[]>> = {
  "device.status_changed": fleetKeys,
  "alert.firing": alertKeys,
  "alert.resolved": alertKeys,
  "deployment.status_changed": deploymentKeys,
  "deployment.progress": deploymentKeys,
  "rollout.state_changed": deploymentKeys,
};
const MAX_BACKOFF_MS = 30_000;

/**
 * Whether the API issues this session a ticket (src/modules/realtime/tickets.ts): the ticket needs
 * telemetry:read and at least one channel's permission. Without them the console does not ask
 * (a request it knows will be refused), and the indicator says live updates are off.
 */
export function canGoLive(permissions: readonly string[]): boolean {
  return permissions.includes("telemetry:read") && ["devices:read", "deployments:read", "alerts:read"].some((p) => permissions.includes(p));
}

export function backoffMs(attempt: number, random = Math.random()): number {
  const base = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempt);
  return Math.round(base / 2 + (base / 2) * random);
}

/** `organizationId`: where the session acts; the channel's ticket is for that organization, so a switch reconnects. */
export function RealtimeProvider({ organizationId, enabled, children }: { organizationId: string; enabled: boolean; children: ReactNode }) {
  const queryClient = useQueryClient();
  const listeners = useRef(new Set<Listener>());
  const [state, setState] = useState<ConnectionState>(enabled ? "connecting" : "unavailable");
  const [retryInSeconds, setRetryIn] = useState<number | null>(null);

  useEffect(() => {
    if (!enabled) {
      setState("unavailable");
      return;
    }
    setState("connecting");
    let socket: WebSocket | null = null;
    let stopped = false;
    let attempt = 0;
    let retryTimer: number | undefined;
    let pendingInvalidation: number | undefined;
    const staleKeys = new Map<string, QueryKey>();

    const markStale = (keys: QueryKey[]) => {
      for (const key of keys) staleKeys.set(JSON.stringify(key), key);
      if (pendingInvalidation !== undefined) return;
      pendingInvalidation = window.setTimeout(() => {
        pendingInvalidation = undefined;
        const keysNow = [...staleKeys.values()];
        staleKeys.clear();
        for (const key of keysNow) void queryClient.invalidateQueries({ queryKey: key });
      }, INVALIDATE_EVERY_MS);
    };

    const scheduleReconnect = () => {
      if (stopped) return;
      const wait = backoffMs(attempt++);
      setState("reconnecting");
      setRetryIn(Math.ceil(wait / 1000));
      retryTimer = window.setTimeout(connect, wait);
    };

    async function connect() {
      if (stopped) return;
      setRetryIn(null);
      let ticket: { ticket: string };
      try {
        ticket = await q.realtime.ticket.call({});
      } catch (err) {
        // 401: the session ended (the query client sends the user to sign-in); 403: this role
        // has no live events. Neither gets better by retrying.
        const status = statusOf(err);
        if (status === 401 || status === 403) {
          setState("unavailable");
          return;
        }
        return scheduleReconnect();
      }
      if (stopped) return;
      const scheme = location.protocol === "https:" ? "wss:" : "ws:";
      socket = new WebSocket(`${scheme}//${location.host}/api/v1/realtime?ticket=${encodeURIComponent(ticket.ticket)}`);
      socket.onmessage = (message) => {
        let event: RealtimeEvent & { type: string };
        try {
          event = JSON.parse(String(message.data));
        } catch {
          return;
        }
        if (event.type === "ready") {
          attempt = 0;
          setState("live");
          // Whatever happened while we were away: read it again.
          markStale(Object.values(STALE_AFTER).flatMap((keys) => keys()));
          return;
        }
        const staleAfter = STALE_AFTER[event.type];
        if (staleAfter) markStale(staleAfter());
        for (const listener of listeners.current) listener(event);
      };
      socket.onclose = () => {
        socket = null;
        scheduleReconnect();
      };
    }

    void connect();
    return () => {
      stopped = true;
      window.clearTimeout(retryTimer);
      window.clearTimeout(pendingInvalidation);
      socket?.close(1000, "page closed");
    };
  }, [queryClient, organizationId, enabled]);

  const subscribe = useCallback((listener: Listener) => {
    listeners.current.add(listener);
    return () => void listeners.current.delete(listener);
  }, []);
  const value = useMemo<Realtime>(() => ({ state, retryInSeconds, subscribe }), [state, retryInSeconds, subscribe]);
  return <RealtimeContext.Provider value={value}>{children}</RealtimeContext.Provider>;
}

export function useRealtimeState() {
  const { state, retryInSeconds } = useContext(RealtimeContext);
  return { state, retryInSeconds };
}

/** Calls `handler` for every live event while the component is mounted. */
export function useRealtimeEvents(handler: Listener) {
  const { subscribe } = useContext(RealtimeContext);
  const latest = useRef(handler);
  latest.current = handler;
  useEffect(() => subscribe((event) => latest.current(event)), [subscribe]);
}
