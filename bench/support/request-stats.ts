// Latency and answers of requests by kind, over a window (a minute of bench/fleet-day.ts, read
// and restarted by `window()`) and over the whole run: p50/p99 from a bounded reservoir
// (LatencyRecorder), the maximum exact, answers split into ok, deferred (429 and 503: "not now,
// come back after Retry-After", the ingest's backpressure, which agents honour by keeping the
// data), refused (other 4xx), failed (other 5xx) and unanswered, and the items (snapshots, log
// lines) the ok answers acknowledged.
import { LatencyRecorder } from "../../src/simulator/latency.js";

export interface KindFigures {
  count: number;
  p50: number;
  p99: number;
  max: number;
  ok: number;
  /** 429 and 503: told to come back later */
  deferred: number;
  /** other 4xx answers */
  refused: number;
  /** other 5xx answers */
  failed: number;
  /** no answer (connection error, timeout) */
  unanswered: number;
  /** items the ok answers acknowledged */
  items: number;
}

class Tally {
  readonly latency: LatencyRecorder;
  max = 0;
  ok = 0;
  refused = 0;
  deferred = 0;
  failed = 0;
  unanswered = 0;
  items = 0;

  constructor(capacity: number) {
    this.latency = new LatencyRecorder(capacity);
  }

  add(ms: number, status: number, items: number) {
    this.latency.record(ms);
    if (ms > this.max) this.max = ms;
    if (status === 0) this.unanswered++;
    else if (status === 429 || status === 503) this.deferred++;
    else if (status >= 500) this.failed++;
    else if (status >= 400) this.refused++;
    else {
      this.ok++;
      this.items += items;
    }
  }

  figures(): KindFigures {
    const s = this.latency.summary();
    const round = (n: number) => (Number.isFinite(n) ? +n.toFixed(2) : 0);
    return {
      count: s.count, p50: round(s.p50), p99: round(s.p99), max: round(this.max),
      ok: this.ok, refused: this.refused, deferred: this.deferred, failed: this.failed, unanswered: this.unanswered, items: this.items,
    };
  }
}

export class RequestStats {
  private current = new Map<string, Tally>();
  private readonly whole = new Map<string, Tally>();

  record(kind: string, ms: number, status: number, items = 0) {
    for (const [map, capacity] of [[this.current, 20_000], [this.whole, 200_000]] as const) {
      let tally = map.get(kind);
      if (!tally) map.set(kind, (tally = new Tally(capacity)));
      tally.add(ms, status, items);
    }
  }

  /** The figures since the previous call, by kind; starts a new window. */
  window(): Record<string, KindFigures> {
    const figures = Object.fromEntries([...this.current].map(([kind, t]) => [kind, t.figures()]));
    this.current = new Map();
    return figures;
  }

  /** The figures of the whole run, by kind. */
  totals(): Record<string, KindFigures> {
    return Object.fromEntries([...this.whole].map(([kind, t]) => [kind, t.figures()]));
  }
}

/** Times one request (anything answering `{ status }`); a thrown error counts as unanswered and is rethrown. */
export async function timedRequest<T extends { status: number }>(stats: RequestStats, kind: string, send: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  try {
    const res = await send();
    stats.record(kind, performance.now() - t0, res.status);
    return res;
  } catch (err) {
    stats.record(kind, performance.now() - t0, 0);
    throw err;
  }
}
