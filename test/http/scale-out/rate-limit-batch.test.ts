// The per-request budgets on PostgreSQL (src/lib/rate-limit-batch.ts): consumes that arrive
// together share one statement, the counts stay exact across processes (two limiter sets on
// one table stand for two processes), the window restarts once it has expired, and an
// unreachable database falls back to the in-memory budget instead of failing the request.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { RateLimiterRes } from "rate-limiter-flexible";
import { createHarness, type Harness } from "../../support/harness.js";
import { createRateLimiters } from "../../../src/lib/rate-limit.js";
import { databaseUrlOf } from "./processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const settings = { perSource: 30, perCredential: 1000, perDevice: 5, loginFailures: 10 };

async function outcomes(promises: Promise<unknown>[]) {
  const settled = await Promise.allSettled(promises);
  return {
    allowed: settled.filter((s) => s.status === "fulfilled").length,
    refused: settled.flatMap((s) => (s.status === "rejected" ? [s.reason] : [])),
  };
}

describe.skipIf(!ON_POSTGRES)("batched request budgets on PostgreSQL (skipped without DATABASE_URL)", () => {
  let h: Harness;
  let poolA: pg.Pool;
  let poolB: pg.Pool;
  let statements = 0;

  beforeAll(async () => {
    h = await createHarness();
    poolA = new pg.Pool({ connectionString: databaseUrlOf(h), max: 4 });
    poolB = new pg.Pool({ connectionString: databaseUrlOf(h), max: 4 });
    const query = poolA.query.bind(poolA);
    poolA.query = ((...args: Parameters<typeof query>) => (statements++, query(...args))) as typeof poolA.query;
  });
  afterAll(async () => {
    await poolA?.end();
    await poolB?.end();
    await h?.close();
  });

  it("answers 60 concurrent requests from two processes with exactly the budget, in a few statements", async () => {
    const [a, b] = [createRateLimiters(settings, poolA), createRateLimiters(settings, poolB)];
    statements = 0;
    const { allowed, refused } = await outcomes([
      ...Array.from({ length: 30 }, () => a.source.consume("203.0.113.7")),
      ...Array.from({ length: 30 }, () => b.source.consume("203.0.113.7")),
    ]);
    expect(allowed).toBe(30);
    expect(refused).toHaveLength(30);
    for (const r of refused) {
      expect(r).toBeInstanceOf(RateLimiterRes);
      expect((r as RateLimiterRes).msBeforeNext).toBeGreaterThan(50_000);
    }
    expect(statements).toBeLessThanOrEqual(3); // 30 consumes of process A: batched, not one each
    const [row] = await h.services.database.opened.raw.query<{ points: number }>(`SELECT "points" FROM rate_limits WHERE "key" = 'src:203.0.113.7'`);
    expect(row.points).toBe(60);
    // another key, another budget; the device budget is its own
    await expect(a.source.consume("203.0.113.8")).resolves.toBeInstanceOf(RateLimiterRes);
    const devices = await outcomes(Array.from({ length: 7 }, () => b.device.consume("device-1")));
    expect([devices.allowed, devices.refused.length]).toEqual([5, 2]);
  });

  // Counters of the last minutes are not worth a WAL record and a flush per batch
  // (prisma/migrations/20261206113000_rate_limits_unlogged): the heartbeat's path adds one
  // point per heartbeat.
  it("keeps the budgets in an unlogged table", async () => {
    const [table] = await h.services.database.opened.raw.query<{ relpersistence: string }>(`SELECT "relpersistence" FROM pg_class WHERE "relname" = 'rate_limits'`);
    expect(table.relpersistence).toBe("u");
  });

  it("starts a new window once the old one has expired", async () => {
    const a = createRateLimiters(settings, poolA);
    await h.services.database.opened.raw.query(`UPDATE rate_limits SET "expire" = 1 WHERE "key" = 'src:203.0.113.7'`);
    const res = (await a.source.consume("203.0.113.7")) as RateLimiterRes;
    expect(res.consumedPoints).toBe(1);
    expect(res.remainingPoints).toBe(29);
  });

  it("falls back to the in-memory budget while the database cannot be reached", async () => {
    const dead = new pg.Pool({ connectionString: "postgresql://postgres@127.0.0.1:9/none", connectionTimeoutMillis: 500 });
    dead.on("error", () => undefined);
    const limiters = createRateLimiters(settings, dead);
    const { allowed, refused } = await outcomes(Array.from({ length: 7 }, () => limiters.device.consume("device-2")));
    expect([allowed, refused.length]).toEqual([5, 2]);
    await dead.end();
  });
});
