// Latency samples with percentiles: a bounded reservoir, so that a long run keeps a fair
// sample without growing without limit.
export class LatencyRecorder {
  private readonly samples: number[] = [];
  private seen = 0;

  constructor(private readonly capacity = 200_000) {}

  record(ms: number) {
    this.seen++;
    if (this.samples.length < this.capacity) this.samples.push(ms);
    else {
      const slot = Math.floor(Math.random() * this.seen);
      if (slot < this.capacity) this.samples[slot] = ms;
    }
  }

  get count() {
    return this.seen;
  }

  percentile(p: number): number {
    if (this.samples.length === 0) return NaN;
    const sorted = [...this.samples].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  }

  summary() {
    return { count: this.seen, p50: this.percentile(50), p90: this.percentile(90), p99: this.percentile(99), max: this.percentile(100) };
  }
}

/** Runs `task` from `concurrency` closed loops until `durationMs` has passed. */
export async function closedLoop(concurrency: number, durationMs: number, task: (worker: number, i: number) => Promise<void>) {
  const deadline = performance.now() + durationMs;
  let i = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, worker) => {
      while (performance.now() < deadline) await task(worker, i++);
    }),
  );
}

/**
 * Runs `task` from `clients` loops that together start `perSecond` tasks a second, evenly
 * spaced (each client every clients/perSecond seconds, phases spread), until `durationMs` has
 * passed. `task` receives the time it was due: a client that falls behind starts late, and
 * latency measured from the due time counts that wait (no coordinated omission).
 */
export async function pacedLoop(clients: number, perSecond: number, durationMs: number, task: (dueAt: number) => Promise<void>) {
  const interval = (clients * 1000) / perSecond;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let due = started + (interval * client) / clients; due < deadline; due += interval) {
        const wait = due - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        await task(due);
      }
    }),
  );
}
