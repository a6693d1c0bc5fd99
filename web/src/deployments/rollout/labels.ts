// How the rollout page names states and which badge tone they get (checked against the API's
// own lists by the type checker: a new state fails to compile until it has a tone).
import type { RouterOutputs } from "../../api/client";

type DeviceEntryState = RouterOutputs["deployments"]["devices"]["items"][number]["state"];
type RolloutState = RouterOutputs["deployments"]["get"]["rolloutState"];
type BatchState = RouterOutputs["deployments"]["rollout"]["status"]["batches"][number]["state"];

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
  failed: "badge--danger",
  cancelled: "badge--warning",
};
