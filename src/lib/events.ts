// A small, typed in-process event bus. Capabilities publish what happened (a device went
// offline, ...) and others subscribe (alerts, the realtime channel) without knowing each
// other. Delivery is after the change committed, at most once, in process.
//
// Scale-out: a transport (e.g. PostgreSQL LISTEN/NOTIFY) can be attached with
// `bus.attachTransport(t)`: published events are then also sent through it, and events it
// receives from other processes are delivered to local subscribers. Publishers do not change.
import { EventEmitter } from "node:events";
import { perService } from "./per-service.js";

/** Device status values (see docs/devices.md). */
export type DeviceStatus = "pending" | "provisioned" | "online" | "offline" | "error";

/** Every event kind and its payload. Later capabilities add their kinds here. */
export interface FleetEvents {
  "device.status_changed": {
    organizationId: string;
    deviceId: string;
    from: DeviceStatus | null;
    to: DeviceStatus;
    /** ISO 8601 time of the change */
    at: string;
  };
}

export type FleetEventName = keyof FleetEvents;

export interface EventEnvelope<K extends FleetEventName = FleetEventName> {
  name: K;
  payload: FleetEvents[K];
  /** id of the process that published it, so a transport does not deliver it twice */
  origin: string;
}

/** Carries events between processes. */
export interface EventTransport {
  send(envelope: EventEnvelope): Promise<void>;
  /** called once; the transport hands every envelope it receives to `deliver` */
  start(deliver: (envelope: EventEnvelope) => void): Promise<void>;
  stop(): Promise<void>;
}

type Handler<K extends FleetEventName> = (payload: FleetEvents[K]) => void | Promise<void>;

export class EventBus {
  private readonly emitter = new EventEmitter();
  private transport: EventTransport | null = null;
  readonly origin = `${process.pid}-${Math.random().toString(36).slice(2, 10)}`;
  /** Told of every event this process publishes (the service's metrics). */
  onPublish: ((name: FleetEventName) => void) | null = null;

  constructor(private readonly onHandlerError: (err: unknown, name: FleetEventName) => void = () => undefined) {
    // Many subscribers (one per realtime connection, ...) are expected.
    this.emitter.setMaxListeners(0);
  }

  /** Subscribes; returns the function that unsubscribes. */
  subscribe<K extends FleetEventName>(name: K, handler: Handler<K>): () => void {
    const wrapped = (payload: FleetEvents[K]) => {
      // A failing subscriber must neither break the publisher nor the other subscribers.
      try {
        const result = handler(payload);
        if (result && typeof (result as Promise<void>).catch === "function") {
          (result as Promise<void>).catch((err) => this.onHandlerError(err, name));
        }
      } catch (err) {
        this.onHandlerError(err, name);
      }
    };
    this.emitter.on(name, wrapped);
    return () => this.emitter.off(name, wrapped);
  }

  /** Delivers to local subscribers and, when attached, to the other processes. */
  publish<K extends FleetEventName>(name: K, payload: FleetEvents[K]): void {
    this.emitter.emit(name, payload);
    this.onPublish?.(name);
    if (this.transport) {
      this.transport.send({ name, payload, origin: this.origin } as EventEnvelope).catch((err) => this.onHandlerError(err, name));
    }
  }

  publishAll<K extends FleetEventName>(name: K, payloads: Iterable<FleetEvents[K]>): void {
    for (const payload of payloads) this.publish(name, payload);
  }

  async attachTransport(transport: EventTransport): Promise<void> {
    this.transport = transport;
    await transport.start((envelope) => {
      if (envelope.origin !== this.origin) this.emitter.emit(envelope.name, envelope.payload);
    });
  }

  async close(): Promise<void> {
    this.emitter.removeAllListeners();
    await this.transport?.stop();
    this.transport = null;
  }
}

/** The bus of one running service (keyed by its `Services`). */
export const eventBusOf = perService(
  (owner: object & { logger?: { warn(obj: object, msg: string): void } }) =>
    new EventBus((err, name) => owner.logger?.warn({ err: (err as Error)?.message, event: name }, "event subscriber failed")),
);
