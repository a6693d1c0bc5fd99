// Deployment shapes as the API answers them, derived from the router (never copied by hand).
import type { RouterInputs, RouterOutputs } from "../api/client";

export type Deployment = RouterOutputs["deployments"]["get"];
export type DeploymentStatus = Deployment["status"];
export type RolloutState = Deployment["rolloutState"];
export type Progress = Deployment["progress"];
export type CreateDeploymentInput = RouterInputs["deployments"]["create"];
export type UpdateDeploymentInput = RouterInputs["deployments"]["update"];
export type ApplicationVersion = RouterOutputs["applications"]["versions"]["items"][number];
export type Profile = ApplicationVersion["profiles"][number];

/** Badge tone of a deployment's status (checked against the API's statuses). */
export const STATUS_TONE: Record<DeploymentStatus, string> = {
  draft: "",
  running: "badge--accent",
  stopping: "badge--warning",
  stopped: "",
  deleting: "badge--warning",
};

/** Badge tone of a rollout state. */
export const ROLLOUT_TONE: Record<RolloutState, string> = {
  draft: "",
  initialized: "",
  canary: "badge--accent",
  awaiting_approval: "badge--warning",
  in_progress: "badge--accent",
  paused: "badge--warning",
  completed: "badge--success",
  aborted: "badge--danger",
  failed: "badge--danger",
};
