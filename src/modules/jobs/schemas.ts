// /api/v1/jobs: a device action over many devices, rolled out like a staged deployment. The
// target and the batch shares are the rollout engine's (rollout-engine/target.ts,
// deployments/strategy.ts), so a job is cut and refused exactly as a rollout is.
import { z } from "zod";
import { pagingInput } from "../../lib/paging.js";
import { ACTION_KINDS, DEFAULT_EXPIRY_SECONDS, MAX_EXPIRY_SECONDS } from "../device-actions/kinds.js";
import { actionKind, operatorKind } from "../device-actions/schemas.js";
import { batchThreshold, stagedStrategy } from "../deployments/strategy.js";
import { exactlyOneTarget, targetShape } from "../rollout-engine/target.js";
import { actionWindows, disruptionBudgetSchema } from "../rollout-engine/options.js";

export const JOB_STATES = ["in_progress", "paused", "completed", "cancelled", "expired"] as const;
export type JobState = (typeof JOB_STATES)[number];
/** States in which devices may still run it. */
export const LIVE_JOB_STATES: readonly JobState[] = ["in_progress", "paused"];

/** How the devices are cut and judged: the staged rollout's canary, batches and thresholds. */
export const jobStrategy = stagedStrategy
  .pick({ canary: true, batches: true, successThreshold: true, failureThreshold: true })
  .extend({
    canary: stagedStrategy.shape.canary.default({ count: 1 }),
    // schemas of their own, not the deployment's (batchThreshold says why)
    successThreshold: batchThreshold(90, "percent of a batch that must succeed before the next batch is dispatched"),
    failureThreshold: batchThreshold(20, "percent of a batch that failed or expired which pauses the job"),
  })
  .strict();
export type JobStrategy = z.infer<typeof jobStrategy>;

export const jobTarget = z
  .object({ ...targetShape, labelSelector: targetShape.labelSelector.describe("every device whose labels match all pairs, resolved when the job is created") })
  .strict()
  .superRefine(exactlyOneTarget);

const jobBudget = disruptionBudgetSchema("handed the action and not yet done")
  .describe("disruptive kinds and a configuration's rollout only: paces the job per label value; devices held back wait (waiting_for_budget) until a device of their group is done");

export const createJobInput = z.object({
  kind: operatorKind,
  target: jobTarget,
  deploymentId: z.uuid().optional().describe("restart-app, stop-app, start-app: the deployment whose application it acts on; devices not told to run it are skipped"),
  reason: z.string().trim().min(1).max(500).optional().describe("why: shown with the job and each of its actions, and audited"),
  strategy: jobStrategy.default({ canary: { count: 1 }, batches: [], successThreshold: 90, failureThreshold: 20 }),
  expiresInSeconds: z.number().int().min(60).max(MAX_EXPIRY_SECONDS).default(DEFAULT_EXPIRY_SECONDS)
    .describe("devices run it only within this time from now; a device that returns later does not (its result: expired)"),
  maintenanceWindows: actionWindows.optional(),
  disruptionBudget: jobBudget.optional(),
});
export type CreateJobInput = z.infer<typeof createJobInput>;

export const previewJobInput = createJobInput.pick({ kind: true, target: true, deploymentId: true, strategy: true });

export const listJobsInput = z.object({
  state: z.array(z.enum(JOB_STATES)).max(JOB_STATES.length).optional(),
  kind: z.array(z.enum(ACTION_KINDS)).max(ACTION_KINDS.length).optional(),
  ...pagingInput,
});

export const jobIdInput = z.object({ id: z.uuid() });
export const jobMoveInput = z.object({ id: z.uuid(), reason: z.string().trim().min(1).max(500).optional().describe("recorded as the job's reason") });

/**
 * A job's devices by the state of their action; `queued`: its batch is not dispatched yet;
 * `waiting_for_budget`: dispatched, waiting for a place in the disruption budget (state queued);
 * `waiting_for_window`: admitted, held until its maintenance window opens (state pending).
 */
export const JOB_DEVICE_STATES = ["queued", "waiting_for_budget", "waiting_for_window", "pending", "delivered", "running", "deferred", "succeeded", "failed", "expired", "cancelled", "skipped"] as const;
const countsOutput = z.object(Object.fromEntries(JOB_DEVICE_STATES.map((s) => [s, z.number().int()])) as Record<(typeof JOB_DEVICE_STATES)[number], z.ZodNumber>);
export type JobCounts = z.infer<typeof countsOutput>;

export const jobOutput = z.object({
  id: z.uuid(),
  kind: actionKind,
  deploymentId: z.uuid().nullable(),
  applicationId: z.uuid().nullable(),
  configLayerId: z.uuid().nullable().describe("apply-configuration: the configuration layer it rolls out (docs/configuration.md)"),
  configRevision: z.number().int().nullable().describe("apply-configuration: the layer's revision, released to every device when the job completes"),
  reason: z.string().nullable(),
  target: z.object({ labelSelector: z.record(z.string(), z.string()).optional(), deviceIds: z.array(z.string()).optional() }),
  strategy: jobStrategy,
  maintenanceWindows: actionWindows.nullable(),
  disruptionBudget: jobBudget.nullable(),
  state: z.enum(JOB_STATES),
  stateReason: z.string().nullable().describe("why it is where it is: the rule that paused it, who paused or cancelled it"),
  currentBatch: z.number().int().nullable().describe("the batch in flight (0: the canary)"),
  eligible: z.number().int().describe("devices that take part"),
  skipped: z.number().int().describe("targeted devices that cannot run it (awaiting approval, not running the deployment); each says why"),
  counts: countsOutput.describe("the job's devices by the state of their action"),
  batches: z.array(z.object({
    index: z.number().int(),
    kind: z.enum(["canary", "batch"]),
    size: z.number().int(),
    successTarget: z.number().int().describe("devices of the batch that must succeed before the next is dispatched"),
    counts: countsOutput,
  })),
  expiresAt: z.string(),
  createdById: z.string().nullable(),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});
export type JobDto = z.infer<typeof jobOutput>;

export const previewOutput = z.object({
  matched: z.number().int().describe("devices the target matches"),
  eligible: z.number().int().describe("of them, devices that would run it"),
  skipped: z.number().int(),
  offline: z.number().int().describe("eligible devices offline now (drawn last)"),
  batches: z.array(z.object({ index: z.number().int(), kind: z.enum(["canary", "batch"]), size: z.number().int() })),
});
export type JobPreview = z.infer<typeof previewOutput>;
