// The target of a rollout, as an operator gives it: a label selector or a device list of the
// organization. Deployments and jobs (src/modules/jobs/) take the same input with the same
// refusals; groups/service.ts targetCondition turns it into SQL.
import { z } from "zod";
import { labelSelectorSchema } from "../devices/labels.js";

export const MAX_TARGET_IDS = 10_000;

export const targetShape = {
  labelSelector: labelSelectorSchema.optional().describe("every device whose labels match all pairs (resolved when the deployment starts or its rollout is initialized)"),
  deviceIds: z.array(z.uuid()).min(1).max(MAX_TARGET_IDS).optional().describe("an explicit device list of the organization"),
};

export function exactlyOneTarget(v: { labelSelector?: Record<string, string>; deviceIds?: string[] }, ctx: z.RefinementCtx) {
  if ((v.labelSelector === undefined) === (v.deviceIds === undefined)) ctx.addIssue({ code: "custom", message: "give exactly one of labelSelector or deviceIds", path: [] });
  if (v.labelSelector && Object.keys(v.labelSelector).length === 0) {
    ctx.addIssue({ code: "custom", message: "an empty selector would match every device; name at least one label", path: ["labelSelector"] });
  }
}

export const targetInput = z.object(targetShape).strict().superRefine(exactlyOneTarget);
export type RolloutTarget = z.infer<typeof targetInput>;
