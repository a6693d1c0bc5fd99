// Rate limits, shared by every process of an installation: on PostgreSQL the counters live
// in a table (rate-limiter-flexible's Postgres store; the per-request budgets batched through
// src/lib/rate-limit-batch.ts; an in-memory fallback while the database is unreachable); on
// the embedded database, which serves one process, in memory.
import type pg from "pg";
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";
import { BatchedPostgresLimiter, ConsumeBatcher } from "./rate-limit-batch.js";

export interface RateLimitSettings {
  /** requests per minute from one source address */
  perSource: number;
  /** requests per minute of one API key, or of one user across all their sessions */
  perCredential: number;
  /** requests per minute of one device */
  perDevice: number;
  /** failed sign-ins per 15 minutes for one e-mail address, and for one source address (x10) */
  loginFailures: number;
}

/** What the service asks of a limiter (rate-limiter-flexible's, or the batched one). */
export type Limiter = Pick<RateLimiterAbstract, "consume" | "get">;

export interface RateLimiters {
  source: Limiter;
  /** Sources this process has seen over budget (refused before any work until then). */
  blockedSources: BlockedSources;
  credential: Limiter;
  device: Limiter;
  loginByAccount: Limiter;
  loginBySource: Limiter;
}

/**
 * Source addresses over their budget, with when they may come back. Learned by each process
 * from its own refused consume (another process learns on its next one), and checked before
 * anything else, so an address that has spent its budget costs no further work (no key hash,
 * no signature check, no database round trip) until its window ends.
 */
export class BlockedSources {
  private static readonly MAX_ENTRIES = 100_000;
  private readonly until = new Map<string, number>();

  block(source: string, retryAfterSeconds: number) {
    if (this.until.size >= BlockedSources.MAX_ENTRIES) this.prune();
    this.until.set(source, Date.now() + retryAfterSeconds * 1000);
  }

  /** Seconds until `source` may come back, or null when it is not blocked. */
  retryAfter(source: string): number | null {
    const until = this.until.get(source);
    if (until === undefined) return null;
    const ms = until - Date.now();
    if (ms > 0) return Math.ceil(ms / 1000);
    this.until.delete(source);
    return null;
  }

  private prune() {
    const now = Date.now();
    for (const [source, until] of this.until) if (until <= now) this.until.delete(source);
    // Still full: a flood from that many addresses; the shared counters still hold them.
    if (this.until.size >= BlockedSources.MAX_ENTRIES) this.until.clear();
  }
}

export class RateLimited extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("Too many requests");
  }
}

function postgresLimiter(pool: pg.Pool, keyPrefix: string, points: number, duration: number) {
  const insuranceLimiter = new RateLimiterMemory({ keyPrefix, points, duration });
  const store = new RateLimiterPostgres({
    storeClient: pool,
    storeType: "pool",
    tableName: "rate_limits",
    keyPrefix,
    points,
    duration,
    clearExpiredByTimeout: true,
    tableCreated: true,
    insuranceLimiter,
  });
  return { store, insuranceLimiter };
}

export function createRateLimiters(settings: RateLimitSettings, pool?: pg.Pool): RateLimiters {
  // The embedded database serves one process: its budgets live in memory.
  const memory = (keyPrefix: string, points: number, duration: number) => new RateLimiterMemory({ keyPrefix, points, duration });
  // The budgets every request spends are batched (src/lib/rate-limit-batch.ts); sign-in
  // failures are rare and go through the library's store one by one.
  const batcher = pool ? new ConsumeBatcher(pool) : null;
  const perRequest = (keyPrefix: string, points: number, duration: number): Limiter => {
    if (!pool || !batcher) return memory(keyPrefix, points, duration);
    const { store, insuranceLimiter } = postgresLimiter(pool, keyPrefix, points, duration);
    return new BatchedPostgresLimiter(batcher, store, insuranceLimiter);
  };
  const rare = (keyPrefix: string, points: number, duration: number): Limiter =>
    pool ? postgresLimiter(pool, keyPrefix, points, duration).store : memory(keyPrefix, points, duration);
  return {
    source: perRequest("src", settings.perSource, 60),
    blockedSources: new BlockedSources(),
    credential: perRequest("cred", settings.perCredential, 60),
    device: perRequest("device", settings.perDevice, 60),
    loginByAccount: rare("login_acct", settings.loginFailures, 15 * 60),
    loginBySource: rare("login_src", settings.loginFailures * 10, 15 * 60),
  };
}

/** Takes one point; throws RateLimited with the wait when the budget is spent. */
export async function consume(l: Limiter, key: string, points = 1): Promise<void> {
  try {
    await l.consume(key, points);
  } catch (err) {
    if (err instanceof RateLimiterRes) throw new RateLimited(Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
    throw err;
  }
}

/** Whether a key has already spent its budget, without taking a point. */
export async function isBlocked(l: Limiter, key: string): Promise<number | null> {
  const res = await l.get(key);
  if (res && res.remainingPoints <= 0) return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return null;
}
