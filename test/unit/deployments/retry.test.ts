// Retry back-off: exponential growth up to the maximum, equal jitter, the attempt limit.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { backoffCeilingSeconds, nextRetryAt, retryDelaySeconds } from "../../../src/modules/deployments/retry.js";
import { retryOptions, type RetryOptions } from "../../../src/modules/deployments/options.js";

const policy: RetryOptions = { maxAttempts: 5, initialDelaySeconds: 10, maxDelaySeconds: 60 };
const NOW = new Date("2026-03-01T12:00:00Z");

const policies = fc
  .record({ maxAttempts: fc.integer({ min: 1, max: 20 }), initialDelaySeconds: fc.integer({ min: 1, max: 86_400 }), maxDelaySeconds: fc.integer({ min: 1, max: 7 * 86_400 }) })
  .filter((p) => p.initialDelaySeconds <= p.maxDelaySeconds);
const attempts = fc.integer({ min: 1, max: 40 });
const draws = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe("backoff", () => {
  it("doubles from the initial delay and stops at the maximum", () => {
    expect([1, 2, 3, 4, 5].map((a) => backoffCeilingSeconds(a, policy))).toEqual([10, 20, 40, 60, 60]);
  });

  it("jitters between half the ceiling and the ceiling", () => {
    expect(retryDelaySeconds(2, policy, 0)).toBe(10);
    expect(retryDelaySeconds(2, policy, 0.5)).toBe(15);
    expect(retryDelaySeconds(2, policy, 0.999)).toBeCloseTo(19.99, 2);
  });

  it("gives no retry after the last attempt, and none without a policy", () => {
    expect(nextRetryAt(4, policy, NOW, 0)).toEqual(new Date("2026-03-01T12:00:30Z"));
    expect(nextRetryAt(5, policy, NOW, 0)).toBeNull();
    expect(nextRetryAt(1, null, NOW, 0)).toBeNull();
    expect(nextRetryAt(1, { ...policy, maxAttempts: 1 }, NOW, 0.3)).toBeNull();
  });

  it("property: a delay is never above the maximum nor below half the first delay", () => {
    fc.assert(
      fc.property(policies, attempts, draws, (p, attempt, r) => {
        const delay = retryDelaySeconds(attempt, p, r);
        expect(delay).toBeLessThanOrEqual(p.maxDelaySeconds);
        expect(delay).toBeGreaterThanOrEqual(p.initialDelaySeconds / 2);
      }),
    );
  });

  it("property: the ceiling never shrinks from one attempt to the next, and reaches the maximum", () => {
    fc.assert(
      fc.property(policies, attempts, (p, attempt) => {
        expect(backoffCeilingSeconds(attempt + 1, p)).toBeGreaterThanOrEqual(backoffCeilingSeconds(attempt, p));
        expect(backoffCeilingSeconds(40, p)).toBe(p.maxDelaySeconds);
      }),
    );
  });

  it("property: a retry is scheduled exactly while attempts remain, always in the future", () => {
    fc.assert(
      fc.property(policies, attempts, draws, (p, attempt, r) => {
        const at = nextRetryAt(attempt, p, NOW, r);
        if (attempt >= p.maxAttempts) expect(at).toBeNull();
        else expect(at!.getTime()).toBeGreaterThan(NOW.getTime());
      }),
    );
  });

  it("the schema refuses a first delay above the maximum, naming it", () => {
    const parsed = retryOptions.safeParse({ maxAttempts: 3, initialDelaySeconds: 61, maxDelaySeconds: 60 });
    expect(parsed.success).toBe(false);
    expect(parsed.error!.issues[0].path).toEqual(["initialDelaySeconds"]);
  });
});
