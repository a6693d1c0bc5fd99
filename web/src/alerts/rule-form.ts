// The alert rule form's state (text as typed), its problems by field in the API's words, and the
// body it sends. The form's fields follow the condition type: a metric threshold has a metric,
// an operator, a threshold and a duration; offline a duration; a certificate the days before
// expiry; a failed deployment nothing; a failing config source how many failed syncs in a row
// and which sources (none picked: every source), and no label selector (sources have no
// labels: the form hides it and sends {}). rule-form.test.ts checks the problems against the API's
// own schema (createRuleInput).
import { parseSelector } from "../../../src/modules/devices/selector";
import type { AlertRule, ConditionType, CreateRuleInput, MetricName, Operator, Severity } from "./types";

export interface RuleForm {
  name: string;
  description: string;
  type: ConditionType;
  metric: MetricName;
  operator: Operator;
  threshold: string;
  /** metric_threshold and device_offline, in seconds */
  durationSeconds: string;
  withinDays: string;
  /** config_source_failing */
  consecutiveFailures: string;
  /** config_source_failing: the sources watched by name; empty = every source */
  sourceNames: string[];
  selector: string;
  severity: Severity;
  cooldownSeconds: string;
  enabled: boolean;
  targetIds: string[];
}

export const EMPTY_RULE: RuleForm = {
  name: "",
  description: "",
  type: "metric_threshold",
  metric: "cpuUsagePercent",
  operator: ">",
  threshold: "90",
  durationSeconds: "300",
  withinDays: "30",
  consecutiveFailures: "1",
  sourceNames: [],
  selector: "",
  severity: "warning",
  cooldownSeconds: "900",
  enabled: true,
  targetIds: [],
};

const MAX_DURATION_SECONDS = 7 * 86_400;

export function selectorText(selector: Record<string, string>): string {
  return Object.entries(selector).map(([k, v]) => `${k}=${v}`).join(",");
}

export function formOfRule(rule: AlertRule): RuleForm {
  const c = rule.condition;
  return {
    ...EMPTY_RULE,
    name: rule.name,
    description: rule.description ?? "",
    type: c.type,
    ...(c.type === "metric_threshold" ? { metric: c.metric, operator: c.operator, threshold: String(c.threshold), durationSeconds: String(c.durationSeconds ?? 0) } : {}),
    ...(c.type === "device_offline" ? { durationSeconds: String(c.durationSeconds ?? 300) } : {}),
    ...(c.type === "certificate_expiring" ? { withinDays: String(c.withinDays ?? 30) } : {}),
    ...(c.type === "config_source_failing" ? { consecutiveFailures: String(c.consecutiveFailures ?? 1), sourceNames: [...(c.sourceNames ?? [])] } : {}),
    selector: selectorText(rule.labelSelector),
    severity: rule.severity,
    cooldownSeconds: String(rule.cooldownSeconds),
    enabled: rule.enabled,
    targetIds: [...rule.targetIds],
  };
}

function wholeNumberProblem(text: string, min: number, max: number): string | null {
  if (text.trim() === "") return "required";
  const n = Number(text);
  if (!Number.isInteger(n)) return "must be a whole number";
  if (n < min) return `must be at least ${min}`;
  if (n > max) return `must be at most ${max}`;
  return null;
}

/** Every problem by field name; empty when the API would accept the body. */
export function ruleProblems(form: RuleForm): Partial<Record<keyof RuleForm, string>> {
  const problems: Partial<Record<keyof RuleForm, string>> = {};
  if (form.name.trim() === "") problems.name = "a name is required";
  else if (form.name.trim().length > 100) problems.name = "at most 100 characters";
  if (form.description.length > 500) problems.description = "at most 500 characters";
  if (form.type === "metric_threshold") {
    if (form.threshold.trim() === "" || !Number.isFinite(Number(form.threshold))) problems.threshold = "must be a number";
    const d = wholeNumberProblem(form.durationSeconds, 0, MAX_DURATION_SECONDS);
    if (d) problems.durationSeconds = d;
  }
  if (form.type === "device_offline") {
    const d = wholeNumberProblem(form.durationSeconds, 0, MAX_DURATION_SECONDS);
    if (d) problems.durationSeconds = d;
  }
  if (form.type === "certificate_expiring") {
    const d = wholeNumberProblem(form.withinDays, 1, 3650);
    if (d) problems.withinDays = d;
  }
  if (form.type === "config_source_failing") {
    const d = wholeNumberProblem(form.consecutiveFailures, 1, 100);
    if (d) problems.consecutiveFailures = d;
  }
  const cooldown = wholeNumberProblem(form.cooldownSeconds, 0, MAX_DURATION_SECONDS);
  if (cooldown) problems.cooldownSeconds = cooldown;
  if (appliesToDevices(form.type)) {
    try {
      parseSelector(form.selector);
    } catch (err) {
      problems.selector = (err as Error).message;
    }
  }
  if (form.targetIds.length > 20) problems.targetIds = "at most 20 targets";
  return problems;
}

export function conditionOf(form: RuleForm): CreateRuleInput["condition"] {
  switch (form.type) {
    case "metric_threshold":
      return { type: "metric_threshold", metric: form.metric, operator: form.operator, threshold: Number(form.threshold), durationSeconds: Number(form.durationSeconds) };
    case "device_offline":
      return { type: "device_offline", durationSeconds: Number(form.durationSeconds) };
    case "deployment_failed":
      return { type: "deployment_failed" };
    case "certificate_expiring":
      return { type: "certificate_expiring", withinDays: Number(form.withinDays) };
    case "config_source_failing":
      return { type: "config_source_failing", consecutiveFailures: Number(form.consecutiveFailures), sourceNames: form.sourceNames };
  }
}

/** Whether the condition watches devices (and so has a label selector); config sources have no labels. */
export const appliesToDevices = (type: ConditionType) => type !== "config_source_failing";

/** The create body (also the update's fields: a PATCH with every field replaces them all). */
export function ruleBody(form: RuleForm): CreateRuleInput {
  let labelSelector: Record<string, string> = {};
  try {
    if (appliesToDevices(form.type)) labelSelector = parseSelector(form.selector);
  } catch {
    /* ruleProblems names it; the form does not submit */
  }
  return {
    name: form.name.trim(),
    ...(form.description.trim() ? { description: form.description.trim() } : {}),
    condition: conditionOf(form),
    labelSelector,
    severity: form.severity,
    cooldownSeconds: Number(form.cooldownSeconds),
    enabled: form.enabled,
    targetIds: form.targetIds,
  };
}
