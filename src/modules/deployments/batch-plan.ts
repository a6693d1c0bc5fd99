// How a staged rollout is cut into batches: pure and free of imports, so that the web console
// previews the batch sizes with the very code the service plans with (web/src/deployments
// imports this file; the bundle test checks that nothing else of the server comes along).
// The service plans when a rollout is initialized (targets.ts); strategy.ts holds the schema.

/** `{ count }` devices, or `{ percent }` (rounded up) of a base. */
export type Share = { count: number } | { percent: number };

/** The strategy's fields the plan depends on. */
export interface BatchShares {
  canary: Share;
  batches: Share[];
}

export interface PlannedBatch {
  index: number;
  kind: "canary" | "batch";
  size: number;
}

/** `percent` of `base`, rounded up; 500 * 32.2 / 100 is 161.00000000000003 in floating point, and 161 here. */
export function ceilPercent(base: number, percent: number): number {
  return Math.ceil(Number(((base * percent) / 100).toPrecision(12)));
}

function sizeOf(part: Share, base: number): number {
  return "count" in part ? part.count : ceilPercent(base, part.percent);
}

/**
 * Cuts `eligible` devices into the canary and the batches. Empty batches are dropped; the
 * last planned batch takes whatever remains, and a plan without batches gets one for the rest.
 */
export function planBatches(strategy: BatchShares, eligible: number): PlannedBatch[] {
  if (eligible === 0) return [];
  const canary = Math.min(eligible, Math.max(1, sizeOf(strategy.canary, eligible)));
  const plan: PlannedBatch[] = [{ index: 0, kind: "canary", size: canary }];
  const afterCanary = eligible - canary;
  let remaining = afterCanary;
  const parts = strategy.batches.length ? strategy.batches : [{ percent: 100 }];
  parts.forEach((part, i) => {
    if (remaining === 0) return;
    const last = i === parts.length - 1;
    const size = last ? remaining : Math.min(remaining, Math.max(1, sizeOf(part, afterCanary)));
    plan.push({ index: plan.length, kind: "batch", size });
    remaining -= size;
  });
  return plan;
}
