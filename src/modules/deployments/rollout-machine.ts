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

/** How reasons name a batch: "canary", "batch 2". */
export function batchLabel(index: number): string {
  return index === 0 ? "canary" : `batch ${index}`;
}

/** Judges the batch in flight. The failure threshold is checked first: safety before progress. */
export function judgeBatch(batch: BatchProgress, thresholds: Thresholds): BatchVerdict {
  const name = batchLabel(batch.index);
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

/**
 * What happened to a batch once it left in_progress, recorded with it (DeploymentBatch.outcome)
 * and shown in the rollout status: how it ended, who moved it when a person did, and its
 * counts at that moment. A batch is `succeeded` only when `running >= successTarget` then;
 * one an operator moved past below that line is `promoted`, naming them.
 */
export interface BatchOutcome {
  kind: "succeeded" | "promoted" | "failed" | "cancelled";
  /** the operator's move that ended it (promote, approve, abort), null when the service judged it */
  move: "promote" | "approve" | "abort" | null;
  /** who made that move (an e-mail address), null when the service judged it */
  by: string | null;
  /** ISO time */
  at: string;
  running: number;
  failed: number;
  size: number;
  successTarget: number;
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

/** "2 of 3 running (3 needed), 1 failed" */
export function countsText(c: Pick<BatchOutcome, "running" | "failed" | "size" | "successTarget">): string {
  return `${c.running} of ${c.size} running (${c.successTarget} needed), ${c.failed} failed`;
}

/** The outcome in words, as the status shows it: "promoted by alice@example.com with 2 of 3 running (3 needed), 1 failed". */
export function outcomeText(o: BatchOutcome): string {
  switch (o.kind) {
    case "succeeded":
      return `reached the success threshold: ${countsText(o)}${o.by ? `; ${o.move}d by ${o.by}` : ""}`;
    case "promoted":
      return `${o.move === "approve" ? "approved" : "promoted"} by ${o.by} with ${countsText(o)}`;
    case "failed":
      return `timed out below its success target: ${countsText(o)}`;
    case "cancelled":
      return `cancelled${o.by ? ` (rollout aborted by ${o.by})` : ""} with ${countsText(o)}`;
  }
}

/**
 * The completed rollout's reason, from its batches' outcomes: "all 3 batches reached the
 * success threshold" only when each did; else it names what each of the others was
 * ("all 2 batches done: 1 reached the success threshold; the canary was promoted by
 * alice@example.com below its success target, with 2 of 3 running (3 needed), 1 failed").
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
 * (resume, retry): "waiting for 3 of 3 running (2 running, 1 failed) until <deadline>", and
 * when its failed devices leave too few to reach the target, that it cannot succeed without them.
 */
export function waitingText(batch: BatchCounts, thresholds: Pick<Thresholds, "successThreshold">, deadline: Date | null): string {
  const target = successTarget(batch.size, thresholds.successThreshold);
  const until = deadline ? ` until ${deadline.toISOString()}` : "";
  const text = `waiting for ${target} of ${batch.size} running (${batch.running} running, ${batch.failed} failed)${until}`;
  const reachable = batch.size - batch.failed;
  if (reachable >= target) return text;
  return `${text}; it cannot reach that while ${batch.failed} ${batch.failed === 1 ? "device stays" : "devices stay"} failed (at most ${reachable} can run): retry the failed devices, promote it as it is, or abort`;
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
