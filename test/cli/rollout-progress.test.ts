// The progress lines of `fleet deploy --wait` and `fleet rollout watch` over one staged
// rollout (a canary of 1, one batch of 2): both say where it is by the same line, the
// deployment's one state and the batch numbered as the console does (canary, batch 1 of 1),
// "in flight" only while devices of a dispatched batch work on it, and a completed rollout
// ends on "completed, canary and 1 batch done". test/cli/cli.test.ts runs both against a service.
import { describe, expect, it } from "vitest";
import { deviceCounts, progressLine, rolloutView, stateLine } from "../../cli/src/commands/deploy.js";

type Deployment = Parameters<typeof progressLine>[0];
type Rollout = Parameters<typeof rolloutView>[1];
type Batch = Rollout["batches"][number];

const none = { pending: 0, downloading: 0, installing: 0, running: 0, failed: 0, waitingToRetry: 0, waitingForWindow: 0, waitingForBudget: 0, skipped: 0 };
const batch = (index: number, size: number, state: string, counts: Partial<typeof none>): Batch => ({
  index, kind: index === 0 ? "canary" : "batch", size, state, successTarget: size, counts: { ...none, ...counts }, outcome: null, deadlineAt: null,
});

function snapshot(state: string, rolloutState: Deployment["rolloutState"], currentBatch: number | null, batches: Batch[]): { deployment: Deployment; rollout: Rollout } {
  const sum = (key: keyof typeof none) => batches.reduce((n, b) => n + (b.counts[key] ?? 0), 0);
  const deployment: Deployment = {
    id: "d1", name: "line", applicationName: "Line Monitor", version: "1.1.0", status: "running", rolloutState, state, rolloutReason: null,
    strategy: { type: "staged" },
    progress: { pending: sum("pending"), downloading: sum("downloading"), installing: sum("installing"), running: sum("running"), failed: sum("failed"), waiting_to_retry: 0, waiting_for_window: 0, waiting_for_budget: 0 },
  };
  const rollout: Rollout = { state: rolloutState, currentBatch, batches, successThreshold: 90, failureThreshold: 20, autoAdvance: false, reason: null };
  return { deployment, rollout };
}

// The rollout as the API answers it at each step (planned devices are pending, not dispatched).
const STEPS = [
  snapshot("rolling_out", "canary", 0, [batch(0, 1, "in_progress", { downloading: 1 }), batch(1, 2, "planned", { pending: 2 })]),
  snapshot("awaiting_approval", "awaiting_approval", 0, [batch(0, 1, "succeeded", { running: 1 }), batch(1, 2, "planned", { pending: 2 })]),
  snapshot("rolling_out", "in_progress", 1, [batch(0, 1, "succeeded", { running: 1 }), batch(1, 2, "in_progress", { pending: 1, installing: 1 })]),
  snapshot("paused", "paused", 1, [batch(0, 1, "succeeded", { running: 1 }), batch(1, 2, "in_progress", { running: 1, failed: 1 })]),
  snapshot("completed", "completed", 1, [batch(0, 1, "succeeded", { running: 1 }), batch(1, 2, "succeeded", { running: 2 })]),
];

const stateOfDeployLine = (line: string) => line.slice(0, line.indexOf(" - "));
const stateOfWatchView = (view: string) => /^State: (.*?) {3}success threshold/m.exec(view)![1];

describe("deploy --wait and rollout watch say where a rollout is alike", () => {
  it("number the batches the same way at every step, and end on the completed rollout, not a batch in flight", () => {
    const deployLines = STEPS.map(({ deployment, rollout }) => progressLine(deployment, rollout));
    const watchLines = STEPS.map(({ deployment, rollout }) => stateOfWatchView(rolloutView(deployment, rollout)));
    expect(deployLines.map(stateOfDeployLine)).toEqual(watchLines);
    expect(watchLines).toEqual([
      "rolling out, canary in flight",
      "awaiting approval, canary done, the next batch waits for approval",
      "rolling out, batch 1 of 1 in flight",
      "paused, batch 1 of 1 on hold",
      "completed, canary and 1 batch done",
    ]);
    for (const line of [...deployLines, ...watchLines]) expect(line).not.toMatch(/batch 0|of 2/);
  });

  it("count in flight only the devices of dispatched batches working on the install", () => {
    expect(STEPS.map(({ deployment, rollout }) => deviceCounts(deployment, rollout))).toEqual([
      { running: 0, failed: 0, inFlight: 1, waiting: 2 },
      { running: 1, failed: 0, inFlight: 0, waiting: 2 },
      { running: 1, failed: 0, inFlight: 2, waiting: 0 },
      { running: 2, failed: 1, inFlight: 0, waiting: 0 },
      { running: 3, failed: 0, inFlight: 0, waiting: 0 },
    ]);
    expect(progressLine(STEPS[4].deployment, STEPS[4].rollout)).toBe("completed, canary and 1 batch done - 3 running, 0 failed, 0 in flight, 0 waiting");
  });

  it("an aborted rollout says where it stopped; an all-at-once deployment says its state alone", () => {
    const aborted = snapshot("aborted", "aborted", 1, [batch(0, 1, "succeeded", { running: 1 }), batch(1, 2, "cancelled", { installing: 1 })]);
    expect(stateLine(aborted.deployment, aborted.rollout)).toBe("aborted at batch 1 of 1");
    const timedOut = snapshot("failed", "failed", 0, [batch(0, 1, "failed", { installing: 1 }), batch(1, 2, "cancelled", {})]);
    expect(stateLine(timedOut.deployment, timedOut.rollout)).toBe("failed: the canary timed out");
    const all = snapshot("completed", "completed", null, []);
    expect(progressLine({ ...all.deployment, strategy: { type: "all-at-once" } }, null)).toBe("completed - 0 running, 0 failed, 0 in flight, 0 waiting");
  });
});
