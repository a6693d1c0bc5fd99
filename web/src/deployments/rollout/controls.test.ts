// The console's rollout controls against the service's state machine, over every state: a
// control is enabled exactly when the service would accept the move (assertMoveAllowed does
// not throw 409), and disabled with the service's own reason otherwise.
import { describe, expect, it } from "vitest";
import { assertMoveAllowed, ROLLOUT_STATES } from "../../../../src/modules/deployments/rollout-machine";
import { DEPLOYMENT_STATUSES } from "../../../../src/modules/deployments/schemas";
import { controlConsequence, controlStates } from "./controls";

const BATCHES = [null, 0, 1, 2];
const MOVES = ["promote", "approve", "pause", "resume", "retry", "abort"] as const;

function serviceAnswer(move: (typeof MOVES)[number], state: (typeof ROLLOUT_STATES)[number], currentBatch: number | null): string | null {
  try {
    assertMoveAllowed(move, { state, currentBatch });
    return null;
  } catch (err) {
    expect((err as { code?: string }).code).toBe("CONFLICT");
    return (err as Error).message;
  }
}

describe("rollout controls follow the service's state machine", () => {
  for (const state of ROLLOUT_STATES) {
    for (const currentBatch of BATCHES) {
      it(`${state}, batch ${currentBatch}`, () => {
        const controls = controlStates({ state, currentBatch, status: "running", staged: true, retryable: 1 });
        for (const move of MOVES) expect(controls[move], move).toBe(serviceAnswer(move, state, currentBatch));
      });
    }
  }

  it("enables promote at the canary's gate and approve at later gates only", () => {
    expect(controlStates({ state: "awaiting_approval", currentBatch: 0, status: "running", staged: true })).toMatchObject({ promote: null, approve: null });
    const later = controlStates({ state: "awaiting_approval", currentBatch: 1, status: "running", staged: true });
    expect(later.approve).toBeNull();
    expect(later.promote).toContain("approve it instead");
  });

  it("offers a retry only when a device of the batch in flight failed, and says so", () => {
    expect(controlStates({ state: "paused", currentBatch: 0, status: "running", staged: true, retryable: 0 }).retry).toBe("None of the devices of the batch in flight failed");
    expect(controlStates({ state: "paused", currentBatch: 0, status: "running", staged: true, retryable: 2 }).retry).toBeNull();
  });

  it("a promotion below the success target names the shortfall in its confirmation", () => {
    const shortfall = { batch: "The canary", text: "2 of 3 running, 3 needed", failed: 1 };
    expect(controlConsequence("promote", { state: "paused", currentBatch: 0, staged: true, batches: 2, shortfall })).toBe(
      "The canary has not reached its success target: 2 of 3 running, 3 needed (1 failed). It is recorded as promoted below its target by you, and batch 1 is dispatched to its devices.",
    );
    expect(controlConsequence("promote", { state: "awaiting_approval", currentBatch: 0, staged: true, batches: 2, shortfall: null })).toBe(
      "The canary is accepted as it is and batch 1 is dispatched to its devices.",
    );
  });

  it("offers no rollout move for an all-at-once deployment", () => {
    for (const state of ROLLOUT_STATES) {
      const controls = controlStates({ state, currentBatch: null, status: "running", staged: false });
      for (const move of MOVES) expect(controls[move]).toMatch(/no staged rollout/);
    }
  });
});

describe("start, stop and delete follow the deployment's status", () => {
  const enabled = (control: "start" | "stop" | "forceStop" | "delete") =>
    DEPLOYMENT_STATUSES.filter((status) => controlStates({ state: "draft", currentBatch: null, status, staged: true })[control] === null);

  it("starts a draft or stopped deployment", () => expect(enabled("start")).toEqual(["draft", "stopped"]));
  it("stops a running one, and finishes a stopping one with force", () => {
    expect(enabled("stop")).toEqual(["running"]);
    expect(enabled("forceStop")).toEqual(["stopping"]);
  });
  it("deletes anything but a deployment already being deleted", () => expect(enabled("delete")).toEqual(["draft", "running", "stopping", "stopped"]));
});
