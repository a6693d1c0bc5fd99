// Deployment, rollout and removal DTOs (docs/deployments.md).
import { z } from "zod";
import { pagingInput, pageOutput } from "../../lib/paging.js";
import { ownerMarkOutput } from "../../lib/owner-mark.js";
import { exactlyOneTarget, targetInput, targetShape } from "../rollout-engine/target.js";
import { deviceStatus } from "../devices/schemas.js";
import { ROLLOUT_STATES } from "./rollout-machine.js";
import { DEPLOYMENT_STATES } from "./deployment-state.js";
import { strategySchema } from "./strategy.js";
import { ON_LEAVE, optionFields, optionUpdateFields, refineOptions, retryOptions } from "./options.js";
import { disruptionBudget, maintenanceWindows } from "../rollout-engine/options.js";

/** draft: not started (editable); running: on its devices; stopping / deleting: waiting for the devices to confirm removal; stopped. */
export const DEPLOYMENT_STATUSES = ["draft", "running", "stopping", "stopped", "deleting"] as const;
export type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];

/** Per-device states: the agent's (pending ... removed) and the service's own (skipped, cancelled, superseded). */
export const DEVICE_DEPLOYMENT_STATES = [
  "pending", "downloading", "installing", "running", "failed", "removing", "removed", "skipped", "cancelled", "superseded",
] as const;
export type DeviceDeploymentState = (typeof DEVICE_DEPLOYMENT_STATES)[number];

const idInput = z.object({ id: z.uuid() });
export { idInput };

// The target (a label selector or a device list) is the rollout engine's, shared with jobs.
export { targetInput };

export const groupRollbackInput = z
  .object({
    ...targetShape,
    applicationId: z.uuid().describe("the application to roll back"),
    dryRun: z.boolean().pipe(z.boolean()).default(false).describe("answer what would happen, change nothing"),
  })
  .superRefine(exactlyOneTarget);
export type DeploymentTarget = z.infer<typeof targetInput>;

const parameterValues = z
  .record(z.string().min(1).max(200).regex(/^[A-Za-z_][A-Za-z0-9_.-]*$/, "parameter names start with a letter or _"), z.union([z.string().max(64 * 1024), z.number(), z.boolean(), z.null()]))
  .refine((v) => Object.keys(v).length <= 200, "at most 200 parameters")
  .describe("values for the manifest's parameters, checked against their declarations; secret ones are stored encrypted");

const name = z.string().trim().min(1).max(200);
const description = z.string().max(1000);

export const createDeploymentInput = z.object({
  name,
  description: description.optional(),
  applicationId: z.uuid(),
  version: z.string().min(1).max(200).describe("a version of the application (its SemVer text)"),
  profileId: z.string().min(1).max(200).describe("one of the version's admitted deployment profiles"),
  parameters: parameterValues.default({}),
  target: targetInput,
  strategy: strategySchema.default({ type: "all-at-once" }),
  ...optionFields,
}).superRefine(refineOptions);
export type CreateDeploymentInput = z.infer<typeof createDeploymentInput>;

export const updateDeploymentInput = z.object({
  id: z.uuid(),
  name: name.optional(),
  description: description.nullable().optional(),
  version: z.string().min(1).max(200).optional(),
  profileId: z.string().min(1).max(200).optional(),
  parameters: parameterValues.optional().describe("replaces the parameter values"),
  target: targetInput.optional(),
  strategy: strategySchema.optional(),
  ...optionUpdateFields,
}).superRefine(refineOptions);
export type UpdateDeploymentInput = z.infer<typeof updateDeploymentInput>;

export const secretParametersInput = z.object({
  id: z.uuid(),
  parameters: parameterValues.refine((v) => Object.keys(v).length > 0, "name at least one secret parameter").describe("secret parameter values by name, merged into the stored ones"),
});

export const listDeploymentsInput = z.object({
  status: z.enum(DEPLOYMENT_STATUSES).optional(),
  rolloutState: z.enum(ROLLOUT_STATES).optional(),
  state: z.enum(DEPLOYMENT_STATES).optional().describe("the deployment's one state (computed from status and rolloutState: docs/deployments.md)"),
  inProgress: z.stringbool().optional().describe("true: only deployments whose rollout has not ended (state rolling_out, awaiting_approval or paused); false: only the others"),
  applicationId: z.uuid().optional(),
  search: z.string().max(200).optional().describe("part of the name (case-insensitive)"),
  scheduled: z.stringbool().optional().describe("true: only drafts waiting for their startAt; false: only the others"),
  ...pagingInput,
});

const stateCounts = z.object(Object.fromEntries(DEVICE_DEPLOYMENT_STATES.map((s) => [s, z.number().int()])) as Record<DeviceDeploymentState, z.ZodNumber>);
export type StateCounts = z.infer<typeof stateCounts>;
const progressCounts = stateCounts.extend({
  waiting_to_retry: z.number().int().describe("failed, and given the install again later (retry); not counted in failed"),
  waiting_for_window: z.number().int().describe("told to download only until their maintenance window opens; not counted in pending or downloading"),
  waiting_for_budget: z.number().int().describe("held back by the disruption budget; not counted in pending"),
  joined: z.number().int().describe("continuous: devices that started matching the selector after the start (in any state)"),
  left: z.number().int().describe("continuous: devices that stopped matching it (in any state)"),
  total: z.number().int(),
});
export type ProgressCounts = z.infer<typeof progressCounts>;

export const deploymentOutput = z.object({
  id: z.string(),
  organizationId: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  applicationId: z.string(),
  applicationName: z.string(),
  applicationVersionId: z.string(),
  version: z.string(),
  profileId: z.string(),
  parameters: z.record(z.string(), z.unknown()).describe("secret values show as ********"),
  secretParameterNames: z.array(z.string()),
  target: z.object({ labelSelector: z.record(z.string(), z.string()).optional(), deviceIds: z.array(z.string()).optional() }),
  strategy: strategySchema,
  retry: retryOptions.nullable(),
  startAt: z.string().nullable().describe("scheduled start (the deployment is a draft until then)"),
  maintenanceWindows: maintenanceWindows.nullable(),
  disruptionBudget: disruptionBudget.nullable(),
  continuous: z.boolean(),
  onLeave: z.enum(ON_LEAVE),
  status: z.enum(DEPLOYMENT_STATUSES),
  rolloutState: z.enum(ROLLOUT_STATES),
  state: z.enum(DEPLOYMENT_STATES).describe(
    "the deployment's one state, computed from status, rolloutState and startAt (docs/deployments.md, \"One state\"): draft, scheduled, rolling_out, " +
      "awaiting_approval, paused, completed, aborted, failed (a batch timed out), stopping, stopped, deleting",
  ),
  rolloutReason: z.string().nullable(),
  progress: progressCounts.describe("devices of the deployment by state"),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  removalRequestedAt: z.string().nullable(),
  createdById: z.string().nullable(),
  upgradedToId: z.string().nullable().describe("a predecessor: the deployment upgraded in place whose old revision this row keeps on the devices its update rollout has not reached yet"),
  ...ownerMarkOutput,
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type DeploymentDto = z.infer<typeof deploymentOutput>;
export const deploymentPageOutput = pageOutput(deploymentOutput);

export const statsOutput = z.object({
  total: z.number().int(),
  byStatus: z.object(Object.fromEntries(DEPLOYMENT_STATUSES.map((s) => [s, z.number().int()])) as Record<DeploymentStatus, z.ZodNumber>),
  byRolloutState: z.object(Object.fromEntries(ROLLOUT_STATES.map((s) => [s, z.number().int()])) as Record<(typeof ROLLOUT_STATES)[number], z.ZodNumber>),
  devices: stateCounts.describe("device entries of every deployment of the organization by state"),
});

export const stopInput = z.object({
  id: z.uuid(),
  force: z.boolean().pipe(z.boolean()).default(false).describe("finish the removal now without waiting for the devices' confirmation"),
});

export const deleteInput = z.object({
  id: z.uuid(),
  force: z.stringbool().default(false).describe("delete now without waiting for the devices to confirm the removal"),
});

export const deleteOutput = z.object({
  id: z.string(),
  deleted: z.boolean().describe("true: gone; false: waiting for the devices to confirm the removal (status deleting)"),
  status: z.enum(DEPLOYMENT_STATUSES).nullable(),
});

export const removalDevice = z.object({
  deviceId: z.string(),
  deviceName: z.string(),
  state: z.enum(DEVICE_DEPLOYMENT_STATES),
  confirmed: z.boolean(),
  message: z.string().nullable(),
  stateChangedAt: z.string(),
});

export const removalStatusInput = z.object({ id: z.uuid(), ...pagingInput });

export const removalStatusOutput = z.object({
  deploymentId: z.string(),
  status: z.enum(DEPLOYMENT_STATUSES),
  removalRequestedAt: z.string().nullable(),
  total: z.number().int().describe("devices asked to remove the application"),
  confirmed: z.number().int().describe("devices that reported removed"),
  awaiting: z.number().int().describe("devices that have not confirmed yet"),
  complete: z.boolean(),
  devices: z.array(removalDevice).describe("the devices asked to remove, unconfirmed first (paged by limit/offset)"),
  hasMore: z.boolean(),
});

export const awaitingRemovalItem = z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(DEPLOYMENT_STATUSES),
  removalRequestedAt: z.string().nullable(),
  total: z.number().int(),
  confirmed: z.number().int(),
  awaiting: z.number().int(),
});
export const awaitingRemovalOutput = pageOutput(awaitingRemovalItem);
export const awaitingRemovalInput = z.object({ ...pagingInput });

const batchCounts = z.object({
  pending: z.number().int(),
  downloading: z.number().int(),
  installing: z.number().int(),
  running: z.number().int(),
  failed: z.number().int().describe("devices whose last attempt failed"),
  waitingToRetry: z.number().int().describe("devices that failed and are given the install again later"),
  waitingForWindow: z.number().int().describe("devices told to download only until their maintenance window opens"),
  waitingForBudget: z.number().int().describe("devices the disruption budget holds back"),
  offline: z.number().int().describe("devices the batch still waits for (not dispatched yet, pending, downloading, installing, waiting for a window or a place) whose device is offline now; counted here, not under their state"),
  cancelled: z.number().int().describe("devices that never started it: the rollout was aborted or failed, or the deployment stopped"),
  superseded: z.number().int().describe("devices another deployment of the application took over"),
  removed: z.number().int().describe("devices removing or that removed it (stop, delete)"),
  skipped: z.number().int().describe("devices that are not eligible (architecture); such devices are in no batch, so this is 0 for a batch"),
});

export const BATCH_KINDS = ["canary", "batch", "late_joiners"] as const;
export const BATCH_STATES = ["planned", "in_progress", "succeeded", "promoted", "failed", "cancelled"] as const;

/** rollout-machine.ts BatchOutcome, with its words. */
const batchOutcome = z.object({
  kind: z.enum(["succeeded", "promoted", "failed", "cancelled"]).describe("succeeded: it reached its success target; promoted: an operator accepted it below it; failed: it timed out below it; cancelled: the rollout was aborted"),
  move: z.enum(["promote", "approve", "abort"]).nullable().describe("the operator's move that ended it; null when the service judged it"),
  by: z.string().nullable().describe("who made that move (e-mail address, and the API key when one was used)"),
  at: z.string(),
  running: z.number().int().describe("devices running at that moment"),
  failed: z.number().int().describe("devices failed at that moment"),
  size: z.number().int(),
  successTarget: z.number().int(),
  summary: z.string().describe("the outcome in words, the console's too, with no count of devices (they go on reporting; running and failed keep those of that moment), e.g. 'promoted below its success target (3 running needed) by alice@example.com'"),
});

export const rolloutOutput = z.object({
  deploymentId: z.string(),
  state: z.enum(ROLLOUT_STATES),
  currentBatch: z.number().int().nullable(),
  batches: z.array(
    z.object({
      index: z.number().int(),
      kind: z.enum(BATCH_KINDS).describe("canary, a planned batch, or (continuous) the devices that joined after the rollout completed"),
      size: z.number().int(),
      state: z.enum(BATCH_STATES).describe("promoted: accepted by an operator below its success target (outcome says who, when and the counts)"),
      outcome: batchOutcome.nullable().describe("how the batch ended, recorded when it did; null while planned or in flight"),
      counts: batchCounts,
      successTarget: z.number().int().describe("devices that must be running for the batch to succeed"),
      startedAt: z.string().nullable(),
      deadlineAt: z.string().nullable(),
      completedAt: z.string().nullable(),
    }),
  ),
  successThreshold: z.number(),
  failureThreshold: z.number(),
  autoAdvance: z.boolean(),
  batchTimeoutSeconds: z.number().int(),
  skippedDevices: z.number().int().describe("targeted devices that are not eligible (architecture), in no batch"),
  membership: z.object({
    joined: z.number().int().describe("continuous: devices that started matching the selector after the start"),
    left: z.number().int().describe("continuous: devices that stopped matching it"),
  }),
  windows: z.object({
    waiting: z.number().int().describe("devices waiting for their maintenance window"),
    nextWindowAt: z.string().nullable().describe("when the first of them may install"),
  }),
  retries: z.object({
    waiting: z.number().int().describe("devices waiting to retry"),
    nextRetryAt: z.string().nullable().describe("when the next of them is given the install again"),
  }),
  startAt: z.string().nullable().describe("scheduled start: the rollout job starts the deployment then"),
  startedAt: z.string().nullable(),
  completedAt: z.string().nullable(),
  reason: z.string().nullable(),
});
export type RolloutDto = z.infer<typeof rolloutOutput>;

export const emptyStateCounts = (): StateCounts => Object.fromEntries(DEVICE_DEPLOYMENT_STATES.map((s) => [s, 0])) as StateCounts;
export const emptyProgress = (): ProgressCounts => ({ ...emptyStateCounts(), waiting_to_retry: 0, waiting_for_window: 0, waiting_for_budget: 0, joined: 0, left: 0, total: 0 });

export const deploymentDevicesInput = z.object({
  id: z.uuid(),
  state: z.enum(DEVICE_DEPLOYMENT_STATES).optional(),
  batch: z.coerce.number().int().min(0).max(1000).optional().describe("batch index of a staged rollout (0 = canary)"),
  ...pagingInput,
});

/** One device's entry in one deployment (DeploymentDevice), as every list of entries shows it. */
const deploymentEntryFields = {
  state: z.enum(DEVICE_DEPLOYMENT_STATES),
  desiredAction: z.enum(["install", "remove"]).nullable().describe("what the device's heartbeat is told; null: nothing (not dispatched, or no longer)"),
  batchIndex: z.number().int().nullable(),
  reason: z.string().nullable().describe("the service's note on the entry: why it skipped, cancelled or superseded it, or who gave it its current attempt (a retry)"),
  message: z.string().nullable().describe("the agent's last message"),
  dispatchedAt: z.string().nullable(),
  stateChangedAt: z.string(),
  attempt: z.number().int().describe("the install attempt the device is on (1 = the first)"),
  lateJoiner: z.boolean().describe("continuous: it started matching the selector after the deployment started"),
  leftAt: z.string().nullable().describe("continuous: when it stopped matching the selector"),
  retryAt: z.string().nullable().describe("failed, and given the install again at this time"),
};

export const deploymentDeviceOutput = z.object({
  deviceId: z.string(),
  deviceName: z.string(),
  deviceStatus: deviceStatus.describe("the device's own status now (offline: no heartbeat for three intervals)"),
  ...deploymentEntryFields,
});
export const deploymentDevicesOutput = pageOutput(deploymentDeviceOutput);

export const deviceDeploymentsInput = z.object({
  id: z.uuid(),
  desired: z.stringbool().optional().describe("true: only the entries the device's heartbeat carries now (install or remove); false: only the others"),
  ...pagingInput,
});

export const deviceDeploymentOutput = z.object({
  deploymentId: z.string(),
  deploymentName: z.string(),
  deploymentStatus: z.enum(DEPLOYMENT_STATUSES),
  rolloutState: z.enum(ROLLOUT_STATES),
  deploymentState: z.enum(DEPLOYMENT_STATES).describe("the deployment's one state (as its own `state`: docs/deployments.md, \"One state\")"),
  applicationId: z.string(),
  applicationName: z.string(),
  version: z.string(),
  profileId: z.string(),
  ...deploymentEntryFields,
});
export const deviceDeploymentsOutput = pageOutput(deviceDeploymentOutput);
