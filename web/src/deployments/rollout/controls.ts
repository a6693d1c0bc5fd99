// Which control of the rollout page is enabled: taken from the service's own move table
// (src/modules/deployments/rollout-moves.ts, which the service's state machine applies), so
// that a button is enabled exactly when the move would not be answered 409.
import { EDITABLE_STATUSES, moveRefusal, stopRefusal, type RolloutPosition, type RolloutState } from "../../../../src/modules/deployments/rollout-moves";
import { counted } from "../../../../src/lib/plural";

export const CONTROLS = ["start", "promote", "approve", "pause", "resume", "retry", "abort", "stop", "forceStop", "delete"] as const;
export type Control = (typeof CONTROLS)[number];

export interface DeploymentPosition extends RolloutPosition {
  /** the deployment's status (draft, running, stopping, stopped, deleting) */
  status: string;
  staged: boolean;
  /** failed devices of the batch in flight (a retry needs one; the service answers 409 without) */
  retryable?: number;
}

/** null: enabled; otherwise why not (shown as the disabled button's description). */
export type ControlStates = Record<Control, string | null>;

export function controlStates(d: DeploymentPosition): ControlStates {
  const position = { state: d.state, currentBatch: d.currentBatch };
  // The rollout moves exist for staged deployments only (the API answers 409 for all-at-once).
  const rolloutMove = (move: "promote" | "approve" | "pause" | "resume" | "retry" | "abort") =>
    d.staged ? moveRefusal(move, position) : "An all-at-once deployment has no staged rollout";
  return {
    // deployments.start initializes a staged rollout when needed and dispatches the canary.
    start: EDITABLE_STATUSES.includes(d.status) ? null : `Only a draft or stopped deployment starts; it is ${d.status}`,
    promote: rolloutMove("promote"),
    approve: rolloutMove("approve"),
    pause: rolloutMove("pause"),
    resume: rolloutMove("resume"),
    retry: rolloutMove("retry") ?? ((d.retryable ?? 0) > 0 ? null : "None of the devices of the batch in flight failed"),
    abort: rolloutMove("abort"),
    stop: stopRefusal(d.status, false),
    forceStop: d.status === "stopping" ? stopRefusal(d.status, true) : "Only a deployment waiting for its devices' removal is stopped with force",
    // A draft or stopped deployment goes at once, a running one after its devices removed it;
    // one already being deleted is only finished with force (the removal card offers that).
    delete: d.status === "deleting" ? "The deployment is being deleted: its devices are removing it" : null,
  };
}

/** What each control does, said in its confirmation. */
export function controlConsequence(
  control: Control,
  d: {
    state: RolloutState; currentBatch: number | null; staged: boolean; batches: number;
    /** the batch in flight below its success target (labels.ts shortfall): a promotion names it */
    shortfall?: { batch: string; text: string; failed: number } | null;
    retryable?: number;
  },
): string {
  const next = (d.currentBatch ?? 0) + 1;
  const nextName = next >= d.batches ? "and the rollout completes" : `and batch ${next} is dispatched to its devices`;
  switch (control) {
    case "start":
      return d.staged
        ? "The device set is frozen and planned into batches, and the canary batch is dispatched to its devices."
        : "Every eligible targeted device gets the application in its desired state.";
    case "promote":
      if (d.shortfall) {
        return `${d.shortfall.batch} has not reached its success target: ${d.shortfall.text}${d.shortfall.failed ? ` (${d.shortfall.failed} failed)` : ""}. `
          + `It is recorded as promoted below its target by you, ${nextName}.`;
      }
      return `${d.currentBatch === 0 || d.currentBatch === null ? "The canary" : `Batch ${d.currentBatch}`} is accepted as it is ${nextName}.`;
    case "retry": {
      const n = d.retryable ?? 0;
      return `The ${counted(n, "failed device")} of the batch in flight ${n === 1 ? "gets its" : "get their"} next attempt now; the batch gets a fresh timeout and the failure threshold watches it again.`
        + (d.state === "paused" ? " The rollout resumes." : "");
    }
    case "approve":
      return `Batch ${d.currentBatch} is accepted ${nextName}.`;
    case "pause":
      return "Devices in flight finish; nothing new is dispatched until you resume.";
    case "resume":
      return "The rollout returns to the state it paused from; the batch in flight gets a fresh timeout and its failures so far are accepted.";
    case "abort":
      return "Nothing new is dispatched and devices that have not started are cancelled. Devices already installing or running keep the application; stop the deployment to remove it from them.";
    case "stop":
      return "Every device of the deployment is told to remove the application. The deployment is stopping until each device confirmed the removal.";
    case "forceStop":
      return "The deployment is stopped now without waiting for the remaining devices to confirm the removal. Devices that have not removed the application yet may keep running it.";
    case "delete":
      return "A draft or stopped deployment is deleted at once. A running one first asks its devices to remove the application and is deleted once every device confirmed.";
  }
}
