// The strategy step of the deployment form: what a person types, the strategy the API takes,
// and the batch sizes it will produce, computed by the service's own planner (batch-plan.ts,
// imported from the service: the preview cannot drift from the plan; strategy-form.test.ts
// checks it against the service's schema and plan for random strategies).
import { planBatches, type PlannedBatch, type Share } from "../../../src/modules/deployments/batch-plan";

export type ShareUnit = "count" | "percent";

export interface ShareInput {
  unit: ShareUnit;
  /** the number as typed */
  amount: string;
}

export interface StrategyInput {
  type: "all-at-once" | "staged";
  canary: ShareInput;
  batches: ShareInput[];
  successThreshold: string;
  failureThreshold: string;
  batchTimeoutMinutes: string;
  autoAdvance: boolean;
}

/** The service's defaults (strategy.ts): 90 % success, 20 % failure, one hour per batch. */
export const DEFAULT_STRATEGY: StrategyInput = {
  type: "all-at-once",
  canary: { unit: "count", amount: "1" },
  batches: [{ unit: "percent", amount: "50" }],
  successThreshold: "90",
  failureThreshold: "20",
  batchTimeoutMinutes: "60",
  autoAdvance: false,
};

export type StrategyValue =
  | { type: "all-at-once" }
  | { type: "staged"; canary: Share; batches: Share[]; successThreshold: number; failureThreshold: number; batchTimeoutSeconds: number; autoAdvance: boolean };

const num = (text: string) => (text.trim() === "" ? NaN : Number(text));
const share = (s: ShareInput): Share => (s.unit === "count" ? { count: num(s.amount) } : { percent: num(s.amount) });

/** The strategy the API gets (numbers that do not parse stay NaN and are named by strategyErrors). */
export function strategyValue(input: StrategyInput): StrategyValue {
  if (input.type === "all-at-once") return { type: "all-at-once" };
  return {
    type: "staged",
    canary: share(input.canary),
    batches: input.batches.map(share),
    successThreshold: num(input.successThreshold),
    failureThreshold: num(input.failureThreshold),
    batchTimeoutSeconds: Math.round(num(input.batchTimeoutMinutes) * 60),
    autoAdvance: input.autoAdvance,
  };
}

/** A stored strategy as the form shows it. */
export function strategyInput(value: StrategyValue): StrategyInput {
  if (value.type === "all-at-once") return DEFAULT_STRATEGY;
  const text = (s: Share): ShareInput => ("count" in s ? { unit: "count", amount: String(s.count) } : { unit: "percent", amount: String(s.percent) });
  return {
    type: "staged",
    canary: text(value.canary),
    batches: value.batches.map(text),
    successThreshold: String(value.successThreshold),
    failureThreshold: String(value.failureThreshold),
    batchTimeoutMinutes: String(value.batchTimeoutSeconds / 60),
    autoAdvance: value.autoAdvance,
  };
}

function shareProblem(s: ShareInput): string | null {
  const n = num(s.amount);
  if (s.unit === "count") return Number.isInteger(n) && n >= 1 && n <= 1_000_000 ? null : "a whole number of devices, at least 1";
  return Number.isFinite(n) && n >= 0.1 && n <= 100 ? null : "a percent from 0.1 to 100";
}

/**
 * The strategy's problems by field ("canary", "batches.0", "successThreshold", ...), by the
 * bounds of the API's schema (strategy.ts); the API's 400 stays the judge where they differ.
 */
export function strategyErrors(input: StrategyInput): Record<string, string> {
  if (input.type === "all-at-once") return {};
  const errors: Record<string, string> = {};
  const canary = shareProblem(input.canary);
  if (canary) errors.canary = canary;
  if (input.batches.length > 100) errors.batches = "at most 100 batches";
  input.batches.forEach((b, i) => {
    const problem = shareProblem(b);
    if (problem) errors[`batches.${i}`] = problem;
  });
  for (const key of ["successThreshold", "failureThreshold"] as const) {
    const n = num(input[key]);
    if (!(Number.isFinite(n) && n >= 1 && n <= 100)) errors[key] = "a percent from 1 to 100";
  }
  const seconds = num(input.batchTimeoutMinutes) * 60;
  if (!(Number.isFinite(seconds) && Number.isInteger(Math.round(seconds)) && seconds >= 60 && seconds <= 30 * 86_400)) errors.batchTimeoutMinutes = "from 1 minute to 30 days";
  return errors;
}

/** The batches the strategy produces over `devices` (null for all at once, or while a field is wrong). */
export function previewBatches(input: StrategyInput, devices: number): PlannedBatch[] | null {
  if (input.type === "all-at-once" || Object.keys(strategyErrors(input)).length) return null;
  const value = strategyValue(input);
  return value.type === "staged" ? planBatches(value, devices) : null;
}
