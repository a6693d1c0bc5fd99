// A deployment's state in one word a person reads: computed here, from what is stored (the
// deployment's status, its rollout's state and whether a draft is scheduled), and nowhere
// else. The API answers it as `state` (schemas.ts), the list filters on it (service.ts builds
// the SQL from the same table), the console shows it on the deployments list, the deployment
// page and the overview, and the CLI prints it. Pure and free of server imports, because the
// console imports it too. The table is documented in docs/deployments.md ("One state").
import type { RolloutState } from "./rollout-moves.js";

export const DEPLOYMENT_STATES = [
  "draft", "scheduled", "rolling_out", "awaiting_approval", "paused", "completed", "aborted", "failed", "stopping", "stopped", "deleting",
] as const;
export type DeploymentState = (typeof DEPLOYMENT_STATES)[number];

/** The stored statuses (schemas.ts DEPLOYMENT_STATUSES, repeated here so that this file stays free of zod). */
type StoredStatus = "draft" | "running" | "stopping" | "stopped" | "deleting";

/**
 * A running deployment is in its devices' desired state: its rollout says where it is. A
 * rollout that is `draft` or `initialized` while the deployment runs exists only inside the
 * transaction that starts it (start, upgrade): it is rolling out.
 */
const WHILE_RUNNING: Record<RolloutState, DeploymentState> = {
  draft: "rolling_out",
  initialized: "rolling_out",
  canary: "rolling_out",
  in_progress: "rolling_out",
  awaiting_approval: "awaiting_approval",
  paused: "paused",
  completed: "completed",
  aborted: "aborted",
  failed: "failed",
};

/**
 * Every other status says it alone, whatever its rollout's state: a draft is not started (its
 * rollout at most planned), and a stopping, stopped or deleting deployment is leaving its
 * devices (a stop aborts a rollout in flight; one that had ended keeps its final state).
 */
const BY_STATUS: Record<Exclude<StoredStatus, "running">, DeploymentState> = {
  draft: "draft",
  stopping: "stopping",
  stopped: "stopped",
  deleting: "deleting",
};

export interface StoredDeploymentState {
  status: string;
  rolloutState: string;
  /** a draft's scheduled start (ISO text or Date), null when none */
  startAt: string | Date | null;
}

/** The one state of a deployment (docs/deployments.md, "One state"). */
export function deploymentState(d: StoredDeploymentState): DeploymentState {
  if (d.status === "running") return WHILE_RUNNING[d.rolloutState as RolloutState] ?? "rolling_out";
  if (d.status === "draft") return d.startAt !== null ? "scheduled" : "draft";
  return BY_STATUS[d.status as keyof typeof BY_STATUS] ?? "stopped";
}

/** The state in words, as every surface prints it: "rolling out", "awaiting approval". */
export function deploymentStateText(state: DeploymentState): string {
  return state.replace(/_/g, " ");
}

/** Deployments in progress (the overview's card, `inProgress=true`): a rollout that has not ended. */
export const IN_PROGRESS_STATES: readonly DeploymentState[] = ["rolling_out", "awaiting_approval", "paused"];

/** Stored combinations that compute to one state, for a query: the status, the rollout states (null: any), whether a draft is scheduled (null: either). */
export interface StoredCombination {
  status: StoredStatus;
  rolloutStates: RolloutState[] | null;
  scheduled: boolean | null;
}

/** The stored combinations whose state is one of `states` (the list's filter is built from these, so it agrees with deploymentState). */
export function storedCombinations(states: readonly DeploymentState[]): StoredCombination[] {
  const out: StoredCombination[] = [];
  if (states.includes("draft")) out.push({ status: "draft", rolloutStates: null, scheduled: false });
  if (states.includes("scheduled")) out.push({ status: "draft", rolloutStates: null, scheduled: true });
  const running = (Object.keys(WHILE_RUNNING) as RolloutState[]).filter((r) => states.includes(WHILE_RUNNING[r]));
  if (running.length) out.push({ status: "running", rolloutStates: running, scheduled: null });
  for (const [status, state] of Object.entries(BY_STATUS) as Array<[Exclude<StoredStatus, "running">, DeploymentState]>) {
    if (status !== "draft" && states.includes(state)) out.push({ status, rolloutStates: null, scheduled: null });
  }
  return out;
}
