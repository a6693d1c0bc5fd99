// Which operator move is allowed where: the rollout's states and moves, and the deployment
// statuses that allow start, stop and delete. Pure and free of server imports, because the
// console imports it too (web/src/deployments/rollout/controls.ts): the buttons it enables
// and the 409s the service answers come from this one table.
export const ROLLOUT_STATES = ["draft", "initialized", "canary", "awaiting_approval", "in_progress", "paused", "completed", "aborted", "failed"] as const;
export type RolloutState = (typeof ROLLOUT_STATES)[number];

export const TERMINAL_ROLLOUT_STATES: readonly RolloutState[] = ["completed", "aborted", "failed"];

export type RolloutMove = "initialize" | "start" | "promote" | "approve" | "pause" | "resume" | "retry" | "abort";

/**
 * The states each operator move is allowed from. promote accepts the batch in flight as it is:
 * the canary (in flight or at its gate), or whichever batch a pause stopped; retry gives the
 * failed devices of the batch in flight a new attempt (and resumes a paused rollout).
 */
export const MOVES_ALLOWED_FROM: Record<RolloutMove, readonly RolloutState[]> = {
  initialize: ["draft", "initialized"],
  start: ["initialized"],
  promote: ["canary", "awaiting_approval", "paused"],
  approve: ["awaiting_approval"],
  pause: ["canary", "awaiting_approval", "in_progress"],
  resume: ["paused"],
  retry: ["canary", "in_progress", "paused"],
  abort: ["initialized", "canary", "awaiting_approval", "in_progress", "paused"],
};

/** How a refusal names the move. */
const MOVE_PHRASE: Partial<Record<RolloutMove, string>> = { retry: "retry the failed devices of" };

export interface RolloutPosition {
  state: RolloutState;
  /** index of the batch in flight; 0 is the canary */
  currentBatch: number | null;
}

/** Why `move` is not allowed from `position` (the 409's message), or null when it is. */
export function moveRefusal(move: RolloutMove, position: RolloutPosition): string | null {
  const allowed = MOVES_ALLOWED_FROM[move];
  if (!allowed.includes(position.state)) {
    const refusal = `Cannot ${MOVE_PHRASE[move] ?? move} the rollout: it is ${position.state} (allowed from ${allowed.join(", ")})`;
    // Approve opens a gate; a paused batch has not reached one: say which moves make progress.
    if (move === "approve" && position.state === "paused") {
      return `${refusal}. The paused batch is not at an approval gate: resume it to wait for its success target, retry its failed devices, promote it as it is, or abort`;
    }
    return refusal;
  }
  // Promote is the canary's gate; later gates are approvals.
  if (move === "promote" && position.state === "awaiting_approval" && position.currentBatch !== 0) {
    return `Cannot promote the rollout: it is awaiting_approval of batch ${position.currentBatch}, not of the canary; approve it instead`;
  }
  return null;
}

/** Deployment statuses (schemas.ts DEPLOYMENT_STATUSES) in which it may be edited or started. */
export const EDITABLE_STATUSES: readonly string[] = ["draft", "stopped"];

/**
 * Why a stop is refused for a deployment in `status`, or null. A running deployment stops; a
 * stopping one (waiting for its devices to confirm the removal) only with force.
 */
export function stopRefusal(status: string, force: boolean): string | null {
  if (status === "stopping") {
    return force ? null : "The deployment is already stopping and waits for its devices to confirm the removal; stop with force to finish now";
  }
  return status === "running" ? null : `Cannot stop the deployment: it is ${status}`;
}
