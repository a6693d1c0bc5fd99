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

export const ROLLOUT_STATES = ["draft", "initialized", "canary", "awaiting_approval", "in_progress", "paused", "completed", "aborted", "failed"] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export const TERMINAL_ROLLOUT_STATES: readonly RolloutState[] = ["completed", "aborted", "failed"];

export type RolloutMove = "initialize" | "start" | "promote" | "approve" | "pause" | "resume" | "abort";

/** The states each operator move is allowed from. */
export const MOVES_ALLOWED_FROM: Record<RolloutMove, readonly RolloutState[]> = {
  initialize: ["draft", "initialized"],
  start: ["initialized"],
  promote: ["canary", "awaiting_approval"],
  approve: ["awaiting_approval"],
  pause: ["canary", "awaiting_approval", "in_progress"],
  resume: ["paused"],
  abort: ["initialized", "canary", "awaiting_approval", "in_progress", "paused"],
};

export interface RolloutPosition {
  state: RolloutState;
  /** index of the batch in flight; 0 is the canary */
  currentBatch: number | null;
}

/** Throws a 409 naming the current state when `move` is not allowed from it. */
export function assertMoveAllowed(move: RolloutMove, position: RolloutPosition): void {
  if (!MOVES_ALLOWED_FROM[move].includes(position.state)) {
    throw conflict(`Cannot ${move} the rollout: it is ${position.state} (allowed from ${MOVES_ALLOWED_FROM[move].join(", ")})`);
  }
  // Promote is the canary's gate; later gates are approvals.
  if (move === "promote" && position.state === "awaiting_approval" && position.currentBatch !== 0) {
    throw conflict(`Cannot promote the rollout: it is awaiting_approval of batch ${position.currentBatch}, not of the canary; approve it instead`);
  }
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

/** `percent` of `base`, rounded up; 500 * 32.2 / 100 is 161.00000000000003 in floating point, and 161 here. */
export function ceilPercent(base: number, percent: number): number {
  return Math.ceil(Number(((base * percent) / 100).toPrecision(12)));
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
