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
