// A job's batch as the console draws it: its devices by state in a few segments, from the
// counts the API answers (one grouped query over the job's device actions).
import type { RouterOutputs } from "../api/client";

type Counts = RouterOutputs["jobs"]["get"]["counts"];

export interface JobSegment {
  key: string;
  label: string;
  value: number;
  color: string;
  /** listed only when some device is in it */
  rare?: boolean;
}

export const batchName = (index: number) => (index === 0 ? "Canary" : `Batch ${index}`);

export function jobBatchSegments(c: Counts): JobSegment[] {
  return [
    { key: "succeeded", label: "succeeded", value: c.succeeded, color: "var(--status-online)" },
    { key: "in-flight", label: "in flight", value: c.pending + c.delivered + c.running, color: "var(--chart-1)" },
    { key: "deferred", label: "deferred by a lease", value: c.deferred, color: "var(--chart-4)", rare: true },
    { key: "waiting", label: "waiting (window, budget)", value: c.waiting_for_window + c.waiting_for_budget, color: "var(--status-pending)", rare: true },
    { key: "queued", label: "queued", value: c.queued, color: "var(--border-strong)" },
    { key: "cancelled", label: "cancelled", value: c.cancelled, color: "var(--border)", rare: true },
    { key: "expired", label: "expired", value: c.expired, color: "var(--status-offline)", rare: true },
    { key: "failed", label: "failed", value: c.failed, color: "var(--status-error)" },
  ];
}
