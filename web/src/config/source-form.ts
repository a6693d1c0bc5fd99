// The config source form and the body it becomes: the connection fields are a Git registry's
// (the same checks, registries/forms.ts), plus prune, adopt, the prune guard and the poll
// interval. And the plan's values in words for the diff (plan-diff of ConfigPage).
import type { RouterInputs, RouterOutputs } from "../api/client";
import { EMPTY_FORM, formProblems, gitBody, type AuthType } from "../registries/forms";

export type ConfigSource = RouterOutputs["config"]["sourcesList"]["items"][number];
export type SourcePlan = RouterOutputs["config"]["sourcesPlan"];
export type PlanEntry = SourcePlan["resources"][number];
export type PlanAction = PlanEntry["action"];

export interface SourceForm {
  name: string;
  url: string;
  branch: string;
  path: string;
  authType: AuthType;
  credential: string;
  prune: boolean;
  adopt: boolean;
  pruneLimit: string;
  pollIntervalSeconds: string;
}

export const EMPTY_SOURCE: SourceForm = {
  name: "", url: "", branch: "main", path: "/", authType: "NONE", credential: "", prune: false, adopt: false, pruneLimit: "10", pollIntervalSeconds: "120",
};

const MIN_POLL_SECONDS = 30;

/** What the form can tell before the API: a Git registry's connection checks, then the source's own fields. */
export function sourceProblems(form: SourceForm): Partial<Record<keyof SourceForm, string>> {
  const { name, url, branch, credential } = formProblems("git", { ...EMPTY_FORM, ...connection(form), syncIntervalMinutes: "0" }, false);
  const problems: Partial<Record<keyof SourceForm, string>> = Object.fromEntries(Object.entries({ name, url, branch, credential }).filter(([, v]) => v !== undefined));
  const limit = Number(form.pruneLimit);
  if (form.pruneLimit.trim() === "" || !Number.isInteger(limit) || limit < 0 || limit > 10_000) problems.pruneLimit = "Give a whole number from 0 to 10000.";
  const poll = Number(form.pollIntervalSeconds);
  if (form.pollIntervalSeconds.trim() === "" || !Number.isInteger(poll) || poll < 0 || poll > 86_400 || (poll > 0 && poll < MIN_POLL_SECONDS)) {
    problems.pollIntervalSeconds = `Give 0 (no polling) or ${MIN_POLL_SECONDS} to 86400 seconds.`;
  }
  return problems;
}

function connection(form: SourceForm) {
  return { name: form.name, url: form.url, branch: form.branch, path: form.path, authType: form.authType, credential: form.credential };
}

export function sourceBody(form: SourceForm): Omit<RouterInputs["config"]["sourcesCreate"], "orgId"> {
  const { syncIntervalMinutes: _, ...git } = gitBody({ ...EMPTY_FORM, ...connection(form), syncIntervalMinutes: "0" });
  return { ...git, prune: form.prune, adopt: form.adopt, pruneLimit: Number(form.pruneLimit), pollIntervalSeconds: Number(form.pollIntervalSeconds) };
}

/** A field's value in the diff: strings as they are, everything else as compact JSON; absent reads "(none)". */
export function valueText(value: unknown): string {
  if (value === undefined || value === null) return "(none)";
  if (typeof value === "string") return value === "" ? '""' : value;
  return JSON.stringify(value);
}

export const ACTION_LABEL: Record<PlanAction, string> = {
  create: "create", update: "update", unchanged: "unchanged", delete: "delete", refused: "refused", exists_unmanaged: "exists, not managed",
};

export const ACTION_TONE: Record<PlanAction, string> = {
  create: "badge--success", update: "badge--accent", unchanged: "", delete: "badge--danger", refused: "badge--danger", exists_unmanaged: "badge--warning",
};

/** Whether "Apply" may be offered: the plan was made, nothing is refused (a refused document refuses the whole sync). */
export function applicable(plan: SourcePlan): boolean {
  return plan.failure === null && plan.summary !== null && plan.summary.refused === 0;
}

/** "file.yaml:12", or the file alone, or null. */
export function whereText(entry: { file: string | null; line: number | null }): string | null {
  if (!entry.file) return null;
  return entry.line ? `${entry.file}:${entry.line}` : entry.file;
}

/** "every 2 min", "no polling". */
export function pollText(seconds: number): string {
  if (seconds === 0) return "no polling (webhook and sync now)";
  if (seconds % 60 === 0) return `every ${seconds / 60} min`;
  return `every ${seconds} s`;
}
