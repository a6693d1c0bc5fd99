// Alert rule DTOs. A rule watches one condition over the devices its label selector picks,
// and notifies its targets when the condition starts (firing) and stops (resolved) holding
// for a device.
import { z } from "zod";
import { pagingInput } from "../../lib/paging.js";
import { ownerMark, ownerMarkOutput, type OwnerMark } from "../../lib/owner-mark.js";
import { labelSelectorSchema } from "../devices/labels.js";
import { conditionInput, summarize, type Condition } from "./conditions.js";

export const SEVERITIES = ["info", "warning", "critical"] as const;
export type Severity = (typeof SEVERITIES)[number];

const bodyBoolean = () => z.boolean().pipe(z.boolean());
const seconds = (max: number) => z.number().int().min(0).max(max).pipe(z.number());
const name = z.string().trim().min(1).max(100);
const description = z.string().max(500);
const targetIds = z.array(z.uuid()).max(20).describe("notification targets of the organization");

export const createRuleInput = z.object({
  name,
  description: description.optional(),
  condition: conditionInput,
  labelSelector: labelSelectorSchema.default({}).describe("devices in scope: every label must match; {} = every device"),
  severity: z.enum(SEVERITIES).default("warning"),
  cooldownSeconds: seconds(7 * 86_400).default(900).describe("minimum time between two firing notifications of this rule for one device"),
  enabled: bodyBoolean().default(true),
  targetIds: targetIds.default([]),
});
export type CreateRuleInput = z.infer<typeof createRuleInput>;

export const updateRuleInput = z.object({
  id: z.uuid(),
  name: name.optional(),
  description: description.nullable().optional(),
  condition: conditionInput.optional(),
  labelSelector: labelSelectorSchema.optional(),
  severity: z.enum(SEVERITIES).optional(),
  cooldownSeconds: seconds(7 * 86_400).optional(),
  enabled: bodyBoolean().optional(),
  targetIds: targetIds.optional().describe("replaces the rule's targets"),
});
export type UpdateRuleInput = z.infer<typeof updateRuleInput>;

export const listRulesInput = z.object({
  enabled: z.stringbool().optional(),
  severity: z.enum(SEVERITIES).optional(),
  ...pagingInput,
});

export const ruleOutput = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  condition: conditionInput,
  /** "cpuUsagePercent > 90 for 5m" */
  summary: z.string(),
  labelSelector: z.record(z.string(), z.string()),
  severity: z.enum(SEVERITIES),
  cooldownSeconds: z.number().int(),
  enabled: z.boolean(),
  targetIds: z.array(z.string()),
  /** subjects (devices, or config sources) for which the rule is firing now */
  firingCount: z.number().int(),
  lastEvaluatedAt: z.string().nullable(),
  ...ownerMarkOutput,
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type RuleDto = z.infer<typeof ruleOutput>;
export const rulePageOutput = z.object({ items: z.array(ruleOutput), total: z.number().int(), hasMore: z.boolean() });

export const DELIVERY_STATUSES = ["pending", "delivering", "delivered", "failed"] as const;

export const listDeliveriesInput = z.object({
  id: z.uuid(),
  status: z.enum(DELIVERY_STATUSES).optional(),
  ...pagingInput,
});

export const deliveryOutput = z.object({
  id: z.string(),
  ruleId: z.string().nullable(),
  targetId: z.string().nullable(),
  targetName: z.string(),
  targetType: z.string(),
  deviceId: z.string().nullable(),
  configSourceId: z.string().nullable().describe("the config source of a config_source_failing notification about one source"),
  event: z.enum(["firing", "resolved", "test"]),
  status: z.enum(DELIVERY_STATUSES),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  nextAttemptAt: z.string().nullable(),
  lastStatusCode: z.number().int().nullable(),
  lastError: z.string().nullable(),
  deliveredAt: z.string().nullable(),
  createdAt: z.string(),
  payload: z.record(z.string(), z.unknown()),
  /** every attempt, first first */
  attemptLog: z.array(z.object({
    attempt: z.number().int(),
    startedAt: z.string(),
    durationMs: z.number().int(),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    success: z.boolean(),
  })),
});
export const deliveryPageOutput = z.object({ items: z.array(deliveryOutput), total: z.number().int(), hasMore: z.boolean() });

export const testOutput = z.object({
  deliveries: z.array(z.object({ id: z.string(), targetId: z.string(), targetName: z.string(), targetType: z.string(), status: z.string() })),
});

export interface RuleRow extends OwnerMark {
  id: string;
  name: string;
  description: string | null;
  condition: unknown;
  labelSelector: unknown;
  severity: string;
  cooldownSeconds: number;
  enabled: boolean;
  lastEvaluatedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  targets: Array<{ targetId: string }>;
}

export function toRuleDto(row: RuleRow, firingCount: number): RuleDto {
  const condition = row.condition as Condition;
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    condition,
    summary: summarize(condition),
    labelSelector: (row.labelSelector ?? {}) as Record<string, string>,
    severity: row.severity as Severity,
    cooldownSeconds: row.cooldownSeconds,
    enabled: row.enabled,
    targetIds: row.targets.map((t) => t.targetId).sort(),
    firingCount,
    lastEvaluatedAt: row.lastEvaluatedAt?.toISOString() ?? null,
    ...ownerMark(row),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
