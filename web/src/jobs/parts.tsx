// Pieces of a job that the list and the job's own page share: its state badge, its progress
// bar with the counts in words, and the moves its state allows (Pause, Resume, Cancel, each
// named with the job's action for assistive technology).
import { Pause, Play, X } from "lucide-react";
import { q } from "../api/query";
import type { RouterOutputs } from "../api/client";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Progress } from "../ui/charts";
import { useAction } from "../ui/useAction";
import { ACTION_LABELS } from "../devices/DeviceActionsMenu";
import { SEGMENT_COLORS } from "../deployments/DeploymentsPage";
import { counted } from "../../../src/lib/plural";

export type Job = RouterOutputs["jobs"]["get"];

export const STATE_TEXT: Record<Job["state"], string> = { in_progress: "in progress", paused: "paused", completed: "completed", cancelled: "cancelled", expired: "expired" };
export const STATE_BADGE: Record<Job["state"], string> = { in_progress: "provisioned", paused: "pending", completed: "online", cancelled: "offline", expired: "error" };

export function JobStateBadge({ state }: { state: Job["state"] }) {
  return <span className={`badge badge--${STATE_BADGE[state]}`}><span className="badge__dot" aria-hidden="true" />{STATE_TEXT[state]}</span>;
}

export function targetText(target: Job["target"]): string {
  if (target.labelSelector) return Object.entries(target.labelSelector).map(([k, v]) => `${k}=${v}`).join(", ");
  return counted(target.deviceIds?.length ?? 0, "picked device");
}

export function JobProgress({ job }: { job: Job }) {
  const c = job.counts;
  const inFlight = c.pending + c.delivered + c.running + c.deferred;
  const waiting = c.waiting_for_budget + c.waiting_for_window;
  const summary = `${c.succeeded} of ${job.eligible} succeeded, ${c.failed + c.expired} failed or expired, ${inFlight} in flight, ${waiting ? `${waiting} waiting for their window or the budget, ` : ""}${c.queued} queued`;
  return (
    <div className="deployment-progress">
      <Progress
        value={c.succeeded}
        max={job.eligible}
        label={`Progress of the ${ACTION_LABELS[job.kind].toLowerCase()} job: ${summary}`}
        segments={[
          { key: "running", label: "succeeded", value: c.succeeded, color: SEGMENT_COLORS.running },
          { key: "failed", label: "failed or expired", value: c.failed + c.expired, color: SEGMENT_COLORS.failed },
          { key: "active", label: "in flight", value: inFlight, color: SEGMENT_COLORS.active },
        ]}
      />
      <span className="faint num">{summary}{job.currentBatch !== null && job.state === "in_progress" ? ` · ${job.currentBatch === 0 ? "canary" : `batch ${job.currentBatch} of ${job.batches.length - 1}`}` : ""}{c.cancelled ? ` · ${c.cancelled} cancelled` : ""}{c.skipped ? ` · ${c.skipped} skipped` : ""}</span>
    </div>
  );
}

/** Pause, Resume and Cancel where the job's state allows them (actions:write). */
export function JobMoves({ job, onMoved }: { job: Job; onMoved?: () => void }) {
  const canWrite = useCan("actions:write");
  const move = useAction({ mutationFn: ({ id, to }: { id: string; to: "pause" | "resume" | "cancel" }) => q.jobs[to].call({ id }) }, {
    invalidates: [q.jobs.key()],
    success: (moved, { to }) => `Job ${to === "pause" ? "paused" : to === "resume" ? "resumed" : "cancelled"}: ${moved.stateReason ?? ""}`,
    failure: ({ to }) => `Could not ${to} the job`,
    onSuccess: onMoved,
  });
  if (!canWrite) return null;
  const busy = move.pendingInput?.id === job.id;
  const what = `the ${ACTION_LABELS[job.kind].toLowerCase()} job`;
  return (
    <div className="row row--nowrap">
      {job.state === "in_progress" && <Button size="small" icon={<Pause />} busy={busy} aria-label={`Pause ${what}`} onClick={() => void move.run({ id: job.id, to: "pause" })}>Pause</Button>}
      {job.state === "paused" && <Button size="small" icon={<Play />} busy={busy} aria-label={`Resume ${what}`} onClick={() => void move.run({ id: job.id, to: "resume" })}>Resume</Button>}
      {(job.state === "in_progress" || job.state === "paused") && <Button size="small" variant="danger" icon={<X />} disabled={busy} aria-label={`Cancel ${what}`} onClick={() => void move.run({ id: job.id, to: "cancel" })}>Cancel</Button>}
    </div>
  );
}
