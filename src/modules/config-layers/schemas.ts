// /api/v1/config-layers: inputs and answers, with the limits every layer keeps
// (docs/configuration.md, "Limits"). A bad field is a 400 naming it (and the file's path).
import { z } from "zod";
import { labelSelectorSchema } from "../devices/labels.js";
import { VARIABLE_NAME_PATTERN } from "./template.js";
import { createJobInput } from "../jobs/schemas.js";
import { ownerMarkOutput } from "../../lib/owner-mark.js";

export const LIMITS = {
  /** one file's decoded content */
  fileBytes: 128 * 1024,
  /** all files of one layer, decoded (base64 of this still fits a 1 MiB request) */
  layerFileBytes: 512 * 1024,
  files: 100,
  variables: 500,
  secrets: 100,
  valueChars: 16 * 1024,
} as const;

export const LAYER_KINDS = ["organization", "selector", "device"] as const;

const layerName = z.string().regex(/^[a-z0-9][a-z0-9._-]{0,99}$/, "1-100 characters: lower-case letters, digits, '.', '_', '-', starting with a letter or digit");
const variableName = z.string().regex(VARIABLE_NAME_PATTERN, "variable names are 1-128 characters: letters, digits and '_', not starting with a digit");
// eslint-disable-next-line no-control-regex
const valueText = z.string().max(LIMITS.valueChars, `at most ${LIMITS.valueChars} characters`).regex(/^[^\u0000]*$/, "no NUL characters");

/** Absolute and normal: no empty, `.` or `..` segment, no trailing slash, no control characters. */
export function pathProblem(path: string): string | null {
  if (!path.startsWith("/")) return "must be absolute (start with /)";
  if (path.length > 1024) return "at most 1024 characters";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(path)) return "must not contain control characters";
  const segments = path.slice(1).split("/");
  if (segments.some((s) => s === "" || s === "." || s === "..")) return "must be a normal file path (no empty, '.' or '..' segment, no trailing '/')";
  return null;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export const fileInput = z.object({
  path: z.string().describe("absolute path on the device; the agent writes only under its allowed roots (default /etc/fleet/ and its state directory)"),
  content: z.string().optional().describe("text content (UTF-8); templated unless template is false"),
  contentBase64: z.string().optional().describe("binary content, base64; never templated"),
  mode: z.string().regex(/^0?[0-7]{3}$/, "an octal file mode such as 0644").default("0644"),
  owner: z.string().regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,31})?$/, "user or user:group").optional(),
  template: z.boolean().default(true).describe("false: the text is written as it is ({{ }} kept)"),
});
export type FileInput = z.infer<typeof fileInput>;

/** Checks paths, content and sizes across the list, naming each file by its path. */
const filesInput = z.array(fileInput).max(LIMITS.files).superRefine((files, ctx) => {
  const seen = new Set<string>();
  let total = 0;
  files.forEach((file, i) => {
    const problem = pathProblem(file.path);
    if (problem) ctx.addIssue({ code: "custom", path: [i, "path"], message: `"${file.path.slice(0, 200)}" ${problem}` });
    if (seen.has(file.path)) ctx.addIssue({ code: "custom", path: [i, "path"], message: `"${file.path}" is given twice` });
    seen.add(file.path);
    if ((file.content === undefined) === (file.contentBase64 === undefined)) {
      ctx.addIssue({ code: "custom", path: [i], message: `${file.path}: give either content (text) or contentBase64 (binary)` });
      return;
    }
    if (file.contentBase64 !== undefined && !BASE64.test(file.contentBase64)) {
      ctx.addIssue({ code: "custom", path: [i, "contentBase64"], message: `${file.path}: not base64` });
      return;
    }
    const size = file.content !== undefined ? Buffer.byteLength(file.content, "utf8") : Buffer.from(file.contentBase64!, "base64").length;
    total += size;
    if (size > LIMITS.fileBytes) {
      ctx.addIssue({ code: "custom", path: [i, file.content !== undefined ? "content" : "contentBase64"], message: `${file.path}: ${size} bytes, over the limit of ${LIMITS.fileBytes} bytes per file` });
    }
  });
  if (total > LIMITS.layerFileBytes) ctx.addIssue({ code: "custom", path: [], message: `${total} bytes of files, over the limit of ${LIMITS.layerFileBytes} bytes per layer` });
});

const countAtMost = (max: number, what: string) => (v: Record<string, unknown>) => Object.keys(v).length <= max || `at most ${max} ${what}`;
const variablesInput = z.record(variableName, valueText).superRefine((v, ctx) => {
  const problem = countAtMost(LIMITS.variables, "variables")(v);
  if (problem !== true) ctx.addIssue({ code: "custom", message: problem });
});

const activationInput = z.object({
  command: z.array(z.string().min(1).max(1000)).min(1).max(32).describe("argv, run without a shell, e.g. [\"systemctl\", \"reload\", \"mosquitto\"]"),
}).describe("run by the agent after this layer's files changed on the device");

const content = {
  variables: variablesInput.optional().describe("NAME -> value; values may hold {{ device.name }}, {{ device.labels.KEY }}, {{ device.facts.NAME }}, {{ vars.NAME }}"),
  files: filesInput.optional(),
  activation: activationInput.nullable().optional(),
  comment: z.string().trim().max(500).optional().describe("why: kept with the revision"),
};

export const createLayerInput = z.object({
  name: layerName,
  kind: z.enum(LAYER_KINDS),
  selector: labelSelectorSchema.optional().describe("kind selector: the labels a device must carry (AND); {} matches every device"),
  order: z.number().int().min(-1_000_000).max(1_000_000).optional().describe("kind selector: precedence among selector layers, the higher wins; two that can match one device may not share it"),
  deviceId: z.string().uuid().optional().describe("kind device: the device it overrides"),
  description: z.string().trim().max(500).optional(),
  secrets: z.record(variableName, valueText).refine((v) => Object.keys(v).length <= LIMITS.secrets, `at most ${LIMITS.secrets} secrets`).optional().describe("NAME -> value, sealed at rest, never answered (only their names); delivered to the devices the layer applies to as variables"),
  ...content,
});
export type CreateLayerInput = z.infer<typeof createLayerInput>;

/** A revision's rollout: the jobs' own options (not copies), docs/configuration.md "Rollout". */
export const rolloutInput = createJobInput
  .pick({ strategy: true, maintenanceWindows: true, disruptionBudget: true, expiresInSeconds: true, reason: true })
  .strict()
  .describe("roll the new revision out as an apply-configuration job (canary, batches, thresholds, windows, budget, pause, cancel) instead of releasing it to every device at once");
export type RolloutInput = z.infer<typeof rolloutInput>;

export const rolloutOutput = z.object({
  jobId: z.uuid().describe("the apply-configuration job: GET /jobs/{id}, and its pause, resume, cancel"),
  revision: z.number().int().describe("the revision it rolls out"),
  state: z.enum(["in_progress", "paused"]),
});
export type RolloutDto = z.infer<typeof rolloutOutput>;

export const updateLayerInput = z.object({
  id: z.string().uuid(),
  name: layerName.optional(),
  selector: labelSelectorSchema.optional(),
  order: z.number().int().min(-1_000_000).max(1_000_000).optional(),
  description: z.string().trim().max(500).nullable().optional(),
  secrets: z.record(variableName, valueText.nullable()).optional().describe("names given are set (null: removed); names not given are kept"),
  ...content,
  rollout: rolloutInput.optional(),
});
export type UpdateLayerInput = z.infer<typeof updateLayerInput>;

const provenance = {
  layerId: z.string().uuid(),
  layer: z.string(),
  revision: z.number().int(),
};
const provenanceOutput = z.object(provenance);

const fileOutput = z.object({
  path: z.string(),
  mode: z.string(),
  owner: z.string().nullable(),
  template: z.boolean(),
  binary: z.boolean(),
  sizeBytes: z.number().int(),
  content: z.string().nullable().describe("text files"),
  contentBase64: z.string().nullable().describe("binary files"),
});

export const layerSummaryOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  kind: z.enum(LAYER_KINDS),
  selector: z.record(z.string(), z.string()).nullable(),
  order: z.number().int().nullable(),
  deviceId: z.string().uuid().nullable(),
  deviceName: z.string().nullable(),
  description: z.string().nullable(),
  revision: z.number().int().describe("the newest revision (its content is the layer's content)"),
  releasedRevision: z.number().int().describe("the revision every device the layer applies to gets outside a rollout; behind `revision` while a rollout is live"),
  rollout: rolloutOutput.nullable().describe("the layer's live rollout, if any"),
  variableCount: z.number().int(),
  fileCount: z.number().int(),
  secretNames: z.array(z.string()).describe("names only: a secret's value is never answered"),
  createdAt: z.string(),
  updatedAt: z.string(),
  ...ownerMarkOutput,
});

export const revisionOutput = z.object({
  layerId: z.string().uuid(),
  revision: z.number().int(),
  variables: z.record(z.string(), z.string()),
  files: z.array(fileOutput),
  secretNames: z.array(z.string()),
  activation: z.object({ command: z.array(z.string()) }).nullable(),
  comment: z.string().nullable(),
  restoredFrom: z.number().int().nullable().describe("a rollback: the revision whose content this one restores"),
  createdById: z.string().nullable(),
  createdAt: z.string(),
});
export type RevisionDto = z.infer<typeof revisionOutput>;

export const layerOutput = layerSummaryOutput.extend({ content: revisionOutput.describe("the newest revision") });
export type LayerSummaryDto = z.infer<typeof layerSummaryOutput>;
export type LayerDto = z.infer<typeof layerOutput>;

export const listLayersInput = z.object({
  kind: z.array(z.enum(LAYER_KINDS)).max(3).optional(),
  deviceId: z.string().uuid().optional().describe("only the override layer of this device"),
});

export const rollbackInput = z.object({
  id: z.string().uuid(),
  revision: z.number().int().min(1).describe("the earlier revision whose content becomes the layer's again (as a new revision)"),
  comment: z.string().trim().max(500).optional(),
  rollout: rolloutInput.optional(),
});

const reportedOutput = z.object({
  revision: z.string().nullable(),
  state: z.string().nullable().describe("applied | failed (from the device); unrenderable: the service could not render it"),
  message: z.string().nullable(),
  appliedRevision: z.string().nullable(),
  drift: z.array(z.object({ path: z.string(), sha256: z.string().nullable() })),
  reportedAt: z.string().nullable(),
}).nullable();

export const effectiveOutput = z.object({
  deviceId: z.string().uuid(),
  deviceName: z.string(),
  revision: z.string().describe("sha256 of the effective configuration: what the device reports applied"),
  layers: z.array(provenanceOutput.extend({ kind: z.enum(LAYER_KINDS), order: z.number().int().nullable() })).describe("the layers that apply, lowest precedence first"),
  variables: z.array(provenanceOutput.extend({
    name: z.string(),
    value: z.string().nullable().describe("null for a secret, or a value that takes one in"),
    secret: z.boolean(),
    overrode: z.array(provenanceOutput).describe("the layers below that set it too, nearest first"),
  })),
  files: z.array(provenanceOutput.extend({
    path: z.string(), mode: z.string(), owner: z.string().nullable(), binary: z.boolean(), secret: z.boolean(), sizeBytes: z.number().int(),
    sha256: z.string().nullable().describe("null when the content takes in a secret"),
    content: z.string().nullable().describe("rendered text; null for binary files and those taking in a secret"),
    overrode: z.array(provenanceOutput),
  })),
  activations: z.array(z.object({ layer: z.string(), command: z.array(z.string()), paths: z.array(z.string()) })),
  reported: reportedOutput.describe("what the device last reported; null: never"),
  inSync: z.boolean().describe("the device reported this revision applied"),
});
export type EffectiveDto = z.infer<typeof effectiveOutput>;

export const previewOutputItem = z.object({
  deviceId: z.string().uuid(),
  deviceName: z.string(),
  revision: z.string().nullable(),
  error: z.string().nullable().describe("why the configuration cannot be computed for it (two layers at one order, a template naming what it lacks)"),
  appliedRevision: z.string().nullable(),
});

/** heartbeatOutput.configuration (the wire contract with the agent, docs/configuration.md). */
export const configurationAnswer = z.object({
  revision: z.string(),
  full: z.boolean(),
  restore: z.boolean().optional().describe("rewrite files that drifted"),
  files: z.array(z.object({
    path: z.string(), contentBase64: z.string(), mode: z.string(), owner: z.string().optional(), sha256: z.string(), layer: z.string(),
  })).optional(),
  vars: z.record(z.string(), z.string()).optional(),
  activations: z.array(z.object({ layer: z.string(), command: z.array(z.string()), paths: z.array(z.string()) })).optional(),
});
export type ConfigurationAnswer = z.infer<typeof configurationAnswer>;

/** heartbeatInput.configuration: what the device reports. */
export const configurationReport = z.object({
  revision: z.string().regex(/^[0-9a-f]{64}$/, "a sha256 hex"),
  state: z.enum(["applied", "failed"]),
  message: z.string().max(2000).optional(),
  appliedRevision: z.string().regex(/^[0-9a-f]{64}$/, "a sha256 hex").optional(),
  drift: z.array(z.object({
    path: z.string().max(1024),
    sha256: z.string().regex(/^[0-9a-f]{64}$/).optional(),
    // what is on disk, up to one layer file's limit: what "accept" writes into the device's override layer
    contentBase64: z.string().max(Math.ceil(LIMITS.fileBytes / 3) * 4).regex(BASE64, "base64").optional(),
  })).max(100).optional(),
});
export type ConfigurationReport = z.infer<typeof configurationReport>;
