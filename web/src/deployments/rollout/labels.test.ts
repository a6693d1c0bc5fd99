// One vocabulary on the rollout page: while the rollout is paused nothing says a batch is in
// flight or in progress, and a batch says what happened to it (promoted below target by whom).
// The deployment's one state is checked in test/unit/deployments/deployment-state.test.ts.
import { describe, expect, it } from "vitest";
import { ROLLOUT_STATES } from "../../../../src/modules/deployments/rollout-moves";
import { batchStateText, positionText, retryable, shortfall } from "./labels";
import type { Batch, Rollout } from "./timeline";

const counts = (c: Partial<Batch["counts"]>): Batch["counts"] => ({ pending: 0, downloading: 0, installing: 0, running: 0, failed: 0, waitingToRetry: 0, waitingForWindow: 0, waitingForBudget: 0, offline: 0, cancelled: 0, superseded: 0, removed: 0, skipped: 0, ...c });
const canary = (state: Batch["state"], c: Partial<Batch["counts"]> = {}, outcome: Batch["outcome"] = null) =>
  ({ index: 0, kind: "canary", size: 3, state, counts: counts(c), successTarget: 3, outcome, startedAt: null, deadlineAt: null, completedAt: null }) as Batch;
const batch1 = { ...canary("planned"), index: 1, kind: "batch", size: 10, successTarget: 9 } as Batch;

describe("the rollout page's words", () => {
  it("while paused, the canary is on hold: never in flight, never in progress", () => {
    const paused = { state: "paused", currentBatch: 0, batches: [canary("in_progress", { running: 2, failed: 1 }), batch1] } as Pick<Rollout, "state" | "currentBatch" | "batches">;
    expect(positionText(paused)).toBe("canary on hold");
    expect(batchStateText(paused, paused.batches[0])).toBe("on hold");
    expect(shortfall(paused)).toEqual({ batch: "The canary", text: "2 of 3 running, 3 needed", failed: 1 });
    expect(retryable(paused)).toBe(1);
    for (const state of ROLLOUT_STATES.filter((s) => s !== "canary" && s !== "in_progress")) {
      const r = { ...paused, state };
      expect(`${positionText(r)} ${batchStateText(r, r.batches[0])}`).not.toMatch(/in flight|in progress/);
    }
    expect(positionText({ ...paused, state: "canary" })).toBe("canary in flight");
  });

  it("a promoted batch says it was promoted below target, by whom", () => {
    const outcome = { kind: "promoted", move: "promote", by: "alice@example.com", at: "2026-11-27T10:00:00.000Z", running: 2, failed: 1, size: 3, successTarget: 3, summary: "" } as const;
    expect(batchStateText({ state: "completed", currentBatch: 1 }, canary("promoted", {}, outcome))).toBe("promoted below target by alice@example.com");
    expect(batchStateText({ state: "completed", currentBatch: 1 }, canary("succeeded"))).toBe("succeeded");
    expect(batchStateText({ state: "failed", currentBatch: 0 }, canary("failed"))).toBe("failed (timed out)");
  });
});
