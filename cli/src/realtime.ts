// Watching: the service's realtime WebSocket (POST /realtime/ticket, then GET
// /realtime?ticket=...) tells when something changed on a channel; the watcher then reads the
// resource again. A slow poll runs beside it, so a dropped connection or a proxy without
// WebSockets only makes the view slower, never stale forever.
import WebSocket from "ws";
import type { ApiClient } from "./client.js";
import { pause } from "./runtime.js";

export interface RealtimeEvent {
  type: string;
  channel: string;
  data: Record<string, unknown>;
}

/**
 * Calls `refresh` now, on every realtime event of `channel` that `relevant` accepts (coalesced),
 * and every `pollMs`; stops when `refresh` answers true or `signal` aborts.
 */
export async function watchLoop(client: ApiClient, channel: string, relevant: (e: RealtimeEvent) => boolean, refresh: () => Promise<boolean>, pollMs: number, signal: AbortSignal): Promise<void> {
  let wake: (() => void) | null = null;
  let dirty = false;
  const poke = () => {
    dirty = true;
    wake?.();
  };
  const socket = await openRealtime(client, channel, (event) => {
    if (relevant(event)) poke();
  }).catch(() => null);
  try {
    for (;;) {
      dirty = false;
      if (await refresh()) return;
      if (signal.aborted) return;
      if (!dirty) {
        const local = new AbortController();
        const stop = () => local.abort();
        signal.addEventListener("abort", stop, { once: true });
        wake = stop;
        await pause(pollMs, local.signal);
        wake = null;
        signal.removeEventListener("abort", stop);
      }
      if (signal.aborted) return;
    }
  } finally {
    socket?.terminate();
  }
}

async function openRealtime(client: ApiClient, channel: string, onEvent: (e: RealtimeEvent) => void): Promise<WebSocket | null> {
  const ticket = await client.request<{ ticket: string; channels: string[] }>("POST", "/realtime/ticket", { body: {} });
  if (!ticket.channels.includes(channel)) return null;
  const url = client.url("/realtime", { ticket: ticket.ticket }).replace(/^http/, "ws");
  return await new Promise<WebSocket>((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("error", reject);
    ws.on("unexpected-response", (_req, res) => {
      res.resume();
      reject(new Error(`realtime refused: ${res.statusCode}`));
    });
    ws.on("message", (data) => {
      const message = JSON.parse(String(data)) as RealtimeEvent;
      if (message.type === "ready") resolve(ws);
      else if (message.channel === channel) onEvent(message);
    });
  });
}
