// A batch of the rollout as the page draws it: its devices by state as segments of one bar
// (running from the left towards the success line, failed from the right towards the failure
// line), and the time left before its timeout. Pure, tested in timeline.test.ts.
import type { RouterOutputs } from "../../api/client";

export type Rollout = RouterOutputs["deployments"]["rollout"]["status"];
export type Batch = Rollout["batches"][number];

export interface Segment {
  key: "running" | "installing" | "downloading" | "pending" | "waiting" | "offline" | "cancelled" | "superseded" | "removed" | "skipped" | "failed";
  label: string;
  value: number;
  /** CSS colour (a theme variable) */
  color: string;
  /** shown in the legend only when some device is in it (the agent's states and failed always are) */
  rare?: boolean;
}

/**
 * Left to right; every device of the batch is in exactly one segment, each state under its own
 * name, straight from the batch's counts (the service's rows): a cancelled device is cancelled,
 * not skipped, and a device the batch waits for while it is offline is offline.
 */
export function batchSegments(counts: Batch["counts"]): Segment[] {
  return [
    { key: "running", label: "running", value: counts.running, color: "var(--status-online)" },
    { key: "installing", label: "installing", value: counts.installing, color: "var(--chart-1)" },
    { key: "downloading", label: "downloading", value: counts.downloading, color: "var(--chart-4)" },
    { key: "pending", label: "pending", value: counts.pending, color: "var(--status-pending)" },
    {
      key: "waiting",
      label: "waiting (retry, window, budget)",
      value: counts.waitingToRetry + counts.waitingForWindow + counts.waitingForBudget,
      color: "var(--border-strong)",
    },
    { key: "offline", label: "offline", value: counts.offline, color: "var(--status-offline)" },
    { key: "cancelled", label: "cancelled", value: counts.cancelled, color: "var(--border)", rare: true },
    { key: "superseded", label: "superseded", value: counts.superseded, color: "var(--border)", rare: true },
    { key: "removed", label: "removed", value: counts.removed, color: "var(--border)", rare: true },
    { key: "skipped", label: "skipped", value: counts.skipped, color: "var(--border)", rare: true },
    { key: "failed", label: "failed", value: counts.failed, color: "var(--status-error)" },
  ];
}

/**
 * Where the success and failure lines stand on the bar, in percent from its left end: running
 * devices fill from the left and succeed the batch when they reach the success line; failed
 * ones fill from the right and pause the rollout when they reach the failure line.
 */
export function thresholdLines(batch: Pick<Batch, "size" | "successTarget">, failureThreshold: number): { success: number; failure: number } {
  const size = Math.max(1, batch.size);
  return {
    success: Math.min(100, (batch.successTarget / size) * 100),
    failure: Math.max(0, 100 - (Math.min(size, failureLimit(batch.size, failureThreshold)) / size) * 100),
  };
}

/** Devices that must fail for the failure threshold to pause the rollout (the service's judgeBatch: failed% >= threshold). */
export function failureLimit(size: number, failureThreshold: number): number {
  return Math.max(1, Math.ceil(Number(((size * failureThreshold) / 100).toPrecision(12))));
}

export function batchName(batch: Pick<Batch, "index" | "kind">): string {
  return batch.kind === "canary" ? "Canary" : `Batch ${batch.index}`;
}

/** "12 min 5 s left", or "timed out" once the deadline passed. */
export function timeLeft(deadlineAt: string, now: number): string {
  const ms = new Date(deadlineAt).getTime() - now;
  if (ms <= 0) return "timeout reached";
  const total = Math.ceil(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const parts = h > 0 ? [`${h} h`, `${m} min`] : m > 0 ? [`${m} min`, `${s} s`] : [`${s} s`];
  return `${parts.join(" ")} left`;
}

/** Whether the batch's clock runs: it is the batch in flight and the rollout is moving (a paused rollout's batch gets a fresh timeout on resume). */
export function clockRuns(rollout: Pick<Rollout, "state" | "currentBatch">, batch: Pick<Batch, "index" | "state" | "deadlineAt">): boolean {
  return batch.state === "in_progress" && batch.deadlineAt !== null && rollout.currentBatch === batch.index && (rollout.state === "canary" || rollout.state === "in_progress");
}

/** How a batch ended, in the words the API's `summary` uses too (no count of devices: rollout-words.ts). */
export { outcomeText } from "../../../../src/modules/deployments/rollout-words";
