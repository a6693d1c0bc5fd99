// The staged rollout as a state machine, free of the database so that every move can be
// tested alone (test/unit/deployments). The service applies the decisions taken here inside
// the transaction that locked the deployment row, so two concurrent moves cannot both pass.
//
//   draft --initialize--> initialized --start--> canary
//   canary --(canary reached its success threshold)--> awaiting_approval | in_progress (autoAdvance)
//   canary | awaiting_approval --promote / approve--> in_progress (next batch dispatched)
//   in_progress --(batch succeeded)--> awaiting_approval | in_progress (autoAdvance) | completed (last batch)
//   canary | in_progress --(failure threshold crossed)--> paused (reason recorded)
//   canary | in_progress --(batch timed out below its success threshold)--> failed
//   canary | awaiting_approval | in_progress --pause--> paused --resume--> the state it paused from
//   initialized | canary | awaiting_approval | in_progress | paused --abort--> aborted
//   completed --(continuous: late joiners gathered by the rollout job)--> in_progress (rollout.ts)
import { conflict } from "../../trpc/errors.js";
import { MOVES_ALLOWED_FROM, moveRefusal, type RolloutMove, type RolloutPosition, type RolloutState } from "./rollout-moves.js";
import { ceilPercent } from "./batch-plan.js";

// The move table is shared with the console (rollout-moves.ts); re-exported for the service.
export { MOVES_ALLOWED_FROM, ROLLOUT_STATES, TERMINAL_ROLLOUT_STATES, type RolloutMove, type RolloutPosition, type RolloutState } from "./rollout-moves.js";

/** Throws a 409 naming the current state when `move` is not allowed from it. */
export function assertMoveAllowed(move: RolloutMove, position: RolloutPosition): void {
  const refusal = moveRefusal(move, position);
  if (refusal) throw conflict(refusal);
}

/** Progress of the batch in flight, as counted from the device states. */
export interface BatchProgress {
  index: number;
  size: number;
  running: number;
  failed: number;
  /** the operator resumed after this batch crossed the failure threshold */
  failureAccepted: boolean;
  deadlinePassed: boolean;
}

export interface Thresholds {
  /** percent of a batch that must be running for it to succeed */
  successThreshold: number;
  /** percent of a batch that failed which pauses the rollout */
  failureThreshold: number;
}

export type BatchVerdict =
  | { kind: "wait" }
  | { kind: "succeeded" }
  | { kind: "failure_threshold"; reason: string }
  | { kind: "timed_out"; reason: string };

/** Devices of a batch that must be running for it to succeed (at least one). */
export function successTarget(size: number, successThreshold: number): number {
  return Math.max(1, ceilPercent(size, successThreshold));
}

/** Judges the batch in flight. The failure threshold is checked first: safety before progress. */
export function judgeBatch(batch: BatchProgress, thresholds: Thresholds): BatchVerdict {
  const name = batch.index === 0 ? "canary" : `batch ${batch.index}`;
  const failedPercent = batch.size === 0 ? 0 : (batch.failed * 100) / batch.size;
  if (!batch.failureAccepted && batch.failed > 0 && failedPercent >= thresholds.failureThreshold) {
    return {
      kind: "failure_threshold",
      reason: `${name}: ${batch.failed} of ${batch.size} devices failed (${round(failedPercent)}%, failure threshold ${thresholds.failureThreshold}%)`,
    };
  }
  const target = successTarget(batch.size, thresholds.successThreshold);
  if (batch.running >= target) return { kind: "succeeded" };
  if (batch.deadlinePassed) {
    return {
      kind: "timed_out",
      reason: `${name} timed out: ${batch.running} of ${batch.size} devices running, ${target} needed (success threshold ${thresholds.successThreshold}%)`,
    };
  }
  return { kind: "wait" };
}

/** Where the rollout goes once batch `index` succeeded. */
export function afterBatchSucceeded(index: number, batchCount: number, autoAdvance: boolean): { state: RolloutState; dispatchNext: boolean } {
  if (index >= batchCount - 1) return { state: "completed", dispatchNext: false };
  if (autoAdvance) return { state: "in_progress", dispatchNext: true };
  return { state: "awaiting_approval", dispatchNext: false };
}

/** The state a rollout returns to on resume. */
export function resumeTarget(pausedFrom: RolloutState | null): RolloutState {
  return pausedFrom && MOVES_ALLOWED_FROM.pause.includes(pausedFrom) ? pausedFrom : "in_progress";
}

// ceilPercent lives with the batch plan (pure, shared with the console).
export { ceilPercent };

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
