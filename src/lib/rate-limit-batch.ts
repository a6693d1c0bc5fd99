// Request budgets shared through PostgreSQL at fleet rates.
//
// rate-limiter-flexible's Postgres store runs one upsert per consume. With the per-source and
// per-device budgets both on, that is two round trips per heartbeat, and it took the lean
// heartbeat on PostgreSQL from 3,151 to 788 a second (docs/benchmarks.md). This store keeps
// that library's table, row format and arithmetic (points added within the window, window
// restarted once expired, the clock being the process's) but merges every consume that
// arrives while a statement is in flight into the next statement, as the heartbeat writer
// does: one round trip per batch, whatever its size and whichever budgets it touches. Counts
// stay exact across processes: every point is added in the database before it is answered.
import type pg from "pg";
import { RateLimiterRes, type RateLimiterMemory, type RateLimiterPostgres } from "rate-limiter-flexible";

/** Keys of one statement at most (a batch is one jsonb parameter). */
const MAX_BATCH = 2_000;

interface Waiter {
  key: string;
  points: number;
  durationMs: number;
  resolve(row: { points: number; expire: number }): void;
  reject(err: unknown): void;
}

// Same keys are merged before the statement (ON CONFLICT may not touch a row twice); each
// waiter then learns the total as it stood after its own points.
// The table is unlogged and the commit does not wait for a WAL flush: a crash forgets the
// last budgets, which cost nothing to forget (a restart of one process does the same).
const UPSERT = `
  WITH async_commit AS (SELECT set_config('synchronous_commit', 'off', true) AS "setting")
  INSERT INTO rate_limits AS r ("key", "points", "expire")
  SELECT x.k, x.p, x.e FROM jsonb_to_recordset($1::jsonb) AS x(k text, p int, e bigint)
   WHERE EXISTS (SELECT 1 FROM async_commit a WHERE a."setting" = 'off')
  ON CONFLICT ("key") DO UPDATE SET
    "points" = CASE WHEN r."expire" <= $2::bigint THEN EXCLUDED."points" ELSE r."points" + EXCLUDED."points" END,
    "expire" = CASE WHEN r."expire" <= $2::bigint THEN EXCLUDED."expire" ELSE r."expire" END
  RETURNING r."key", r."points", r."expire"`;

export class ConsumeBatcher {
  private pending: Waiter[] = [];
  private running = false;

  constructor(private readonly pool: pg.Pool) {}

  /** Adds `points` to `key` (a window of `durationMs`); resolves with the key's total after them. */
  add(key: string, points: number, durationMs: number): Promise<{ points: number; expire: number }> {
    return new Promise((resolve, reject) => {
      this.pending.push({ key, points, durationMs, resolve, reject });
      if (!this.running) void this.flush();
    });
  }

  private async flush() {
    this.running = true;
    try {
      while (this.pending.length > 0) await this.write(this.pending.splice(0, MAX_BATCH));
    } finally {
      this.running = false;
    }
  }

  private async write(batch: Waiter[]) {
    const now = Date.now();
    const byKey = new Map<string, { p: number; e: number; waiters: Waiter[] }>();
    for (const w of batch) {
      const entry = byKey.get(w.key);
      if (entry) {
        entry.p += w.points;
        entry.waiters.push(w);
      } else byKey.set(w.key, { p: w.points, e: now + w.durationMs, waiters: [w] });
    }
    try {
      const rows = JSON.stringify([...byKey].map(([k, { p, e }]) => ({ k, p, e })));
      // prepared (a name): parsed once per connection and planned once, not on every batch
      const { rows: totals } = await this.pool.query<{ key: string; points: number; expire: string }>({ name: "fleet_rate_limit_consume", text: UPSERT, values: [rows, now] });
      for (const row of totals) {
        const entry = byKey.get(row.key)!;
        let total = row.points - entry.p;
        for (const w of entry.waiters) w.resolve({ points: (total += w.points), expire: Number(row.expire) });
      }
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}

/**
 * The subset of a rate-limiter-flexible limiter the service uses, with consumes batched
 * through `ConsumeBatcher`. While the database cannot be reached, consumes fall back to a
 * per-process memory limiter (the library's `insuranceLimiter` behaviour).
 */
export class BatchedPostgresLimiter {
  constructor(
    private readonly batcher: ConsumeBatcher,
    private readonly store: RateLimiterPostgres,
    private readonly insurance: RateLimiterMemory,
  ) {}

  async consume(key: string, points = 1): Promise<RateLimiterRes> {
    let total: { points: number; expire: number };
    try {
      total = await this.batcher.add(this.store.getKey(key), points, this.store.duration * 1000);
    } catch {
      return this.insurance.consume(key, points);
    }
    const res = new RateLimiterRes(Math.max(0, this.store.points - total.points), Math.max(0, total.expire - Date.now()), total.points, total.points === points);
    if (total.points > this.store.points) throw res;
    return res;
  }

  get(key: string): Promise<RateLimiterRes | null> {
    return this.store.get(key);
  }
}
