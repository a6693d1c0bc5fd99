// Deployment shapes as the API answers them, derived from the router (never copied by hand).
import type { RouterInputs, RouterOutputs } from "../api/client";

export type Deployment = RouterOutputs["deployments"]["get"];
export type Progress = Deployment["progress"];
export type CreateDeploymentInput = RouterInputs["deployments"]["create"];
export type UpdateDeploymentInput = RouterInputs["deployments"]["update"];
export type ApplicationVersion = RouterOutputs["applications"]["versions"]["items"][number];
export type Profile = ApplicationVersion["profiles"][number];

export type DeploymentState = Deployment["state"];

/** Badge tone of a deployment's one state (checked against the API's states). */
export const STATE_TONE: Record<DeploymentState, string> = {
  draft: "",
  scheduled: "badge--pending",
  rolling_out: "badge--accent",
  awaiting_approval: "badge--warning",
  paused: "badge--warning",
  completed: "badge--success",
  aborted: "badge--danger",
  failed: "badge--danger",
  stopping: "badge--warning",
  stopped: "",
  deleting: "badge--warning",
};
