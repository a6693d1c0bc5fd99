// The rollout options a deployment may carry beside its strategy (docs/deployments.md,
// "Rollout options"): automatic retries, a scheduled start, maintenance windows, a disruption
// budget and continuous targets. Shapes and validation only; the rules that apply them are
// pure functions in retry.ts (and the rollout engine's window / budget modules, shared with jobs:
// src/modules/rollout-engine/), applied by the service.
import { z } from "zod";
import { disruptionBudget, maintenanceWindows } from "../rollout-engine/options.js";

export const retryOptions = z
  .object({
    maxAttempts: z.number().int().min(1).max(20).describe("attempts in all, the first one included (1: never retry)"),
    initialDelaySeconds: z.number().int().min(1).max(86_400).describe("delay before the second attempt; doubles with every further attempt"),
    maxDelaySeconds: z.number().int().min(1).max(7 * 86_400).describe("the delay never grows beyond this"),
  })
  .strict()
  .superRefine((v, ctx) => {
    if (v.initialDelaySeconds > v.maxDelaySeconds) {
      ctx.addIssue({ code: "custom", path: ["initialDelaySeconds"], message: `the first retry delay (${v.initialDelaySeconds}s) is above maxDelaySeconds (${v.maxDelaySeconds}s)` });
    }
  })
  .meta({ example: { maxAttempts: 4, initialDelaySeconds: 60, maxDelaySeconds: 900 } })
  .describe("a device that reports failed is given the install again after an exponentially growing delay (with jitter), up to maxAttempts");
export type RetryOptions = z.infer<typeof retryOptions>;

export const ON_LEAVE = ["remove", "keep"] as const;

const startAt = z.iso
  .datetime({ offset: true })
  .describe("the deployment starts itself at this time (ISO 8601); editable or cancellable (null) until then")
  .meta({ example: "2026-12-01T02:00:00Z" });

/** The options' fields of a create input; `startAt` in the past is refused by refineOptions. */
export const optionFields = {
  retry: retryOptions.optional(),
  startAt: startAt.optional(),
  maintenanceWindows: maintenanceWindows.optional(),
  disruptionBudget: disruptionBudget.optional(),
  continuous: z.boolean().pipe(z.boolean()).optional().describe("a standing intent: devices that start matching the label selector later get the application too"),
  onLeave: z.enum(ON_LEAVE).optional().describe("continuous: a device that stops matching removes the application (remove, the default) or keeps it"),
};

/** The same, nullable where a PATCH may clear them. */
export const optionUpdateFields = {
  retry: retryOptions.nullable().optional(),
  startAt: startAt.nullable().optional(),
  maintenanceWindows: maintenanceWindows.nullable().optional(),
  disruptionBudget: disruptionBudget.nullable().optional(),
  continuous: optionFields.continuous,
  onLeave: optionFields.onLeave,
};

interface OptionsInput {
  startAt?: string | null;
  continuous?: boolean;
  target?: { deviceIds?: string[] };
}

/** Cross-field rules: a scheduled start lies ahead, and only a label selector can be continuous. */
export function refineOptions(v: OptionsInput, ctx: z.RefinementCtx) {
  if (v.startAt && Date.parse(v.startAt) <= Date.now()) ctx.addIssue({ code: "custom", path: ["startAt"], message: "startAt lies in the past" });
  if (v.continuous && v.target?.deviceIds) ctx.addIssue({ code: "custom", path: ["continuous"], message: "only a labelSelector target can be continuous (a device list never changes)" });
}
