// The staged rollout's state machine alone: every operator move from every state, the batch
// verdicts (failure before success, accepted failures, timeouts, rounding) and where a rollout
// goes after a batch succeeded or on resume.
import { TRPCError } from "@trpc/server";
import { describe, expect, it } from "vitest";
import {
  MOVES_ALLOWED_FROM, ROLLOUT_STATES, TERMINAL_ROLLOUT_STATES, afterBatchSucceeded, assertMoveAllowed, judgeBatch, resumeTarget, successTarget,
  type BatchProgress, type RolloutMove, type RolloutState,
} from "../../../src/modules/deployments/rollout-machine.js";

const MOVES: RolloutMove[] = ["initialize", "start", "promote", "approve", "pause", "resume", "retry", "abort"];

/** The design: which state each move is allowed from (docs/domain.md, rollout-machine.ts header). */
const EXPECTED_ALLOWED: Record<RolloutMove, RolloutState[]> = {
  initialize: ["draft", "initialized"],
  start: ["initialized"],
  promote: ["canary", "awaiting_approval", "paused"],
  approve: ["awaiting_approval"],
  pause: ["canary", "awaiting_approval", "in_progress"],
  resume: ["paused"],
  retry: ["canary", "in_progress", "paused"],
  abort: ["initialized", "canary", "awaiting_approval", "in_progress", "paused"],
};

function refusal(move: RolloutMove, state: RolloutState, currentBatch: number | null): TRPCError {
  try {
    assertMoveAllowed(move, { state, currentBatch });
  } catch (err) {
    expect(err).toBeInstanceOf(TRPCError);
    return err as TRPCError;
  }
  throw new Error(`${move} from ${state} (batch ${currentBatch}) was allowed`);
}

describe("assertMoveAllowed: every move from every state", () => {
  it("knows exactly the nine rollout states of the design", () => {
    expect([...ROLLOUT_STATES]).toEqual(["draft", "initialized", "canary", "awaiting_approval", "in_progress", "paused", "completed", "aborted", "failed"]);
    expect([...TERMINAL_ROLLOUT_STATES]).toEqual(["completed", "aborted", "failed"]);
    expect(Object.fromEntries(MOVES.map((m) => [m, [...MOVES_ALLOWED_FROM[m]]]))).toEqual(EXPECTED_ALLOWED);
  });

  const cases = MOVES.flatMap((move) => ROLLOUT_STATES.map((state) => [move, state, EXPECTED_ALLOWED[move].includes(state)] as const));

  it.each(cases.filter(([, , allowed]) => allowed))("%s from %s passes", (move, state) => {
    // the canary's batch: promote from awaiting_approval is only the canary's gate
    expect(() => assertMoveAllowed(move, { state, currentBatch: 0 })).not.toThrow();
    if (!(move === "promote" && state === "awaiting_approval")) {
      expect(() => assertMoveAllowed(move, { state, currentBatch: 2 })).not.toThrow();
      expect(() => assertMoveAllowed(move, { state, currentBatch: null })).not.toThrow();
    }
  });

  it.each(cases.filter(([, , allowed]) => !allowed))("%s from %s is a 409 naming the state", (move, state) => {
    for (const batch of [null, 0, 3]) {
      const err = refusal(move, state, batch);
      expect(err.code).toBe("CONFLICT");
      expect(err.message).toContain(`it is ${state}`);
      expect(err.message).toContain(move === "retry" ? "Cannot retry the failed devices of the rollout" : `Cannot ${move}`);
    }
  });

  it("approve from paused says which moves make progress", () => {
    expect(refusal("approve", "paused", 0).message).toBe(
      "Cannot approve the rollout: it is paused (allowed from awaiting_approval). The paused batch is not at an approval gate: "
        + "resume it to wait for its success target, retry its failed devices, promote it as it is, or abort",
    );
  });

  it("no move leaves a terminal state", () => {
    for (const state of TERMINAL_ROLLOUT_STATES) {
      for (const move of MOVES) expect(refusal(move, state, 1).code).toBe("CONFLICT");
    }
  });

  it("refuses promote from awaiting_approval of a batch that is not the canary, pointing to approve", () => {
    for (const batch of [1, 2, 7, null]) {
      const err = refusal("promote", "awaiting_approval", batch);
      expect(err.code).toBe("CONFLICT");
      expect(err.message).toContain("awaiting_approval");
      expect(err.message).toContain("approve");
    }
    expect(refusal("promote", "awaiting_approval", 1).message).toContain("batch 1");
    // approve has no such restriction, promote from canary neither
    expect(() => assertMoveAllowed("approve", { state: "awaiting_approval", currentBatch: 0 })).not.toThrow();
    expect(() => assertMoveAllowed("approve", { state: "awaiting_approval", currentBatch: 4 })).not.toThrow();
    expect(() => assertMoveAllowed("promote", { state: "canary", currentBatch: 0 })).not.toThrow();
  });
});

const thresholds = { successThreshold: 90, failureThreshold: 20 };
function batch(p: Partial<BatchProgress>): BatchProgress {
  return { index: 1, size: 10, running: 0, failed: 0, failureAccepted: false, deadlinePassed: false, ...p };
}

describe("successTarget", () => {
  it.each([
    [10, 90, 9],
    [3, 90, 3], // 2.7 rounded up
    [7, 50, 4], // 3.5 rounded up
    [10, 100, 10],
    [1, 1, 1],
    [100, 1, 1],
    [1000, 99.9, 999],
    [0, 90, 1], // at least one
    [500, 32.2, 161], // exactly 161: no floating-point overshoot
    [250, 64.4, 161],
  ])("size %s at %s percent needs %s running", (size, threshold, target) => {
    expect(successTarget(size, threshold)).toBe(target);
  });
});

describe("judgeBatch", () => {
  it("waits while below the success target, nothing failed and time remains", () => {
    expect(judgeBatch(batch({ running: 8 }), thresholds)).toEqual({ kind: "wait" });
    expect(judgeBatch(batch({ running: 0 }), thresholds)).toEqual({ kind: "wait" });
  });

  it("succeeds at the success target", () => {
    expect(judgeBatch(batch({ running: 9 }), thresholds)).toEqual({ kind: "succeeded" });
    expect(judgeBatch(batch({ running: 10 }), thresholds)).toEqual({ kind: "succeeded" });
  });

  it("rounds the success target up", () => {
    // 3 devices at 90%: 2.7 -> 3
    expect(judgeBatch(batch({ size: 3, running: 2 }), thresholds)).toEqual({ kind: "wait" });
    expect(judgeBatch(batch({ size: 3, running: 3 }), thresholds)).toEqual({ kind: "succeeded" });
    // 5 devices at 50%: 2.5 -> 3
    expect(judgeBatch(batch({ size: 5, running: 2 }), { successThreshold: 50, failureThreshold: 100 }).kind).toBe("wait");
    expect(judgeBatch(batch({ size: 5, running: 3 }), { successThreshold: 50, failureThreshold: 100 }).kind).toBe("succeeded");
  });

  it("checks the failure threshold before success: safety before progress", () => {
    // 9 of 10 running reaches 90%, but 1 of 10 failed crosses a 10% failure threshold
    const verdict = judgeBatch(batch({ running: 9, failed: 1 }), { successThreshold: 90, failureThreshold: 10 });
    expect(verdict.kind).toBe("failure_threshold");
    expect(verdict).toEqual({ kind: "failure_threshold", reason: "batch 1 paused: its failed devices reached the failure threshold (10%)" });
  });

  it("trips exactly at the failure threshold, not below", () => {
    expect(judgeBatch(batch({ failed: 2 }), thresholds).kind).toBe("failure_threshold"); // 20% >= 20%
    expect(judgeBatch(batch({ failed: 1 }), thresholds).kind).toBe("wait"); // 10% < 20%
    expect(judgeBatch(batch({ size: 3, failed: 1 }), { successThreshold: 90, failureThreshold: 33.4 }).kind).toBe("wait"); // 33.3%
    expect(judgeBatch(batch({ size: 3, failed: 1 }), { successThreshold: 90, failureThreshold: 33.3 }).kind).toBe("failure_threshold");
  });

  it("names the canary and the threshold in the reason, and no count (it is stored, and later reports change the counts)", () => {
    const verdict = judgeBatch(batch({ index: 0, size: 3, failed: 1 }), thresholds);
    expect(verdict).toEqual({ kind: "failure_threshold", reason: "canary paused: its failed devices reached the failure threshold (20%)" });
  });

  it("ignores failures the operator accepted on resume", () => {
    expect(judgeBatch(batch({ failed: 5, failureAccepted: true }), thresholds)).toEqual({ kind: "wait" });
    expect(judgeBatch(batch({ running: 9, failed: 1, failureAccepted: true }), { successThreshold: 90, failureThreshold: 10 })).toEqual({ kind: "succeeded" });
    const late = judgeBatch(batch({ running: 5, failed: 5, failureAccepted: true, deadlinePassed: true }), thresholds);
    expect(late.kind).toBe("timed_out");
  });

  it("times out below the success target once the deadline passed, saying how many were needed", () => {
    expect(judgeBatch(batch({ running: 8, deadlinePassed: true }), thresholds)).toEqual({
      kind: "timed_out",
      reason: "batch 1 timed out below its success target (9 of 10 running needed, success threshold 90%)",
    });
    expect(judgeBatch(batch({ index: 0, size: 2, running: 0, deadlinePassed: true }), thresholds)).toMatchObject({
      kind: "timed_out",
      reason: expect.stringMatching(/^canary timed out/),
    });
  });

  it("a batch that reached its target succeeds even after the deadline; failures still win over a timeout", () => {
    expect(judgeBatch(batch({ running: 9, deadlinePassed: true }), thresholds)).toEqual({ kind: "succeeded" });
    expect(judgeBatch(batch({ running: 1, failed: 3, deadlinePassed: true }), thresholds).kind).toBe("failure_threshold");
  });

  it("zero failures never trips the failure threshold, whatever the threshold", () => {
    for (const failureThreshold of [0, 1, 20, 100]) {
      expect(judgeBatch(batch({ failed: 0 }), { successThreshold: 90, failureThreshold }).kind).toBe("wait");
      expect(judgeBatch(batch({ size: 0, failed: 0 }), { successThreshold: 90, failureThreshold }).kind).toBe("wait");
    }
  });
});

describe("afterBatchSucceeded", () => {
  it("completes after the last batch, whatever autoAdvance says", () => {
    expect(afterBatchSucceeded(2, 3, false)).toEqual({ state: "completed", dispatchNext: false });
    expect(afterBatchSucceeded(2, 3, true)).toEqual({ state: "completed", dispatchNext: false });
    expect(afterBatchSucceeded(0, 1, false)).toEqual({ state: "completed", dispatchNext: false });
  });

  it("dispatches the next batch at once with autoAdvance", () => {
    expect(afterBatchSucceeded(0, 3, true)).toEqual({ state: "in_progress", dispatchNext: true });
    expect(afterBatchSucceeded(1, 3, true)).toEqual({ state: "in_progress", dispatchNext: true });
  });

  it("waits for approval without autoAdvance", () => {
    expect(afterBatchSucceeded(0, 3, false)).toEqual({ state: "awaiting_approval", dispatchNext: false });
    expect(afterBatchSucceeded(1, 3, false)).toEqual({ state: "awaiting_approval", dispatchNext: false });
  });
});

describe("resumeTarget", () => {
  it.each([
    ["canary", "canary"],
    ["awaiting_approval", "awaiting_approval"],
    ["in_progress", "in_progress"],
  ] as const)("returns to %s, the state it paused from", (from, to) => {
    expect(resumeTarget(from)).toBe(to);
  });

  it.each([null, "draft", "initialized", "paused", "completed", "aborted", "failed"] as const)("falls back to in_progress when paused from %s", (from) => {
    expect(resumeTarget(from)).toBe("in_progress");
  });
});
