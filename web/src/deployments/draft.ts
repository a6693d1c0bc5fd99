// The deployment form's state, and the create / update input the API gets from it. An edit
// sends an option only when the form changed it, so what the form does not show is never lost.
import { parseSelector, SelectorError } from "../../../src/modules/devices/selector";
import type { ParameterInputs, ParameterValue } from "./parameter-form";
import { DEFAULT_STRATEGY, strategyInput, strategyValue, type ShareUnit, type StrategyInput } from "./strategy-form";
import type { CreateDeploymentInput, Deployment, UpdateDeploymentInput } from "./types";

export interface RetryInput {
  enabled: boolean;
  maxAttempts: string;
  initialDelaySeconds: string;
  maxDelaySeconds: string;
}

export interface BudgetInput {
  enabled: boolean;
  /** label keys, comma-separated */
  groupBy: string;
  unit: ShareUnit;
  amount: string;
}

export interface DeploymentDraft {
  name: string;
  description: string;
  applicationId: string;
  version: string;
  profileId: string;
  targetKind: "selector" | "devices";
  selector: string;
  deviceIds: string[];
  parameters: ParameterInputs;
  strategy: StrategyInput;
  retry: RetryInput;
  /** datetime-local text ("" : start by hand) */
  startAt: string;
  continuous: boolean;
  onLeave: "remove" | "keep";
  budget: BudgetInput;
  /** the maintenance windows (MaintenanceWindowsEditor checks them with the service's schema) */
  maintenanceWindows: Deployment["maintenanceWindows"];
}

export const EMPTY_DRAFT: DeploymentDraft = {
  name: "",
  description: "",
  applicationId: "",
  version: "",
  profileId: "",
  targetKind: "selector",
  selector: "",
  deviceIds: [],
  parameters: {},
  strategy: DEFAULT_STRATEGY,
  retry: { enabled: false, maxAttempts: "3", initialDelaySeconds: "60", maxDelaySeconds: "900" },
  startAt: "",
  continuous: false,
  onLeave: "remove",
  budget: { enabled: false, groupBy: "", unit: "count", amount: "1" },
  maintenanceWindows: null,
};

const num = (text: string) => (text.trim() === "" ? NaN : Number(text));

/** datetime-local text of an ISO time, in the browser's zone. */
export function localDateTime(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** A stored deployment as the form shows it (secrets empty: they never come back). */
export function draftOf(d: Deployment, parameters: ParameterInputs): DeploymentDraft {
  return {
    name: d.name,
    description: d.description ?? "",
    applicationId: d.applicationId,
    version: d.version,
    profileId: d.profileId,
    targetKind: d.target.labelSelector ? "selector" : "devices",
    selector: d.target.labelSelector ? Object.entries(d.target.labelSelector).map(([k, v]) => `${k}=${v}`).join(",") : "",
    deviceIds: d.target.deviceIds ?? [],
    parameters,
    strategy: strategyInput(d.strategy),
    retry: d.retry
      ? { enabled: true, maxAttempts: String(d.retry.maxAttempts), initialDelaySeconds: String(d.retry.initialDelaySeconds), maxDelaySeconds: String(d.retry.maxDelaySeconds) }
      : EMPTY_DRAFT.retry,
    startAt: localDateTime(d.startAt),
    continuous: d.continuous,
    onLeave: d.onLeave,
    budget: d.disruptionBudget
      ? {
          enabled: true,
          groupBy: d.disruptionBudget.groupBy.join(","),
          unit: "count" in d.disruptionBudget.maxUnavailable ? "count" : "percent",
          amount: String("count" in d.disruptionBudget.maxUnavailable ? d.disruptionBudget.maxUnavailable.count : d.disruptionBudget.maxUnavailable.percent),
        }
      : EMPTY_DRAFT.budget,
    maintenanceWindows: d.maintenanceWindows,
  };
}

export function targetOf(draft: DeploymentDraft): CreateDeploymentInput["target"] {
  if (draft.targetKind === "devices") return { deviceIds: draft.deviceIds };
  try {
    return { labelSelector: parseSelector(draft.selector) };
  } catch {
    return { labelSelector: {} };
  }
}

/** The target's problem by field (selector or devices), by the API's rules (targetInput). */
export function targetProblems(draft: DeploymentDraft): Record<string, string> {
  if (draft.targetKind === "devices") return draft.deviceIds.length ? {} : { devices: "pick at least one device" };
  try {
    if (Object.keys(parseSelector(draft.selector)).length === 0) return { selector: "name at least one label: an empty selector would match every device" };
    return {};
  } catch (err) {
    if (err instanceof SelectorError) return { selector: err.message };
    throw err;
  }
}

function retryOf(draft: DeploymentDraft) {
  const r = draft.retry;
  return r.enabled ? { maxAttempts: num(r.maxAttempts), initialDelaySeconds: num(r.initialDelaySeconds), maxDelaySeconds: num(r.maxDelaySeconds) } : undefined;
}

/** The disruption budget the API takes (deployments and jobs alike); undefined when not set. */
export function budgetValue(b: BudgetInput) {
  if (!b.enabled) return undefined;
  const groupBy = b.groupBy.split(",").map((k) => k.trim()).filter(Boolean);
  return { groupBy, maxUnavailable: b.unit === "count" ? { count: num(b.amount) } : { percent: num(b.amount) } };
}

/** POST /deployments, from the form. */
export function createInput(draft: DeploymentDraft, parameters: Record<string, ParameterValue>): CreateDeploymentInput {
  const continuous = draft.targetKind === "selector" && draft.continuous;
  return {
    name: draft.name.trim(),
    ...(draft.description.trim() ? { description: draft.description.trim() } : {}),
    applicationId: draft.applicationId,
    version: draft.version,
    profileId: draft.profileId,
    parameters,
    target: targetOf(draft),
    strategy: strategyValue(draft.strategy),
    ...(retryOf(draft) ? { retry: retryOf(draft) } : {}),
    ...(draft.startAt ? { startAt: new Date(draft.startAt).toISOString() } : {}),
    ...(draft.maintenanceWindows ? { maintenanceWindows: draft.maintenanceWindows } : {}),
    ...(draft.budget.enabled ? { disruptionBudget: budgetValue(draft.budget) } : {}),
    ...(continuous ? { continuous: true, onLeave: draft.onLeave } : {}),
  };
}

/**
 * PATCH /deployments/{id}, from the form: every field the form edits (null clears an option),
 * the parameters only when they changed (see parameterSubmission), the start time only when
 * it was changed, the maintenance windows only when they changed.
 */
export function updateInput(id: string, draft: DeploymentDraft, before: Deployment, parameters: Record<string, ParameterValue> | undefined): UpdateDeploymentInput {
  const created = createInput(draft, parameters ?? {});
  return {
    id,
    name: created.name,
    description: created.description ?? null,
    version: created.version,
    profileId: created.profileId,
    ...(parameters ? { parameters } : {}),
    target: created.target,
    strategy: created.strategy,
    retry: created.retry ?? null,
    ...(draft.startAt !== localDateTime(before.startAt) ? { startAt: created.startAt ?? null } : {}),
    ...(JSON.stringify(before.maintenanceWindows) !== JSON.stringify(draft.maintenanceWindows) ? { maintenanceWindows: draft.maintenanceWindows ?? null } : {}),
    disruptionBudget: created.disruptionBudget ?? null,
    continuous: created.continuous ?? false,
    ...(created.continuous ? { onLeave: created.onLeave } : {}),
  };
}
