// What a device keeps until the service has taken it: its telemetry snapshots and log lines,
// sent oldest first in batches. The agent protocol's rule for a busy service (docs/devices.md,
// "When the service is busy"): on 429 or 503 wait `Retry-After`, keep the data, send it again;
// the same for an answer that never came (network error, 5xx): a batch is only forgotten once
// answered 2xx, or when the service says the batch itself is wrong (400, 413), which no resend
// can change. Bounded like an agent's disk: past `capacity` the oldest data waiting (not the
// batch in flight) is dropped and counted.

/** The answer to one batch, as far as the outbox cares. */
export interface Delivery {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body?: unknown;
}

export type FlushOutcome =
  /** the batch was taken (2xx) */
  | "sent"
  /** refused for now (429, 503, 5xx, any other refusal) or unanswered: kept; the service may be asked again in `waitMs` */
  | "deferred"
  /** refused for good (400, 413: the batch is wrong): dropped */
  | "dropped"
  /** nothing to send, still waiting out a Retry-After, or a batch already in flight */
  | "idle";

export interface FlushResult {
  outcome: FlushOutcome;
  /** the service's answer, when it gave one */
  delivery?: Delivery;
  /** the request failed without an answer */
  error?: Error;
  /** items in the batch */
  items: number;
  /** deferred: ms until the service may be asked again */
  waitMs?: number;
}

export interface OutboxOptions<T = unknown> {
  /** items kept at most; beyond, the oldest waiting ones are dropped */
  capacity: number;
  /** items per request at most (the endpoint's limit) */
  batchSize: number;
  /** back-off when the service says nothing about when to come back (no Retry-After, no answer) */
  defaultRetryMs?: number;
  now?: () => number;
  /** where the items are kept across restarts (the real agent's disk); default: memory only */
  store?: OutboxStore<T>;
}

/** Keeps an outbox's items where a restart finds them; `save` is called after every change. */
export interface OutboxStore<T> {
  load(): T[];
  save(items: readonly T[]): void;
}

/**
 * Refusals no resend can change: the batch itself is wrong (the protocol names these two; any
 * other answer but a 2xx keeps the batch: docs/devices.md, "When the service is busy").
 */
const BATCH_IS_WRONG = new Set([400, 413]);
const DEFAULT_RETRY_MS = 5000;

/** A Retry-After value (delay in seconds, or an HTTP date) in ms from `now`; null when absent or unreadable. */
export function retryAfterMs(value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (text === undefined || text.trim() === "") return null;
  if (/^\s*\d+\s*$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

export class Outbox<T> {
  private items: T[] = [];
  /** the oldest items, this many, are in a request right now */
  private inFlight = 0;
  private notBefore = 0;
  /** items ever added, and those dropped (overflow or refused for good) */
  added = 0;
  dropped = 0;
  private readonly now: () => number;

  constructor(private readonly options: OutboxOptions<T>) {
    this.now = options.now ?? Date.now;
    if (options.store) this.items = options.store.load().slice(-options.capacity);
  }

  /** items waiting to be taken (the batch in flight included) */
  get size(): number {
    return this.items.length;
  }

  add(items: T[]) {
    this.items.push(...items);
    this.added += items.length;
    const excess = this.items.length - this.options.capacity;
    if (excess > 0) {
      // the oldest of those not in flight: the batch in flight is removed by count when answered
      this.dropped += this.items.splice(this.inFlight, excess).length;
    }
    this.options.store?.save(this.items);
  }

  /** ms until the service may be asked again (0: now) */
  waitMs(): number {
    return Math.max(0, this.notBefore - this.now());
  }

  /** Sends the oldest batch through `send` unless there is none, a Retry-After runs, or one is in flight. */
  async flush(send: (batch: T[]) => Promise<Delivery>): Promise<FlushResult> {
    if (this.items.length === 0 || this.inFlight > 0 || this.waitMs() > 0) return { outcome: "idle", items: 0 };
    const batch = this.items.slice(0, this.options.batchSize);
    this.inFlight = batch.length;
    let delivery: Delivery;
    try {
      delivery = await send(batch);
    } catch (err) {
      return this.defer(batch.length, { error: err as Error }, null);
    } finally {
      this.inFlight = 0;
    }
    if (delivery.status >= 200 && delivery.status < 300) {
      this.items.splice(0, batch.length);
      this.options.store?.save(this.items);
      return { outcome: "sent", delivery, items: batch.length };
    }
    if (BATCH_IS_WRONG.has(delivery.status)) {
      this.items.splice(0, batch.length);
      this.options.store?.save(this.items);
      this.dropped += batch.length;
      return { outcome: "dropped", delivery, items: batch.length };
    }
    return this.defer(batch.length, { delivery }, retryAfterMs(delivery.headers["retry-after"], this.now()));
  }

  private defer(items: number, answer: { delivery?: Delivery; error?: Error }, waitMs: number | null): FlushResult {
    const wait = waitMs ?? this.options.defaultRetryMs ?? DEFAULT_RETRY_MS;
    this.notBefore = this.now() + wait;
    return { outcome: "deferred", ...answer, items, waitMs: wait };
  }
}
