// A batch's recorded outcome and the rollout's completion reason, alone and as properties
// (fast-check): whatever the counts, an outcome says "succeeded" only when the batch's running
// devices reached its success target at that moment, one an operator moved past below it names
// the move and the operator, and a completion reason says "reached the success threshold" of
// every batch only when each did. No text that is stored or shown as a batch's outcome carries a
// count of its devices (they go on reporting; the counts of the moment stay in the record's fields). The service records these (rollout.ts); the same properties
// over the service, with reports and moves in any order: test/http/deployments/rollout-truth.test.ts.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  abortedOutcome, acceptedOutcome, completionReason, judgedOutcome, outcomeText, successTarget, waitingText, type BatchOutcome,
} from "../../../src/modules/deployments/rollout-machine.js";
import { cannotReachText } from "../../../src/modules/deployments/rollout-words.js";

/** A count of devices in words ("2 of 3 running", "1 failed"): what a stored text must not carry. */
const DEVICE_COUNT = /\d+ of \d+ running|\d+ failed|\d+ running,/;

const AT = new Date("2026-11-27T10:00:00.000Z");

/** A batch's counts: size, and running + failed never above it. */
const counts = fc.record({ index: fc.integer({ min: 0, max: 5 }), size: fc.integer({ min: 1, max: 40 }), a: fc.nat(), b: fc.nat() }).map(({ index, size, a, b }) => {
  const running = a % (size + 1);
  return { index, size, running, failed: b % (size - running + 1) };
});
const threshold = fc.integer({ min: 1, max: 100 });

describe("acceptedOutcome", () => {
  it("the demo's canary: 2 of 3 running, 1 failed, promoted by a person", () => {
    const o = acceptedOutcome("promote", "alice@example.com", { index: 0, size: 3, running: 2, failed: 1 }, { successThreshold: 90 }, AT);
    expect(o).toEqual({ kind: "promoted", move: "promote", by: "alice@example.com", at: AT.toISOString(), running: 2, failed: 1, size: 3, successTarget: 3 });
    expect(outcomeText(o)).toBe("promoted below its success target (3 running needed) by alice@example.com");
  });

  it("is succeeded exactly when the running devices reached the target, else promoted naming the move and the operator", () => {
    fc.assert(fc.property(counts, threshold, fc.constantFrom("promote" as const, "approve" as const), (batch, successThreshold, move) => {
      const o = acceptedOutcome(move, "op@example.com", batch, { successThreshold }, AT);
      const target = successTarget(batch.size, successThreshold);
      expect(o.successTarget).toBe(target);
      expect([o.running, o.failed, o.size]).toEqual([batch.running, batch.failed, batch.size]);
      expect(o.kind).toBe(batch.running >= target ? "succeeded" : "promoted");
      expect(o.move).toBe(move);
      expect(o.by).toBe("op@example.com");
      if (o.kind === "promoted") expect(outcomeText(o)).toBe(`${move === "approve" ? "approved" : "promoted"} below its success target (${target} running needed) by op@example.com`);
      expect(outcomeText(o)).not.toMatch(DEVICE_COUNT);
    }), { numRuns: 300 });
  });
});

describe("completionReason", () => {
  const outcome = fc.tuple(counts, threshold, fc.constantFrom("judged", "promote", "approve")).map(([batch, successThreshold, how]): BatchOutcome => {
    if (how === "judged") {
      // the service judges a batch succeeded only at its target
      const target = successTarget(batch.size, successThreshold);
      return judgedOutcome("succeeded", { ...batch, running: Math.max(batch.running, target), failed: Math.min(batch.failed, batch.size - Math.max(batch.running, target)) }, { successThreshold }, AT);
    }
    return acceptedOutcome(how as "promote" | "approve", "op@example.com", batch, { successThreshold }, AT);
  });

  it("says every batch reached the success threshold only when each did, and names each one that did not", () => {
    fc.assert(fc.property(fc.array(outcome, { minLength: 1, maxLength: 6 }), (outcomes) => {
      const batches = outcomes.map((o, index) => ({ index, outcome: o }));
      const reason = completionReason(batches);
      const reached = outcomes.filter((o) => o.kind === "succeeded").length;
      if (reached === outcomes.length) {
        expect(reason).toBe(`all ${outcomes.length} batch${outcomes.length === 1 ? "" : "es"} reached the success threshold`);
        return;
      }
      expect(reason).toMatch(new RegExp(`^all ${outcomes.length} batch(es)? done: ${reached} reached the success threshold; `));
      for (const [index, o] of outcomes.entries()) {
        const name = index === 0 ? "the canary" : `batch ${index}`;
        if (o.kind === "succeeded") expect(reason).not.toContain(`${name} was`);
        else expect(reason).toContain(`${name} was ${outcomeText(o)}`);
      }
      expect(reason).not.toMatch(DEVICE_COUNT);
    }), { numRuns: 300 });
  });

  it("the demo's rollout: a promoted canary and a batch that reached its threshold", () => {
    const canary = acceptedOutcome("promote", "alice@example.com", { index: 0, size: 3, running: 2, failed: 1 }, { successThreshold: 90 }, AT);
    const batch = judgedOutcome("succeeded", { index: 1, size: 50, running: 45, failed: 0 }, { successThreshold: 90 }, AT);
    expect(completionReason([{ index: 0, outcome: canary }, { index: 1, outcome: batch }])).toBe(
      "all 2 batches done: 1 reached the success threshold; the canary was promoted below its success target (3 running needed) by alice@example.com",
    );
  });

  it("names an aborted or timed-out batch as what it was", () => {
    const aborted = abortedOutcome("bob@example.com", { index: 1, size: 4, running: 1, failed: 0 }, { successThreshold: 100 }, AT);
    expect(outcomeText(aborted)).toBe("cancelled: the rollout was aborted by bob@example.com");
    const failed = judgedOutcome("failed", { index: 2, size: 4, running: 1, failed: 0 }, { successThreshold: 100 }, AT);
    expect(outcomeText(failed)).toBe("timed out below its success target (4 running needed)");
    // the counts of that moment stay in the record, beside its time
    expect(failed).toMatchObject({ running: 1, failed: 0, size: 4, at: AT.toISOString() });
  });
});

describe("waitingText", () => {
  const deadline = new Date("2026-11-27T11:00:00.000Z");

  it("names the target and the deadline, and no count of now", () => {
    expect(waitingText({ size: 3 }, { successThreshold: 90 }, deadline)).toBe("waiting for 3 of 3 running until 2026-11-27T11:00:00.000Z");
    fc.assert(fc.property(counts, threshold, (batch, successThreshold) => {
      expect(waitingText(batch, { successThreshold }, null)).toBe(`waiting for ${successTarget(batch.size, successThreshold)} of ${batch.size} running`);
    }), { numRuns: 100 });
  });
});

describe("cannotReachText", () => {
  it("says when the failed devices make the target unreachable, and only then", () => {
    expect(cannotReachText({ index: 0, size: 3, failed: 1, successTarget: 3 })).toBe(
      "The canary cannot reach its success target (3 running) while 1 device stays failed (at most 2 can run): retry the failed devices, promote it as it is, or abort.",
    );
    fc.assert(fc.property(counts, threshold, (batch, successThreshold) => {
      const target = successTarget(batch.size, successThreshold);
      const text = cannotReachText({ ...batch, successTarget: target });
      expect(text !== null).toBe(batch.size - batch.failed < target);
    }), { numRuns: 300 });
  });
});
