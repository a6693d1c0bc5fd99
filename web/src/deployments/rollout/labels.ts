// How the rollout page names states and which badge tone they get (checked against the API's
// own lists by the type checker: a new state fails to compile until it has a tone).
import type { RouterOutputs } from "../../api/client";

type DeviceEntryState = RouterOutputs["deployments"]["devices"]["items"][number]["state"];
type RolloutState = RouterOutputs["deployments"]["get"]["rolloutState"];
type Rollout = RouterOutputs["deployments"]["rollout"]["status"];
type Batch = Rollout["batches"][number];
type BatchState = Batch["state"];

export const STATE_TONE: Record<DeviceEntryState, string> = {
  pending: "badge--pending",
  downloading: "badge--accent",
  installing: "badge--accent",
  running: "badge--success",
  failed: "badge--danger",
  removing: "badge--warning",
  removed: "",
  skipped: "",
  cancelled: "",
  superseded: "",
};

const ROLLOUT_LABELS: Record<RolloutState, string> = {
  draft: "Draft",
  initialized: "Planned",
  canary: "Canary",
  awaiting_approval: "Awaiting approval",
  in_progress: "In progress",
  paused: "Paused",
  completed: "Completed",
  aborted: "Aborted",
  failed: "Failed",
};

export function stateLabel(state: RolloutState): string {
  return ROLLOUT_LABELS[state];
}

export const BATCH_STATE_TONE: Record<BatchState, string> = {
  planned: "",
  in_progress: "badge--accent",
  succeeded: "badge--success",
  promoted: "badge--warning",
  failed: "badge--danger",
  cancelled: "badge--warning",
};

// One vocabulary on the page: the deployment's one state heads it (the API's `state`, in the
// words of the list and the overview: "rolling out", "aborted"), the rollout's state says where
// the rollout is, and a batch says what happened to it. While the rollout is paused, nothing on
// the page says a batch is in flight or in progress: its batch is on hold.

const name = (index: number) => (index === 0 ? "canary" : `batch ${index}`);

/** Beside the rollout's state: which batch it is at, in the state's own words ("canary on hold"). */
export function positionText(rollout: Pick<Rollout, "state" | "currentBatch" | "batches">): string | null {
  const { state, currentBatch } = rollout;
  if (currentBatch === null) return null;
  const current = rollout.batches.find((b) => b.index === currentBatch);
  const of = currentBatch === 0 ? "canary" : `batch ${currentBatch} of ${rollout.batches.length - 1}`;
  if (state === "canary" || state === "in_progress") return `${of} in flight`;
  if (state === "paused") return current?.state === "in_progress" ? `${of} on hold` : `after the ${name(currentBatch)}`;
  if (state === "awaiting_approval") return `${name(currentBatch)} done; the next batch waits for approval`;
  return null;
}

/** A batch's badge: what happened to it, or where it is ("on hold" while the rollout is paused). */
export function batchStateText(rollout: Pick<Rollout, "state" | "currentBatch">, batch: Pick<Batch, "index" | "state" | "outcome">): string {
  switch (batch.state) {
    case "in_progress":
      return rollout.state === "paused" && rollout.currentBatch === batch.index ? "on hold" : rollout.state === "canary" || rollout.state === "in_progress" ? "in flight" : "stopped";
    case "promoted":
      return `promoted below target${batch.outcome?.by ? ` by ${batch.outcome.by}` : ""}`;
    case "failed":
      return "failed (timed out)";
    case "cancelled":
      return batch.outcome ? "cancelled (aborted)" : "cancelled";
    default:
      return batch.state;
  }
}

/** The batch in flight, when it has not reached its success target: what a promotion would accept ("2 of 3 running, 3 needed"). */
export function shortfall(rollout: Pick<Rollout, "currentBatch" | "batches">): { batch: string; text: string; failed: number } | null {
  const b = rollout.batches.find((x) => x.index === rollout.currentBatch && x.state === "in_progress");
  if (!b || b.counts.running >= b.successTarget) return null;
  return { batch: b.index === 0 ? "The canary" : `Batch ${b.index}`, text: `${b.counts.running} of ${b.size} running, ${b.successTarget} needed`, failed: b.counts.failed };
}

/** Failed devices of the batch in flight that a retry gives a new attempt (those waiting for an automatic retry too). */
export function retryable(rollout: Pick<Rollout, "currentBatch" | "batches">): number {
  const b = rollout.batches.find((x) => x.index === rollout.currentBatch && x.state === "in_progress");
  return b ? b.counts.failed + b.counts.waitingToRetry : 0;
}
