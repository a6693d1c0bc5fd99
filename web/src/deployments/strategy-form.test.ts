// The strategy step against the service: the browser refuses a strategy exactly when the
// API's schema does, and the preview equals the plan the service makes (same planner, same
// defaults, same conversion of what was typed) for random strategies and fleet sizes.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { planBatches, strategySchema } from "../../../src/modules/deployments/strategy";
import { DEFAULT_STRATEGY, previewBatches, strategyErrors, strategyInput, strategyValue, type ShareInput, type StrategyInput } from "./strategy-form";

const amount = fc.oneof(
  fc.integer({ min: -5, max: 1_200 }).map(String),
  fc.double({ min: 0, max: 150, noNaN: true }).map((n) => n.toFixed(1)),
  fc.constantFrom("", "abc", "1e2", " 7 ", "0.05"),
);
const shareInput: fc.Arbitrary<ShareInput> = fc.record({ unit: fc.constantFrom("count" as const, "percent" as const), amount });
const stagedInput: fc.Arbitrary<StrategyInput> = fc.record({
  type: fc.constant("staged" as const),
  canary: shareInput,
  batches: fc.array(shareInput, { maxLength: 6 }),
  successThreshold: fc.oneof(fc.integer({ min: -1, max: 120 }).map(String), fc.constant("")),
  failureThreshold: fc.integer({ min: 0, max: 101 }).map(String),
  batchTimeoutMinutes: fc.oneof(fc.integer({ min: 0, max: 50_000 }).map(String), fc.constantFrom("1.5", "x")),
  autoAdvance: fc.boolean(),
});

/** Strategies the API accepts, most of the time: what a person would type. */
const validShare: fc.Arbitrary<ShareInput> = fc.oneof(
  fc.record({ unit: fc.constant("count" as const), amount: fc.integer({ min: 1, max: 2_000 }).map(String) }),
  fc.record({ unit: fc.constant("percent" as const), amount: fc.integer({ min: 1, max: 1_000 }).map((n) => String(n / 10)) }),
);
const validStaged: fc.Arbitrary<StrategyInput> = fc.record({
  type: fc.constant("staged" as const),
  canary: validShare,
  batches: fc.array(validShare, { maxLength: 8 }),
  successThreshold: fc.integer({ min: 1, max: 100 }).map(String),
  failureThreshold: fc.integer({ min: 1, max: 100 }).map(String),
  batchTimeoutMinutes: fc.integer({ min: 1, max: 43_200 }).map(String),
  autoAdvance: fc.boolean(),
});

describe("strategy form", () => {
  it("refuses a staged strategy exactly when the API's schema does", () => {
    fc.assert(
      fc.property(stagedInput, (input) => {
        const browserAccepts = Object.keys(strategyErrors(input)).length === 0;
        expect(strategySchema.safeParse(strategyValue(input)).success).toBe(browserAccepts);
      }),
      { numRuns: 2_000 },
    );
  });

  it("previews the batch sizes the service plans over the same number of devices", () => {
    let previews = 0;
    fc.assert(
      fc.property(fc.oneof(validStaged, stagedInput), fc.integer({ min: 0, max: 5_000 }), (input, devices) => {
        const preview = previewBatches(input, devices);
        const parsed = strategySchema.safeParse(strategyValue(input));
        if (!parsed.success || parsed.data.type !== "staged") {
          expect(preview).toBeNull();
        } else {
          previews++;
          expect(preview).toEqual(planBatches(parsed.data, devices));
        }
      }),
      { numRuns: 2_000 },
    );
    expect(previews).toBeGreaterThan(500);
  });

  it("previews nothing for all at once, and a stored strategy comes back as it was typed", () => {
    expect(previewBatches(DEFAULT_STRATEGY, 10)).toBeNull();
    expect(strategyValue(DEFAULT_STRATEGY)).toEqual({ type: "all-at-once" });
    const staged = strategySchema.parse({ type: "staged", canary: { percent: 10 }, batches: [{ count: 3 }, { percent: 50 }], batchTimeoutSeconds: 900 });
    expect(strategyValue(strategyInput(staged))).toEqual(staged);
    expect(previewBatches(strategyInput(staged), 20)?.map((b) => b.size)).toEqual([2, 3, 15]);
  });
});
