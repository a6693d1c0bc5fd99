// The deployment strategy (all-at-once or staged) and how a staged rollout is cut into
// batches when it is initialized (batch-plan.ts). The plan is tested in test/unit/deployments.
import { z } from "zod";

const count = z.object({ count: z.number().int().min(1).max(1_000_000) }).strict();
const percent = z.object({ percent: z.number().min(0.1).max(100) }).strict();
const share = z.union([count, percent]).describe("{ count } devices or { percent } of the devices");

/**
 * A batch threshold in percent, a new schema at every call: trpc-to-openapi turns the number
 * fields of a REST input's objects into coercing ones in place (docs: stack notes, "Coercion
 * mutates shared zod schemas"), so a schema shared with another operation's input (jobs take
 * these thresholds) would make this one take "90" too.
 */
export const batchThreshold = (fallback: number, text: string) => z.number().min(1).max(100).default(fallback).describe(text);

export const stagedStrategy = z
  .object({
    type: z.literal("staged"),
    canary: share.describe("the first batch: a count, or a percent (rounded up) of the eligible devices"),
    batches: z
      .array(share)
      .max(100)
      .default([])
      .describe("the batches after the canary; a percent is a share (rounded up) of the devices left after the canary; the last batch takes whatever remains"),
    successThreshold: batchThreshold(90, "percent of a batch that must be running for it to succeed"),
    failureThreshold: batchThreshold(20, "percent of a batch that failed which pauses the rollout"),
    autoAdvance: z.boolean().pipe(z.boolean()).default(false).describe("start the next batch as soon as one succeeds, without approval"),
    batchTimeoutSeconds: z.number().int().min(60).max(30 * 86_400).default(3600).describe("a batch below its success threshold after this long fails the rollout"),
  })
  .strict();

export const allAtOnceStrategy = z.object({ type: z.literal("all-at-once") }).strict();

export const strategySchema = z.discriminatedUnion("type", [allAtOnceStrategy, stagedStrategy]);
export type Strategy = z.infer<typeof strategySchema>;
export type StagedStrategy = z.infer<typeof stagedStrategy>;

// The plan itself is pure and shared with the console's preview.
export { planBatches, type PlannedBatch } from "./batch-plan.js";
