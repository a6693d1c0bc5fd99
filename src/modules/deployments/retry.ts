// Automatic retries: when a device that failed is given the install again. Pure (the clock
// and the random draw are arguments) so that the rules are tested alone, with properties
// (test/unit/deployments/retry.test.ts); agent-state.ts applies them to the reports a
// heartbeat carries, dispatch.ts hands out the retries that are due.
import type { RetryOptions } from "./options.js";

/**
 * The longest delay after attempt `failedAttempt` failed: initialDelaySeconds doubled with
 * every attempt after the first, never above maxDelaySeconds.
 */
export function backoffCeilingSeconds(failedAttempt: number, policy: RetryOptions): number {
  // 2^30 is far beyond any maxDelaySeconds: cap the exponent so the product stays finite
  const doubled = policy.initialDelaySeconds * 2 ** Math.min(Math.max(failedAttempt - 1, 0), 30);
  return Math.min(policy.maxDelaySeconds, doubled);
}

/**
 * The delay before the next attempt, with "equal jitter": half the ceiling, plus a random
 * share of the other half. Devices that failed together (a broken mirror, a site outage)
 * then do not all come back in the same second, and no delay is shorter than half the
 * ceiling. `random` is a draw in [0, 1).
 */
export function retryDelaySeconds(failedAttempt: number, policy: RetryOptions, random: number): number {
  const ceiling = backoffCeilingSeconds(failedAttempt, policy);
  return ceiling / 2 + (ceiling / 2) * Math.min(Math.max(random, 0), 1);
}

/** When the device gets attempt `failedAttempt + 1`; null when that was its last attempt. */
export function nextRetryAt(failedAttempt: number, policy: RetryOptions | null, now: Date, random: number): Date | null {
  if (!policy || failedAttempt >= policy.maxAttempts) return null;
  return new Date(now.getTime() + Math.round(retryDelaySeconds(failedAttempt, policy, random) * 1000));
}
