// Alert shapes as the API answers them, derived from the router (never copied by hand).
import type { RouterInputs, RouterOutputs } from "../api/client";

export type AlertRule = RouterOutputs["alertRules"]["get"];
export type Alert = RouterOutputs["alerts"]["list"]["items"][number];
export type Delivery = RouterOutputs["alertRules"]["deliveries"]["items"][number];
export type CreateRuleInput = RouterInputs["alertRules"]["create"];
export type Condition = CreateRuleInput["condition"];
export type ConditionType = Condition["type"];
export type MetricName = Extract<Condition, { type: "metric_threshold" }>["metric"];
export type Operator = Extract<Condition, { type: "metric_threshold" }>["operator"];
export type Severity = AlertRule["severity"];

/** In the order the form offers them; the Record makes the compiler check the API's list. */
export const SEVERITY_ORDER = ["critical", "warning", "info"] as const satisfies readonly Severity[];
export const SEVERITY_TONE: Record<Severity, string> = { critical: "badge--danger", warning: "badge--warning", info: "badge--accent" };

export const CONDITION_LABEL: Record<ConditionType, string> = {
  metric_threshold: "Metric threshold",
  device_offline: "Device offline",
  deployment_failed: "Deployment failed",
  certificate_expiring: "Certificate expiring",
  config_source_failing: "Config source failing",
};

/** The metrics a threshold may watch, in words (the Record is checked against the API's enum). */
export const METRIC_LABEL: Record<MetricName, string> = {
  cpuUsagePercent: "CPU usage (%)",
  memoryUsagePercent: "Memory usage (%)",
  diskUsagePercent: "Disk usage (%)",
  memoryUsedBytes: "Memory used (bytes)",
  memoryTotalBytes: "Memory total (bytes)",
  diskUsedBytes: "Disk used (bytes)",
  diskTotalBytes: "Disk total (bytes)",
  uptimeSeconds: "Uptime (seconds)",
  restartCount: "Restarts",
  containersRunning: "Containers running",
  containersFailed: "Containers failed",
  errorCount: "Errors",
};

export const OPERATOR_LABEL: Record<Operator, string> = { ">": "above", ">=": "at or above", "<": "below", "<=": "at or below", "==": "equal to", "!=": "not equal to" };
