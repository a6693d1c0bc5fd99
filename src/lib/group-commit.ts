// Group commit: many small writes that arrive at once become one statement. A write waits at
// most for the statements in flight; whatever arrived meanwhile goes out together as the next
// statement. With no load a write is one statement of one item at once (no added delay);
// under load the statements grow instead of queueing, so the database does one round trip,
// one plan and one commit for many devices. No timers: nothing to stop at shutdown, and every
// waiting write is answered. Used by the heartbeat writer and the telemetry writer.

export interface GroupCommitOptions {
  /** statements running at once (PGlite runs one at a time anyway) */
  maxInFlight: number;
  /** rows per statement: the sum of the items' weights (an item heavier than this goes alone) */
  maxBatch: number;
}

export interface GroupCommitSpec<T, R> {
  /** Writes the items in one statement; answers one result per item, in their order. */
  write(items: T[]): Promise<R[]>;
  /** Items with the same key never share a statement: the later one waits for the next. */
  keyOf?(item: T): string;
  /** Rows an item counts for against maxBatch (default 1). */
  weightOf?(item: T): number;
}

/** SQLSTATEs worth one more try of the whole batch: deadlock with another writer, serialization failure. */
const RETRYABLE = new Set(["40P01", "40001"]);

interface Waiting<T, R> {
  item: T;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export class GroupCommit<T, R> {
  private queue: Waiting<T, R>[] = [];
  private inFlight = 0;
  private scheduled = false;
  /** rows (weights) written and statements run, for benchmarks and tests */
  readonly stats = { rows: 0, statements: 0, largestBatch: 0 };

  /** Read at every flush: a benchmark may switch to one item per statement to compare. */
  options: GroupCommitOptions;
  /** Told of every statement: its rows, its time, and its error if it failed (the service's metrics). */
  onStatement: ((rows: number, seconds: number, error?: unknown) => void) | null = null;

  constructor(private readonly spec: GroupCommitSpec<T, R>, options: GroupCommitOptions) {
    this.options = options;
  }

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      this.kick();
    });
  }

  private kick() {
    if (this.scheduled || this.inFlight >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    // setImmediate: the requests parsed in the same turn of the event loop join this batch.
    setImmediate(() => {
      this.scheduled = false;
      while (this.inFlight < this.options.maxInFlight && this.queue.length > 0) {
        const batch = this.take();
        this.inFlight++;
        void this.run(batch).finally(() => {
          this.inFlight--;
          this.kick();
        });
      }
    });
  }

  private weight(w: Waiting<T, R>): number {
    return this.spec.weightOf?.(w.item) ?? 1;
  }

  /** The next batch, oldest first: up to maxBatch rows, each key once. */
  private take(): Waiting<T, R>[] {
    const batch: Waiting<T, R>[] = [];
    const rest: Waiting<T, R>[] = [];
    const keys = new Set<string>();
    let rows = 0;
    for (const w of this.queue) {
      const key = this.spec.keyOf?.(w.item);
      const weight = this.weight(w);
      if ((batch.length === 0 || rows + weight <= this.options.maxBatch) && (key === undefined || !keys.has(key))) {
        if (key !== undefined) keys.add(key);
        rows += weight;
        batch.push(w);
      } else {
        rest.push(w);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async run(batch: Waiting<T, R>[]) {
    for (let attempt = 1; ; attempt++) {
      const started = this.onStatement ? performance.now() : 0;
      try {
        const results = await this.spec.write(batch.map((w) => w.item));
        const rows = batch.reduce((n, w) => n + this.weight(w), 0);
        this.onStatement?.(rows, (performance.now() - started) / 1000);
        this.stats.rows += rows;
        this.stats.statements++;
        this.stats.largestBatch = Math.max(this.stats.largestBatch, rows);
        batch.forEach((w, i) => w.resolve(results[i]));
        return;
      } catch (err) {
        this.onStatement?.(0, (performance.now() - started) / 1000, err);
        if (attempt < 3 && RETRYABLE.has(sqlStateOf(err))) continue;
        if (batch.length === 1) return batch[0].reject(err);
        // One item can fail the whole statement (a value PostgreSQL refuses, such as "\u0000"
        // in jsonb): each item then gets its own statement, and only the bad one fails.
        await Promise.all(batch.map((w) => this.run([w])));
        return;
      }
    }
  }
}

function sqlStateOf(err: unknown): string {
  const e = err as { code?: unknown } | null;
  return typeof e?.code === "string" ? e.code : "";
}
