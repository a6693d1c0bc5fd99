// Small messages between the processes of one installation: "device X has new log lines",
// and the events of the event bus (device status, deployments, alerts).
//
// Every message is delivered to local subscribers at once. On PostgreSQL it is also sent
// with NOTIFY, and a dedicated connection LISTENs for the messages of other processes (a
// process ignores its own by their origin). On PGlite there is one process: local delivery
// is all there is. NOTIFY is database-scoped, so separate databases never see each other.
import { EventEmitter } from "node:events";
import pg from "pg";
import type { Services } from "../../services.js";
import type { EventEnvelope, EventTransport } from "../../lib/events.js";
import { perService } from "../../lib/per-service.js";
import { metricsOf } from "../metrics/registry.js";

// remote: remote-access offers and session ends (src/modules/remote-sessions/signals.ts)
export const CHANNELS = { logs: "fleet_logs", events: "fleet_events", remote: "fleet_remote" } as const;
type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];

/** PostgreSQL refuses NOTIFY payloads of 8000 bytes or more. */
const MAX_PAYLOAD_BYTES = 7900;
const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 30_000;

interface Wire {
  origin: string;
  body: unknown;
}

export class PubSub {
  readonly origin = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  private readonly local = new EventEmitter();
  private client: pg.Client | null = null;
  private stopped = false;
  private reconnectDelay = RECONNECT_MIN_MS;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private starting: Promise<void> | null = null;

  constructor(private readonly services: Services) {
    this.local.setMaxListeners(0);
  }

  private get pool(): pg.Pool | undefined {
    return this.services.database.opened.raw.kind === "postgres" ? this.services.database.opened.pool : undefined;
  }

  /** Subscribes to a channel (messages of this process and, when listening, of the others). */
  subscribe(channel: Channel, handler: (body: unknown) => void): () => void {
    this.local.on(channel, handler);
    return () => this.local.off(channel, handler);
  }

  /** Subscribers of a channel in this process (diagnostics and tests: streams must let go). */
  subscriberCount(channel: Channel): number {
    return this.local.listenerCount(channel);
  }

  /** Whether the LISTEN connection is up (PostgreSQL only). */
  get listening(): boolean {
    return this.client !== null;
  }

  /** Called when the LISTEN connection came back: messages may have been missed meanwhile. */
  onResync(handler: () => void): () => void {
    this.local.on("resync", handler);
    return () => this.local.off("resync", handler);
  }

  async publish(channel: Channel, body: unknown): Promise<void> {
    this.deliver(channel, body);
    const pool = this.pool;
    if (!pool || this.stopped) return;
    const payload = JSON.stringify({ origin: this.origin, body } satisfies Wire);
    if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) {
      this.services.logger.warn({ channel, bytes: Buffer.byteLength(payload) }, "message too large for NOTIFY; delivered in this process only");
      metricsOf(this.services)?.messagesDropped.inc({ reason: "oversized" });
      return;
    }
    await pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
  }

  private deliver(channel: string, body: unknown) {
    try {
      this.local.emit(channel, body);
    } catch (err) {
      this.services.logger.warn({ err: (err as Error).message, channel }, "pubsub subscriber failed");
    }
  }

  /** Starts listening for other processes (PostgreSQL only); idempotent. */
  start(): Promise<void> {
    if (!this.pool) return Promise.resolve();
    this.starting ??= this.connect().catch((err) => {
      this.services.logger.warn({ err: (err as Error).message }, "LISTEN connection failed; retrying");
      this.scheduleReconnect();
    });
    return this.starting;
  }

  private async connect(): Promise<void> {
    const pool = this.pool!;
    const client = new pg.Client({ ...(pool.options as pg.ClientConfig) });
    client.on("error", () => undefined); // reported through "end" below
    client.on("notification", (msg) => {
      if (!msg.payload) return;
      try {
        const wire = JSON.parse(msg.payload) as Wire;
        if (wire.origin !== this.origin) this.deliver(msg.channel, wire.body);
      } catch {
        /* not ours */
      }
    });
    client.on("end", () => {
      if (this.client === client) this.client = null;
      if (!this.stopped) this.scheduleReconnect();
    });
    await client.connect();
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    await client.query(Object.values(CHANNELS).map((c) => `LISTEN ${c}`).join("; "));
    const wasReconnect = this.reconnectDelay > RECONNECT_MIN_MS;
    this.client = client;
    this.reconnectDelay = RECONNECT_MIN_MS;
    if (wasReconnect) this.local.emit("resync");
  }

  private scheduleReconnect() {
    if (this.stopped || this.reconnectTimer) return;
    const delay = this.reconnectDelay;
    this.reconnectDelay = Math.min(this.reconnectDelay * 2, RECONNECT_MAX_MS);
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect().catch(() => this.scheduleReconnect());
    }, delay);
    this.reconnectTimer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    this.local.removeAllListeners();
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  /** The event bus's transport over this pub/sub (see src/lib/events.ts). */
  eventTransport(): EventTransport {
    let unsubscribe: (() => void) | null = null;
    return {
      send: async (envelope) => {
        // Local subscribers already got it from the bus itself: send to the others only.
        const pool = this.pool;
        if (!pool || this.stopped) return;
        const payload = JSON.stringify({ origin: this.origin, body: envelope } satisfies Wire);
        if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) return void metricsOf(this.services)?.messagesDropped.inc({ reason: "oversized" });
        await pool.query("SELECT pg_notify($1, $2)", [CHANNELS.events, payload]);
      },
      start: async (deliver) => {
        unsubscribe = this.subscribe(CHANNELS.events, (body) => deliver(body as EventEnvelope));
        await this.start();
      },
      stop: async () => {
        unsubscribe?.();
      },
    };
  }
}

export const pubSubOf = perService((services: Services) => new PubSub(services));
