// The kinds of device action and what each needs: shared by the service, the agent (as a
// type), the CLI and the console. Free of imports so the console's bundle can take it.

export const ACTION_KINDS = [
  "reboot", "restart-app", "stop-app", "start-app", "restart-agent",
  "check-health", "renew-certificate", "diagnostics", "apply-configuration",
] as const;
export type ActionKind = (typeof ACTION_KINDS)[number];

/**
 * A configuration layer's rollout (docs/configuration.md, "Rollout"): a job of this kind is
 * created by PATCH/rollback of a layer with `rollout`, never by POST /jobs or /device-actions;
 * its actions are never handed to the agent: the heartbeat gives an admitted device the
 * layer's new revision instead, and the device's configuration report ends its action.
 */
export const CONFIGURATION_KIND = "apply-configuration" satisfies ActionKind;
/** What an operator may create directly (POST /device-actions, POST /jobs), and the agent is handed. */
export type OperatorKind = Exclude<ActionKind, typeof CONFIGURATION_KIND>;
export const OPERATOR_KINDS = ACTION_KINDS.filter((k): k is OperatorKind => k !== CONFIGURATION_KIND) as [OperatorKind, ...OperatorKind[]];

/** Kinds that act on one application (a deployment's compose project): they name the deployment. */
export const APP_KINDS: readonly ActionKind[] = ["restart-app", "stop-app", "start-app"];

/**
 * Kinds that change what runs on the device: they need `actions:disruptive` beside
 * `actions:write`, and a reboot asks for confirmation in the console and `--yes` off a terminal.
 */
export const DISRUPTIVE_KINDS: readonly ActionKind[] = ["reboot", "restart-app", "stop-app", "start-app", "restart-agent"];

/** Kinds a "not now" lease on the device defers (starting an application interrupts nothing). */
/** Kinds a job's disruption budget paces: what disrupts, and a configuration (its activation may restart a service). */
export const BUDGETED_KINDS: readonly ActionKind[] = [...DISRUPTIVE_KINDS, CONFIGURATION_KIND];

export const DEFERRABLE_KINDS: readonly ActionKind[] = ["reboot", "restart-app", "stop-app", "restart-agent"];

/** queued and skipped: a job's device whose batch is not dispatched yet, or that cannot run it (message says why). */
export const ACTION_STATES = ["pending", "delivered", "running", "deferred", "succeeded", "failed", "expired", "cancelled", "queued", "skipped"] as const;
export type ActionState = (typeof ACTION_STATES)[number];
/** States the service still hands to the device (with the heartbeat's answer). */
export const OPEN_STATES: readonly ActionState[] = ["pending", "delivered", "deferred"];
export const FINAL_STATES: readonly ActionState[] = ["succeeded", "failed", "expired", "cancelled", "skipped"];

/** What the device may report about an action. */
export const REPORTED_STATES = ["running", "deferred", "succeeded", "failed", "expired"] as const;

export const DEFAULT_EXPIRY_SECONDS = 3600;
export const MAX_EXPIRY_SECONDS = 7 * 24 * 3600;
/** a diagnostics bundle: at most this size (the agent cuts its parts to fit), downloadable this long */
export const BUNDLE_MAX_BYTES = 8 * 1024 * 1024;
export const BUNDLE_KEPT_SECONDS = 7 * 24 * 3600;
