// Signals between the processes about remote sessions, over the realtime pub/sub (NOTIFY on
// PostgreSQL, local delivery on PGlite): "a session waits for device X" wakes that device's
// long-poll wherever it is held, and "session S ended" closes its legs wherever they are.
// Signals carry ids only; the table is the truth, re-read after every signal.
import { EventEmitter } from "node:events";
import type { Services } from "../../services.js";
import { perService } from "../../lib/per-service.js";
import { CHANNELS, pubSubOf } from "../realtime/pubsub.js";

export type RemoteSignal =
  | { type: "offer"; deviceId: string }
  | { type: "ended"; sessionId: string; reason: string; message?: string };

export class RemoteSignals {
  private readonly local = new EventEmitter();
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly services: Services) {
    this.local.setMaxListeners(0);
    const pubsub = pubSubOf(services);
    this.unsubscribe.push(pubsub.subscribe(CHANNELS.remote, (body) => this.deliver(body as RemoteSignal)));
    // The LISTEN connection came back: an offer may have been missed; every waiter looks again.
    this.unsubscribe.push(pubsub.onResync(() => this.local.emit("resync")));
    pubsub.start().catch(() => undefined);
  }

  private deliver(signal: RemoteSignal) {
    if (signal.type === "offer") this.local.emit(`offer:${signal.deviceId}`);
    else this.local.emit("ended", signal);
  }

  /** Sent after the commit that made it true. */
  publish(signal: RemoteSignal): void {
    pubSubOf(this.services)
      .publish(CHANNELS.remote, signal)
      .catch((err: Error) => this.services.logger.warn({ err: err.message }, "remote signal not sent"));
  }

  /** Calls `wake` when an offer for the device may be waiting; returns the unsubscribe. */
  onOffer(deviceId: string, wake: () => void): () => void {
    this.local.on(`offer:${deviceId}`, wake);
    this.local.on("resync", wake);
    return () => {
      this.local.off(`offer:${deviceId}`, wake);
      this.local.off("resync", wake);
    };
  }

  onEnded(handler: (signal: Extract<RemoteSignal, { type: "ended" }>) => void): () => void {
    this.local.on("ended", handler);
    return () => this.local.off("ended", handler);
  }

  close() {
    for (const u of this.unsubscribe) u();
    this.local.removeAllListeners();
  }
}

export const remoteSignalsOf = perService((services: Services) => new RemoteSignals(services));
