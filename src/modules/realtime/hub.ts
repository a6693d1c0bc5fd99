// The realtime connections of one process and the events they receive. The hub subscribes
// once per event kind to the event bus (which, on PostgreSQL, also carries the events of the
// other processes) and hands each event to the connections of the event's organization whose
// ticket granted its channel.
import type { WebSocket } from "ws";
import type { Services } from "../../services.js";
import { eventBusOf, type FleetEventName } from "../../lib/events.js";
import type { RealtimeChannel, TicketHolder } from "./tickets.js";
import { metricsOf } from "../metrics/registry.js";

/**
 * Event kinds forwarded to clients, by channel. Kinds that no capability publishes yet
 * (deployments) are listed so that they flow as soon as someone publishes them with an
 * `organizationId` in the payload.
 */
export const REALTIME_EVENTS: Record<string, RealtimeChannel> = {
  "device.status_changed": "devices",
  "deployment.status_changed": "deployments",
  "deployment.progress": "deployments",
  "rollout.state_changed": "deployments",
  "alert.firing": "alerts",
  "alert.resolved": "alerts",
};

const PING_INTERVAL_MS = 30_000;
/** A client that does not read its messages is disconnected rather than buffered forever. */
const MAX_BUFFERED_BYTES = 1024 * 1024;

interface Connection {
  ws: WebSocket;
  holder: TicketHolder;
  alive: boolean;
}

export class RealtimeHub {
  private readonly byOrganization = new Map<string, Set<Connection>>();
  private readonly unsubscribes: Array<() => void> = [];
  private readonly pinger: NodeJS.Timeout;

  constructor(private readonly services: Services) {
    const bus = eventBusOf(services);
    for (const [name, channel] of Object.entries(REALTIME_EVENTS)) {
      this.unsubscribes.push(
        bus.subscribe(name as FleetEventName, (payload) => this.dispatch(name, channel, payload as { organizationId?: string })),
      );
    }
    // Pings find connections whose peer vanished without closing (a pulled cable).
    this.pinger = setInterval(() => {
      for (const set of this.byOrganization.values()) {
        for (const c of set) {
          if (!c.alive) {
            c.ws.terminate();
            continue;
          }
          c.alive = false;
          c.ws.ping();
        }
      }
    }, PING_INTERVAL_MS);
    this.pinger.unref();
  }

  get size() {
    let n = 0;
    for (const set of this.byOrganization.values()) n += set.size;
    return n;
  }

  add(ws: WebSocket, holder: TicketHolder) {
    const connection: Connection = { ws, holder, alive: true };
    let set = this.byOrganization.get(holder.organizationId);
    if (!set) this.byOrganization.set(holder.organizationId, (set = new Set()));
    set.add(connection);
    const metrics = metricsOf(this.services);
    metrics?.websockets.inc();
    ws.on("pong", () => (connection.alive = true));
    ws.on("close", () => {
      metrics?.websockets.dec();
      set!.delete(connection);
      if (set!.size === 0 && this.byOrganization.get(holder.organizationId) === set) this.byOrganization.delete(holder.organizationId);
    });
    ws.on("error", () => ws.terminate());
    // Clients only listen; whatever they send is ignored.
    this.send(connection, { type: "ready", organizationId: holder.organizationId, channels: holder.channels, at: new Date().toISOString() });
  }

  private dispatch(type: string, channel: RealtimeChannel, payload: { organizationId?: string }) {
    const set = payload?.organizationId ? this.byOrganization.get(payload.organizationId) : undefined;
    if (!set) return;
    const message = { type, channel, data: payload, at: new Date().toISOString() };
    for (const c of set) if (c.holder.channels.includes(channel)) this.send(c, message);
  }

  private send(c: Connection, message: unknown) {
    if (c.ws.readyState !== c.ws.OPEN) return;
    if (c.ws.bufferedAmount > MAX_BUFFERED_BYTES) {
      metricsOf(this.services)?.messagesDropped.inc({ reason: "slow_consumer" });
      c.ws.close(1013, "too slow: messages are not being read");
      return;
    }
    c.ws.send(JSON.stringify(message));
  }

  close() {
    clearInterval(this.pinger);
    for (const off of this.unsubscribes) off();
    for (const set of this.byOrganization.values()) for (const c of set) c.ws.close(1001, "server shutting down");
    this.byOrganization.clear();
  }
}
