// One job (/jobs/:id, docs/actions.md): its state and why, its live progress batch by batch
// like a rollout's (each batch's devices by state, from the same grouped counts the API
// answers, with its success target), the moves its state allows, and every device with its
// result: succeeded, failed with the device's message, skipped with the reason, expired,
// deferred by a lease (by whom, until when), waiting for its window or the disruption budget.
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Link, useParams } from "@tanstack/react-router";
import { q } from "../api/query";
import type { RouterOutputs } from "../api/client";
import { useCan } from "../app/session";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorState, Forbidden, Loading } from "../ui/states";
import { DateTime, formatDateTime } from "../ui/time";
import { useLocalPage } from "../ui/useLocalPage";
import { ACTION_LABELS } from "../devices/DeviceActionsMenu";
import { counted } from "../../../src/lib/plural";
import { JobMoves, JobProgress, JobStateBadge, targetText, type Job } from "./parts";
import { batchName, jobBatchSegments } from "./progress";
import { BatchBar } from "../deployments/rollout/BatchTimeline";
import "../devices/devices.css";
import "../deployments/deployments.css";
import "../deployments/rollout/rollout.css";

type Action = RouterOutputs["deviceActions"]["get"];

const LIVE_MS = 3000;

export function JobPage() {
  const canRead = useCan("actions:read");
  if (!canRead) {
    return (
      <>
        <PageHeader breadcrumb={<Link to="/jobs">Jobs</Link>} title="Job" />
        <Card><Forbidden what="jobs" /></Card>
      </>
    );
  }
  return <JobView />;
}

function JobView() {
  const { jobId } = useParams({ from: "/app/jobs/$jobId" });
  const queryClient = useQueryClient();
  const job = useQuery({
    ...q.jobs.get.options({ id: jobId }),
    // live while devices may still run it; the device list follows each refresh
    refetchInterval: (query) => (query.state.data?.state === "in_progress" || query.state.data?.state === "paused" ? LIVE_MS : false),
  });
  if (job.isPending) return <Loading label="Loading the job" />;
  if (job.isError) {
    return (
      <>
        <PageHeader breadcrumb={<Link to="/jobs">Jobs</Link>} title="Job" />
        <ErrorState error={job.error} what="this job" retry={() => job.refetch()} />
      </>
    );
  }
  const j = job.data;
  return (
    <>
      <PageHeader
        breadcrumb={<Link to="/jobs">Jobs</Link>}
        title={`${ACTION_LABELS[j.kind]} job`}
        description={<>{j.reason ?? "No reason given"} · <span className={j.target.labelSelector ? "mono" : undefined}>{targetText(j.target)}</span> · created <DateTime value={j.createdAt} /></>}
        actions={<JobMoves job={j} onMoved={() => void queryClient.invalidateQueries({ queryKey: q.deviceActions.key() })} />}
      />
      <Card title="Progress">
        <div className="stack">
          <div className="row">
            <JobStateBadge state={j.state} />
            {j.stateReason && <span data-testid="job-state-reason">{j.stateReason}</span>}
          </div>
          <JobProgress job={j} />
          <p className="faint">
            {counted(j.eligible, "device")} take part{j.skipped ? `, ${j.skipped} skipped` : ""} · expires {formatDateTime(j.expiresAt)}
            {j.maintenanceWindows ? ` · only inside maintenance windows (${j.maintenanceWindows.timeZone}${j.maintenanceWindows.timeZoneLabel ? `, or the device's ${j.maintenanceWindows.timeZoneLabel} label` : ""})` : ""}
            {j.disruptionBudget ? ` · at most ${"count" in j.disruptionBudget.maxUnavailable ? j.disruptionBudget.maxUnavailable.count : `${j.disruptionBudget.maxUnavailable.percent}%`} at once per ${j.disruptionBudget.groupBy.join(", ") || "job"}` : ""}
          </p>
          <JobBatches job={j} />
        </div>
      </Card>
      <JobDevices job={j} />
    </>
  );
}

function JobBatches({ job }: { job: Job }) {
  return (
    <ol className="timeline" aria-label="Batches">
      {job.batches.map((batch) => {
        const name = batchName(batch.index);
        const segments = jobBatchSegments(batch.counts);
        const summary = segments.map((s) => `${s.label} ${s.value}`).join(", ");
        const current = job.currentBatch === batch.index && (job.state === "in_progress" || job.state === "paused");
        return (
          <li key={batch.index} className={current ? "timeline__item timeline__item--current" : "timeline__item"} aria-label={name} data-batch={batch.index}>
            <span className="timeline__dot" aria-hidden="true" />
            <div className="timeline__body">
              <div className="timeline__head">
                <strong>{name}</strong>
                <span className="muted">{counted(batch.size, "device")}</span>
                {current && <span className="badge badge--provisioned">{job.state === "paused" ? "paused here" : "in flight"}</span>}
              </div>
              <BatchBar name={name} size={batch.size} segments={segments} label={`${name}: ${summary}; next batch at ${batch.successTarget} succeeded`} />
              <p className="faint batch-lines">Success target: {batch.successTarget} of {batch.size} succeeded ({job.strategy.successThreshold}%) · pauses at {job.strategy.failureThreshold}% failed or expired</p>
            </div>
          </li>
        );
      })}
    </ol>
  );
}

/** What became of the job on one device, in words. */
export function resultText(a: Action): string {
  switch (a.state) {
    case "queued": return a.heldForBudget ? "waiting for a place in the disruption budget" : "queued: its batch is not dispatched yet";
    case "pending": return a.windowOpensAt ? `waiting for its maintenance window (opens ${formatDateTime(a.windowOpensAt)})` : "waiting for the device to take it";
    case "delivered": return "handed to the device";
    case "running": return "running";
    case "deferred": return `deferred by a lease of ${a.deferredBy ?? "an application"}${a.deferredUntil ? ` until ${formatDateTime(a.deferredUntil)}` : ""}${a.message ? `: ${a.message}` : ""}`;
    default: return a.message ?? "";
  }
}

const RESULT_BADGE: Record<Action["state"], string> = {
  succeeded: "online", failed: "error", expired: "error", skipped: "offline", cancelled: "offline",
  deferred: "pending", queued: "pending", pending: "pending", delivered: "provisioned", running: "provisioned",
};

function JobDevices({ job }: { job: Job }) {
  const page = useLocalPage(50);
  const live = job.state === "in_progress" || job.state === "paused";
  const actions = useQuery({
    ...q.deviceActions.list.options({ jobId: job.id, ...page.input }),
    placeholderData: keepPreviousData,
    refetchInterval: live ? LIVE_MS : false,
  });
  const columns: Column<Action>[] = [
    { id: "device", header: "Device", cell: (a) => <Link to="/devices/$deviceId" params={{ deviceId: a.deviceId }}>{a.deviceName}</Link> },
    { id: "batch", header: "Batch", className: "nowrap", cell: (a) => (a.batchIndex === null ? "—" : batchName(a.batchIndex)) },
    {
      id: "result", header: "Result",
      cell: (a) => (
        <div className="cell-stack">
          <span className={`badge badge--${RESULT_BADGE[a.state]}`} style={{ alignSelf: "flex-start" }}><span className="badge__dot" aria-hidden="true" />{a.state}</span>
          {resultText(a) && <span className="faint" data-testid={`result-${a.deviceName}`}>{resultText(a)}</span>}
        </div>
      ),
    },
    { id: "finished", header: "Finished", className: "nowrap", cell: (a) => (a.finishedAt ? <DateTime value={a.finishedAt} /> : "—") },
  ];
  return (
    <Card flush title="Devices">
      <QueryTable
        query={actions}
        what="devices"
        caption="Devices of the job"
        columns={columns}
        rowKey={(a) => a.id}
        page={page}
        empty={<Empty title="No devices">The job's target matched no device.</Empty>}
      />
    </Card>
  );
}
