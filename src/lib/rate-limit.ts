// Rate limits, shared by every process of an installation: on PostgreSQL the counters live
// in a table (rate-limiter-flexible's Postgres store, with an in-memory fallback while the
// database is unreachable); on the embedded database, which serves one process, in memory.
import type pg from "pg";
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";

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

export interface RateLimiters {
  source: RateLimiterAbstract;
  credential: RateLimiterAbstract;
  device: RateLimiterAbstract;
  loginByAccount: RateLimiterAbstract;
  loginBySource: RateLimiterAbstract;
}

export class RateLimited extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("Too many requests");
  }
}

function limiter(pool: pg.Pool | undefined, keyPrefix: string, points: number, duration: number): RateLimiterAbstract {
  const memory = new RateLimiterMemory({ keyPrefix, points, duration });
  if (!pool) return memory;
  return new RateLimiterPostgres({
    storeClient: pool,
    storeType: "pool",
    tableName: "rate_limits",
    keyPrefix,
    points,
    duration,
    clearExpiredByTimeout: true,
    tableCreated: true,
    insuranceLimiter: memory,
  });
}

export function createRateLimiters(settings: RateLimitSettings, pool?: pg.Pool): RateLimiters {
  return {
    source: limiter(pool, "src", settings.perSource, 60),
    credential: limiter(pool, "cred", settings.perCredential, 60),
    device: limiter(pool, "device", settings.perDevice, 60),
    loginByAccount: limiter(pool, "login_acct", settings.loginFailures, 15 * 60),
    loginBySource: limiter(pool, "login_src", settings.loginFailures * 10, 15 * 60),
  };
}

/** Takes one point; throws RateLimited with the wait when the budget is spent. */
export async function consume(l: RateLimiterAbstract, key: string, points = 1): Promise<void> {
  try {
    await l.consume(key, points);
  } catch (err) {
    if (err instanceof RateLimiterRes) throw new RateLimited(Math.max(1, Math.ceil(err.msBeforeNext / 1000)));
    throw err;
  }
}

/** Whether a key has already spent its budget, without taking a point. */
export async function isBlocked(l: RateLimiterAbstract, key: string): Promise<number | null> {
  const res = await l.get(key);
  if (res && res.remainingPoints <= 0) return Math.max(1, Math.ceil(res.msBeforeNext / 1000));
  return null;
}
