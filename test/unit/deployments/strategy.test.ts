// The strategy shapes and how a staged rollout is cut into batches.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { planBatches, stagedStrategy, strategySchema, type StagedStrategy } from "../../../src/modules/deployments/strategy.js";

type Share = { count: number } | { percent: number };

function staged(canary: Share, batches: Share[] = []): StagedStrategy {
  return stagedStrategy.parse({ type: "staged", canary, batches });
}

const sizes = (canary: Share, batches: Share[], eligible: number) => planBatches(staged(canary, batches), eligible).map((b) => b.size);

describe("planBatches", () => {
  it("plans nothing for no eligible device", () => {
    expect(planBatches(staged({ count: 1 }, [{ count: 2 }]), 0)).toEqual([]);
  });

  it("cuts counts, numbering the batches after the canary, the last one taking the rest", () => {
    expect(planBatches(staged({ count: 1 }, [{ count: 2 }, { count: 3 }]), 10)).toEqual([
      { index: 0, kind: "canary", size: 1 },
      { index: 1, kind: "batch", size: 2 },
      { index: 2, kind: "batch", size: 7 },
    ]);
  });

  it("the last batch takes whatever remains, even when it names fewer or more", () => {
    expect(sizes({ count: 2 }, [{ count: 3 }, { count: 1 }], 20)).toEqual([2, 3, 15]);
    expect(sizes({ count: 2 }, [{ count: 3 }, { count: 100 }], 20)).toEqual([2, 3, 15]);
    expect(sizes({ count: 2 }, [{ percent: 10 }], 20)).toEqual([2, 18]);
  });

  it("a canary percent is of the eligible devices, rounded up", () => {
    expect(sizes({ percent: 10 }, [], 25)).toEqual([3, 22]); // 2.5 -> 3
    expect(sizes({ percent: 10 }, [], 20)).toEqual([2, 18]);
    expect(sizes({ percent: 0.1 }, [], 5)).toEqual([1, 4]); // 0.005 -> 1
    expect(sizes({ percent: 100 }, [{ count: 1 }], 7)).toEqual([7]);
  });

  it("a batch percent is a share, rounded up, of the devices that remain after the canary", () => {
    // 9 after the canary: 30% = 2.7 -> 3
    expect(sizes({ count: 1 }, [{ percent: 30 }, { percent: 30 }, { percent: 40 }], 10)).toEqual([1, 3, 3, 3]);
    // 22 after the canary: 50% = 11 of 22, not of 25
    expect(sizes({ percent: 10 }, [{ percent: 50 }, { percent: 50 }], 25)).toEqual([3, 11, 11]);
    // 99 after the canary: 10% = 9.9 -> 10 each
    expect(sizes({ count: 1 }, [{ percent: 10 }, { percent: 10 }, { percent: 10 }], 100)).toEqual([1, 10, 10, 79]);
  });

  it("percent batches are never rounded down to nothing", () => {
    // 4 after the canary: 1% = 0.04 -> 1
    expect(sizes({ count: 1 }, [{ percent: 1 }, { percent: 1 }, { percent: 1 }], 5)).toEqual([1, 1, 1, 2]);
  });

  it("rounds exact percents exactly (no floating-point overshoot)", () => {
    // 32.2% of 500 is exactly 161; 500 * 32.2 / 100 is 161.00000000000003 in floating point
    expect(sizes({ percent: 32.2 }, [], 500)).toEqual([161, 339]);
    expect(sizes({ count: 125 }, [{ percent: 8.8 }, { percent: 100 }], 500)).toEqual([125, 33, 342]);
  });

  it("drops batches once the devices are used up", () => {
    expect(planBatches(staged({ count: 2 }, [{ count: 10 }, { count: 1 }, { percent: 50 }]), 5)).toEqual([
      { index: 0, kind: "canary", size: 2 },
      { index: 1, kind: "batch", size: 3 },
    ]);
    expect(sizes({ count: 1 }, [{ percent: 100 }, { count: 5 }], 10)).toEqual([1, 9]);
  });

  it("a canary larger than the fleet takes the whole fleet and nothing else", () => {
    expect(planBatches(staged({ count: 50 }, [{ count: 1 }, { count: 2 }]), 3)).toEqual([{ index: 0, kind: "canary", size: 3 }]);
    expect(sizes({ count: 3 }, [{ count: 1 }], 3)).toEqual([3]);
  });

  it("without batches, one batch takes the rest after the canary", () => {
    expect(planBatches(staged({ count: 1 }), 5)).toEqual([
      { index: 0, kind: "canary", size: 1 },
      { index: 1, kind: "batch", size: 4 },
    ]);
    expect(sizes({ count: 1 }, [], 1)).toEqual([1]);
  });

  const share = fc.oneof(
    fc.record({ count: fc.integer({ min: 1, max: 1_000_000 }) }),
    fc.record({ percent: fc.integer({ min: 1, max: 1000 }).map((tenths) => tenths / 10) }),
  );
  const strategy = fc.record({ canary: share, batches: fc.array(share, { maxLength: 12 }) }).map(({ canary, batches }) => staged(canary, batches));

  it("property: sizes sum to the eligible devices, every size is at least 1, the canary comes first", () => {
    fc.assert(
      fc.property(strategy, fc.integer({ min: 1, max: 5000 }), (s, eligible) => {
        const plan = planBatches(s, eligible);
        expect(plan.reduce((sum, b) => sum + b.size, 0)).toBe(eligible);
        expect(plan.every((b) => Number.isInteger(b.size) && b.size >= 1)).toBe(true);
        expect(plan[0]).toMatchObject({ index: 0, kind: "canary" });
        expect(plan.slice(1).every((b) => b.kind === "batch")).toBe(true);
        expect(plan.map((b) => b.index)).toEqual(plan.map((_, i) => i));
        expect(plan.length).toBeLessThanOrEqual(Math.max(1, s.batches.length) + 1);
      }),
      { numRuns: 500 },
    );
  });

  it("property: a canary count is taken as given (up to the fleet), a batch count too unless it is the last", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 1, maxLength: 6 }), fc.integer({ min: 1, max: 400 }), (canary, counts, eligible) => {
        const plan = planBatches(staged({ count: canary }, counts.map((count) => ({ count }))), eligible);
        expect(plan[0].size).toBe(Math.min(canary, eligible));
        plan.slice(1, -1).forEach((b, i) => expect(b.size).toBe(counts[i]));
      }),
      { numRuns: 300 },
    );
  });
});

describe("strategySchema", () => {
  it("fills the staged defaults", () => {
    expect(strategySchema.parse({ type: "staged", canary: { count: 1 } })).toEqual({
      type: "staged", canary: { count: 1 }, batches: [], successThreshold: 90, failureThreshold: 20, autoAdvance: false, batchTimeoutSeconds: 3600,
    });
    expect(strategySchema.parse({ type: "all-at-once" })).toEqual({ type: "all-at-once" });
  });

  it("accepts the full staged shape", () => {
    const full = {
      type: "staged", canary: { percent: 5 }, batches: [{ count: 10 }, { percent: 50 }], successThreshold: 100, failureThreshold: 1, autoAdvance: true, batchTimeoutSeconds: 60,
    };
    expect(strategySchema.parse(full)).toEqual(full);
  });

  const base = { type: "staged", canary: { count: 1 } };
  it.each([
    ["successThreshold 0", { ...base, successThreshold: 0 }, "successThreshold"],
    ["successThreshold 150", { ...base, successThreshold: 150 }, "successThreshold"],
    ["failureThreshold 0", { ...base, failureThreshold: 0 }, "failureThreshold"],
    ["failureThreshold 101", { ...base, failureThreshold: 101 }, "failureThreshold"],
    ["a text threshold", { ...base, successThreshold: "90" }, "successThreshold"],
    ["batchTimeoutSeconds below a minute", { ...base, batchTimeoutSeconds: 59 }, "batchTimeoutSeconds"],
    ["batchTimeoutSeconds above 30 days", { ...base, batchTimeoutSeconds: 30 * 86_400 + 1 }, "batchTimeoutSeconds"],
    ["a fractional batchTimeoutSeconds", { ...base, batchTimeoutSeconds: 90.5 }, "batchTimeoutSeconds"],
    ["autoAdvance as text", { ...base, autoAdvance: "false" }, "autoAdvance"],
    ["a canary of 0 devices", { ...base, canary: { count: 0 } }, "canary"],
    ["a canary of 0 percent", { ...base, canary: { percent: 0 } }, "canary"],
    ["a canary above 100 percent", { ...base, canary: { percent: 100.5 } }, "canary"],
    ["a fractional count", { ...base, canary: { count: 1.5 } }, "canary"],
    ["a canary with count and percent", { ...base, canary: { count: 1, percent: 5 } }, "canary"],
    ["an empty canary", { ...base, canary: {} }, "canary"],
    ["no canary", { type: "staged" }, "canary"],
    ["a batch with an unknown key", { ...base, batches: [{ count: 1, weight: 2 }] }, "batches"],
    ["more than 100 batches", { ...base, batches: Array.from({ length: 101 }, () => ({ count: 1 })) }, "batches"],
    ["an unknown key on staged", { ...base, rollback: true }, "rollback"],
    ["an unknown key on all-at-once", { type: "all-at-once", canary: { count: 1 } }, "canary"],
    ["an unknown type", { type: "rolling" }, "type"],
    ["no type", { canary: { count: 1 } }, "type"],
  ])("refuses %s, naming the field", (_case, value, field) => {
    const result = strategySchema.safeParse(value);
    expect(result.success).toBe(false);
    const named = result.error!.issues.map((i) => [...i.path, ...("keys" in i ? (i.keys as string[]) : [])].join("."));
    expect(named.join(" ")).toContain(field);
  });
});
