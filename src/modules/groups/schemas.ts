// Group statistics: spec op 12 (query by selector) and op 14 (groups by the values of one
// label key), fleet statistics, label keys and values, and the bulk operations.
import { z } from "zod";
import { byStatusOutput } from "../devices/schemas.js";
import { labelKey, labelsSchema, labelSelectorSchema } from "../devices/labels.js";
import { MANIFEST_ARCHITECTURES } from "./architectures.js";

/**
 * Selectors of the read-only statistics are lenient (any string to string, bounded): the
 * spec lists no "invalid input" outcome for op 12, and a key no device can carry simply
 * matches nothing. Writes validate labels strictly (labels.ts).
 */
export const statsSelector = z
  .record(z.string().min(1).max(256), z.string().max(1024))
  .refine((v) => Object.keys(v).length <= 64, "at most 64 selector terms");

export const groupQueryInput = z.object({
  labelSelector: statsSelector.describe("every pair must match (AND); {} matches every device"),
});

export const groupQueryOutput = z.object({
  total: z.number().int(),
  byStatus: byStatusOutput,
  byArchitecture: z
    .record(z.string(), z.number().int())
    .describe("matching devices by architecture as manifests name it (x86_64 counts as amd64, aarch64 as arm64, armv7l as arm); `unknown`: not reported yet"),
  labelSelector: z.record(z.string(), z.string()).optional().describe("the selector applied"),
});

/** A deployment's target and its profile's architectures: how many devices it would run on. */
export const eligibilityInput = z
  .object({
    labelSelector: statsSelector.optional().describe("devices matching every pair ({} matches every device)"),
    deviceIds: z.array(z.string().uuid()).min(1).max(10_000).optional().describe("or these devices"),
    architectures: z
      .array(z.enum(MANIFEST_ARCHITECTURES))
      .max(MANIFEST_ARCHITECTURES.length)
      .optional()
      .describe("the profile's requiredResources.cpu.architectures; absent: it runs on every architecture"),
    systemImage: z.boolean().pipe(z.boolean()).optional()
      .describe("true: the profile installs a system image (a RAUC bundle), which devices whose agent does not report RAUC (fact rauc) cannot take"),
  })
  .superRefine((v, ctx) => {
    if ((v.labelSelector === undefined) === (v.deviceIds === undefined)) ctx.addIssue({ code: "custom", message: "give exactly one of labelSelector or deviceIds", path: ["labelSelector"] });
  });

export const eligibilityOutput = z.object({
  matched: z.number().int().describe("devices the target matches now"),
  eligible: z.number().int().describe("of them, devices the profile can run on: a deployment started now gives them the application"),
  skipped: z.number().int().describe("of them, devices a deployment started now would skip: their architecture is not the profile's, or they have not reported one"),
  offline: z.number().int().describe("of the eligible devices, those offline now (no heartbeat for three intervals): a staged rollout draws its canary from the others"),
  byArchitecture: z.record(z.string(), z.number().int()).describe("matched devices by architecture as manifests name it (armv7 counts as arm, as in op 12); `unknown`: not reported yet"),
  skippedByArchitecture: z.record(z.string(), z.number().int()).describe("skipped devices by architecture, named as in byArchitecture"),
  skippedWithoutRauc: z.number().int().describe("with systemImage: skipped devices of a fitting architecture whose agent does not report RAUC (the rest of `skipped` is by architecture)"),
});

export const groupsByLabelOutput = z.object({
  labelKey: z.string(),
  groups: z.array(z.object({ value: z.string(), count: z.number().int(), byStatus: byStatusOutput })),
  total: z.number().int().describe("devices across all groups"),
});

export const fleetStatsOutput = z.object({
  total: z.number().int(),
  byStatus: byStatusOutput,
  /** devices without any label */
  unlabeled: z.number().int(),
  /** distinct label keys in use */
  labelKeys: z.number().int(),
});

export const labelKeyOutput = z.object({
  key: z.string(),
  deviceCount: z.number().int().describe("devices carrying the key"),
  valueCount: z.number().int().describe("distinct values of the key"),
});

export const labelValuesOutput = z.object({
  key: z.string(),
  items: z.array(z.object({ value: z.string(), count: z.number().int() })),
  total: z.number().int().describe("distinct values"),
  hasMore: z.boolean(),
  deviceCount: z.number().int().describe("devices carrying the key"),
});

const MAX_BULK_IDS = 10_000;

/** A bulk target: a non-empty selector or a list of device ids (exactly one of them). */
const bulkTarget = {
  labelSelector: labelSelectorSchema.optional().describe("devices matching every pair; must not be empty"),
  deviceIds: z.array(z.string().uuid()).min(1).max(MAX_BULK_IDS).optional(),
};

function exactlyOneTarget(v: { labelSelector?: Record<string, string>; deviceIds?: string[] }, ctx: z.RefinementCtx) {
  const hasSelector = v.labelSelector !== undefined;
  const hasIds = v.deviceIds !== undefined;
  if (hasSelector === hasIds) ctx.addIssue({ code: "custom", message: "give exactly one of labelSelector or deviceIds", path: [] });
  if (hasSelector && Object.keys(v.labelSelector!).length === 0) {
    ctx.addIssue({ code: "custom", message: "an empty selector would match every device; name at least one label", path: ["labelSelector"] });
  }
}

export const bulkLabelInput = z
  .object({
    ...bulkTarget,
    set: labelsSchema.default({}).describe("labels to add or overwrite"),
    remove: z.array(labelKey).max(64).default([]).describe("label keys to remove"),
  })
  .superRefine((v, ctx) => {
    exactlyOneTarget(v, ctx);
    if (Object.keys(v.set).length === 0 && v.remove.length === 0) ctx.addIssue({ code: "custom", message: "nothing to do: give set and/or remove", path: [] });
    const both = v.remove.filter((k) => k in v.set);
    if (both.length) ctx.addIssue({ code: "custom", message: `keys both set and removed: ${both.join(", ")}`, path: ["remove"] });
  });

export const bulkLabelOutput = z.object({
  matched: z.number().int().describe("devices the target matched"),
  updated: z.number().int().describe("devices whose labels changed"),
  skipped: z.number().int().describe("devices left unchanged because they would carry more than 64 labels"),
});

export const bulkDeleteInput = z.object(bulkTarget).superRefine(exactlyOneTarget);

export const bulkDeleteOutput = z.object({
  deleted: z.number().int(),
  revokedCertificates: z.number().int(),
});
