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
import { counted } from "../../lib/plural.js";
import { batchLabel, outcomeText, type BatchOutcome } from "./rollout-words.js";

// The move table and the outcome's words are shared with the console (rollout-moves.ts,
// rollout-words.ts); re-exported for the service.
export { batchLabel, outcomeText, type BatchOutcome } from "./rollout-words.js";
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

/**
 * Judges the batch in flight. The failure threshold is checked first: safety before progress.
 * A verdict's reason is stored with the rollout and shown beside the batch's counts of now, so
 * it names the rule that decided and no count of this moment (which later reports change).
 */
export function judgeBatch(batch: BatchProgress, thresholds: Thresholds): BatchVerdict {
  const name = batchLabel(batch.index);
  const failedPercent = batch.size === 0 ? 0 : (batch.failed * 100) / batch.size;
  if (!batch.failureAccepted && batch.failed > 0 && failedPercent >= thresholds.failureThreshold) {
    return {
      kind: "failure_threshold",
      reason: `${name} paused: its failed devices reached the failure threshold (${thresholds.failureThreshold}%)`,
    };
  }
  const target = successTarget(batch.size, thresholds.successThreshold);
  if (batch.running >= target) return { kind: "succeeded" };
  if (batch.deadlinePassed) {
    return {
      kind: "timed_out",
      reason: `${name} timed out below its success target (${target} of ${batch.size} running needed, success threshold ${thresholds.successThreshold}%)`,
    };
  }
  return { kind: "wait" };
}

/** The counts a batch's outcome records. */
export type BatchCounts = Pick<BatchProgress, "index" | "size" | "running" | "failed">;

/** The outcome of a batch the service judged (succeeded at its target, failed at its timeout). */
export function judgedOutcome(kind: "succeeded" | "failed", batch: BatchCounts, thresholds: Pick<Thresholds, "successThreshold">, at: Date): BatchOutcome {
  return { kind, move: null, by: null, at: at.toISOString(), ...countsOf(batch, thresholds) };
}

/**
 * The outcome of the batch in flight that an operator moves past (promote, approve): succeeded
 * when it reached its success target anyway, else promoted by them with the counts of now.
 */
export function acceptedOutcome(move: "promote" | "approve", by: string, batch: BatchCounts, thresholds: Pick<Thresholds, "successThreshold">, at: Date): BatchOutcome {
  const counts = countsOf(batch, thresholds);
  const reached = counts.running >= counts.successTarget;
  return { kind: reached ? "succeeded" : "promoted", move, by, at: at.toISOString(), ...counts };
}

/** The outcome of the batch in flight when an operator aborts the rollout. */
export function abortedOutcome(by: string | null, batch: BatchCounts, thresholds: Pick<Thresholds, "successThreshold">, at: Date): BatchOutcome {
  return { kind: "cancelled", move: "abort", by, at: at.toISOString(), ...countsOf(batch, thresholds) };
}

function countsOf(batch: BatchCounts, thresholds: Pick<Thresholds, "successThreshold">) {
  return { running: batch.running, failed: batch.failed, size: batch.size, successTarget: successTarget(batch.size, thresholds.successThreshold) };
}

/**
 * The completed rollout's reason, from its batches' outcomes: "all 3 batches reached the
 * success threshold" only when each did; else it names what each of the others was
 * ("all 2 batches done: 1 reached the success threshold; the canary was promoted below its
 * success target (3 running needed) by alice@example.com"), in the outcome's words: no count of
 * devices, which go on reporting after the rollout completed.
 */
export function completionReason(batches: ReadonlyArray<{ index: number; outcome: BatchOutcome | null }>): string {
  const n = batches.length;
  const reached = batches.filter((b) => b.outcome?.kind === "succeeded").length;
  if (reached === n) return `all ${counted(n, "batch", "batches")} reached the success threshold`;
  const others = batches.filter((b) => b.outcome?.kind !== "succeeded").map((b) => `${b.index === 0 ? "the canary" : batchLabel(b.index)} was ${b.outcome ? outcomeText(b.outcome) : "not run"}`);
  return `all ${counted(n, "batch", "batches")} done: ${reached} reached the success threshold; ${others.join("; ")}`;
}

/**
 * What a batch in flight waits for, said when the rollout moves on after a person's move
 * (resume, retry): "waiting for 3 of 3 running until <deadline>". Its target and deadline only:
 * the batch's counts change with every report, and the rollout status shows them as they are
 * now (and the console, from them, when its failed devices leave too few to reach the target).
 */
export function waitingText(batch: Pick<BatchCounts, "size">, thresholds: Pick<Thresholds, "successThreshold">, deadline: Date | null): string {
  const target = successTarget(batch.size, thresholds.successThreshold);
  return `waiting for ${target} of ${batch.size} running${deadline ? ` until ${deadline.toISOString()}` : ""}`;
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
