// Jobs (docs/actions.md): one device action over the devices of a label selector, rolled out
// in batches like a staged deployment. The list shows each job's state, why, and its progress
// per state (live while one is in flight); a new job is previewed (how many devices match,
// run it, are skipped or offline, and its batches) before it starts; pause, resume and cancel
// are the API's moves, offered where the job's state allows them.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link } from "@tanstack/react-router";
import { Plus } from "lucide-react";
import { q } from "../api/query";
import type { RouterInputs } from "../api/client";
import { JobMoves, JobProgress, JobStateBadge, targetText, type Job } from "./parts";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { useLocalPage } from "../ui/useLocalPage";
import { SelectorInput, selectorProblem } from "../devices/SelectorInput";
import { ACTION_LABELS } from "../devices/DeviceActionsMenu";
import { parseSelector } from "../../../src/modules/devices/selector";
import { APP_KINDS, DISRUPTIVE_KINDS, type OperatorKind } from "../../../src/modules/device-actions/kinds";
import { counted } from "../../../src/lib/plural";
import type { ActionWindows } from "../../../src/modules/rollout-engine/options";
import { MaintenanceWindowsEditor, windowProblems } from "../deployments/MaintenanceWindowsEditor";
import { DisruptionBudgetEditor } from "../deployments/DisruptionBudgetEditor";
import { budgetValue, EMPTY_DRAFT, type BudgetInput } from "../deployments/draft";
import { DEFAULT_STRATEGY, strategyOf, StrategyFields, type StrategyDraft } from "./StrategyFields";
// .cell-stack (a cell of stacked lines) and the progress cell are the device and deployment lists'
import "../devices/devices.css";
import "../deployments/deployments.css";

type CreateJob = RouterInputs["jobs"]["create"];

/** A refusal about the windows or the budget goes next to them (keyed by the API's path, as the editors read it). */
const pacingFieldOf = (_message: string, path?: readonly (string | number)[]) =>
  path?.length && (path[0] === "maintenanceWindows" || path[0] === "disruptionBudget") ? path.join(".") : null;

export function JobsPage() {
  const canRead = useCan("actions:read");
  if (!canRead) {
    return (
      <>
        <PageHeader title="Jobs" description="Device actions over many devices" />
        <Card><Forbidden what="jobs" /></Card>
      </>
    );
  }
  return <JobList />;
}

function JobList() {
  const canWrite = useCan("actions:write");
  const page = useLocalPage(25);
  const [creating, setCreating] = useState(false);
  const jobs = useQuery({
    ...q.jobs.list.options(page.input),
    placeholderData: keepPreviousData,
    // live progress while a job is in flight
    refetchInterval: (query) => (query.state.data?.items.some((j) => j.state === "in_progress") ? 3000 : false),
  });
  const columns: Column<Job>[] = [
    {
      id: "action", header: "Action",
      cell: (j) => (
        <div className="cell-stack">
          <Link to="/jobs/$jobId" params={{ jobId: j.id }}><strong>{ACTION_LABELS[j.kind]}</strong></Link>
          {j.reason && <span className="faint">{j.reason}</span>}
        </div>
      ),
    },
    { id: "target", header: "Target", cell: (j) => <span className={j.target.labelSelector ? "mono" : undefined}>{targetText(j.target)}</span> },
    {
      id: "state", header: "State",
      cell: (j) => (
        <div className="cell-stack">
          <JobStateBadge state={j.state} />
          {j.stateReason && <span className="faint">{j.stateReason}</span>}
        </div>
      ),
    },
    { id: "progress", header: "Progress", className: "col-progress", cell: (j) => <JobProgress job={j} /> },
    { id: "created", header: "Created", className: "nowrap", cell: (j) => <RelativeTime value={j.createdAt} /> },
    ...(canWrite ? [{ id: "moves", header: "Moves", className: "nowrap", cell: (j: Job) => <JobMoves job={j} /> } satisfies Column<Job>] : []),
  ];

  return (
    <>
      <PageHeader
        title="Jobs"
        description={jobs.data ? `${jobs.data.total.toLocaleString()} in this organization` : "Device actions over many devices"}
        actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>New job</Button>}
      />
      <Card flush>
        <QueryTable
          query={jobs}
          what="jobs"
          caption="Jobs"
          columns={columns}
          rowKey={(j) => j.id}
          page={page}
          empty={
            <Empty title="No jobs yet" action={canWrite && <Button variant="primary" onClick={() => setCreating(true)}>New job</Button>}>
              A job runs one action (reboot, restart an application, collect diagnostics…) on the devices a label selector matches, a canary first, then in batches.
            </Empty>
          }
        />
      </Card>
      {creating && <NewJobDialog onClose={() => setCreating(false)} />}
    </>
  );
}

const KINDS: OperatorKind[] = ["check-health", "diagnostics", "renew-certificate", "reboot", "restart-agent", "restart-app", "stop-app", "start-app"];

function NewJobDialog({ onClose }: { onClose: () => void }) {
  const canDisrupt = useCan("actions:disruptive");
  const [kind, setKind] = useState<OperatorKind>("check-health");
  const [selector, setSelector] = useState("");
  const [deploymentId, setDeploymentId] = useState("");
  const [strategy, setStrategy] = useState<StrategyDraft>(DEFAULT_STRATEGY);
  const [reason, setReason] = useState("");
  const [windows, setWindows] = useState<ActionWindows | null>(null);
  const [budget, setBudget] = useState<BudgetInput>(EMPTY_DRAFT.budget);
  const needsApp = APP_KINDS.includes(kind);
  // the API takes a budget for the disruptive kinds only
  const disruptive = DISRUPTIVE_KINDS.includes(kind);
  const windowErrors = windowProblems(windows);
  const selectorOk = selector.trim() !== "" && !selectorProblem(selector);
  const input: CreateJob | null = selectorOk && (!needsApp || deploymentId)
    ? {
      kind, target: { labelSelector: parseSelector(selector) }, ...(needsApp ? { deploymentId } : {}), ...(reason.trim() ? { reason: reason.trim() } : {}),
      strategy: strategyOf(strategy),
      ...(windows ? { maintenanceWindows: windows } : {}),
      ...(disruptive && budget.enabled ? { disruptionBudget: budgetValue(budget) } : {}),
    }
    : null;
  const settled = useDebounced(input, 300);
  const preview = useQuery({
    queryKey: [...q.jobs.key(), "preview", settled],
    queryFn: () => q.jobs.preview.call({ kind: settled!.kind, target: settled!.target, deploymentId: settled!.deploymentId, strategy: settled!.strategy }),
    enabled: settled !== null,
    retry: false,
  });
  const deployments = useQuery({ ...q.deployments.list.options({ limit: 100, offset: 0 }), enabled: needsApp });
  const create = useAction(q.jobs.create.mutation(), {
    invalidates: [q.jobs.key()],
    success: (job) => `Job started over ${counted(job.eligible, "device")}`,
    onSuccess: onClose,
    fieldOf: pacingFieldOf,
  });
  // the API's refusal shows until the windows or the budget change (onChange resets it)
  const pacingErrors = { ...create.fieldErrors, ...windowErrors };
  const p = preview.data;
  return (
    <Dialog open onClose={onClose} title="New job" wide>
      <form className="stack" onSubmit={create.submit(() => input!, { valid: input !== null && Object.keys(windowErrors).length === 0 })} noValidate>
        <div className="field">
          <label htmlFor="job-kind">Action</label>
          <select id="job-kind" className="select" value={kind} onChange={(e) => setKind(e.target.value as OperatorKind)}>
            {KINDS.filter((k) => canDisrupt || !DISRUPTIVE_KINDS.includes(k)).map((k) => <option key={k} value={k}>{ACTION_LABELS[k]}</option>)}
          </select>
        </div>
        {needsApp && (
          <div className="field">
            <label htmlFor="job-deployment">Application (its deployment)</label>
            <select id="job-deployment" className="select" value={deploymentId} onChange={(e) => setDeploymentId(e.target.value)}>
              <option value="">Choose a deployment</option>
              {deployments.data?.items.map((d) => <option key={d.id} value={d.id}>{d.name} ({d.applicationName})</option>)}
            </select>
          </div>
        )}
        <SelectorInput id="job-selector" label="Devices (label selector)" value={selector} onChange={setSelector} />
        <StrategyFields idPrefix="job" value={strategy} onChange={setStrategy} />
        <div className="field">
          <label htmlFor="job-reason">Reason</label>
          <input id="job-reason" className="input" maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} placeholder="recorded with the job and in the audit log" />
        </div>
        <MaintenanceWindowsEditor value={windows} onChange={(w) => { create.reset(); setWindows(w); }} errors={pacingErrors} downloads={false} toggleLabel="Run it only in maintenance windows" />
        {disruptive && (
          <DisruptionBudgetEditor value={budget} onChange={(b) => { create.reset(); setBudget(b); }} errors={pacingErrors}
            toggleLabel="Limit disruption: how many devices of a group may run it at once" wholeGroup="none: all the job's devices are one group" />
        )}
        <p role="status" aria-label="Job preview" className="faint">
          {!input ? "Name the devices to see how many the job takes."
            : preview.isPending ? "Counting the devices…"
            : preview.isError ? "The preview failed; the job would be refused as well."
            : p && `${counted(p.matched, "device")} match: ${p.eligible} would run it, ${p.skipped} skipped, ${p.offline} offline (drawn last). Batches: ${p.batches.map((b) => b.size).join(" + ") || "none"}.`}
        </p>
        {disruptive && <p className="alert-box alert-box--warning">{ACTION_LABELS[kind]} changes what runs on each device; a failure threshold pauses the job.</p>}
        <FormFooter action={create} onCancel={onClose} disabled={!input || (p !== undefined && p.eligible === 0)} submitLabel={`Start job over ${p ? counted(p.eligible, "device") : "the devices"}`} />
      </form>
    </Dialog>
  );
}
