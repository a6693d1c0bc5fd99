// One deployment as operators watch it: the rollout's state, its batches as a timeline
// (canary first) with each batch's devices by state against the success and failure lines
// and the time left before its timeout, the controls the state machine allows now, the
// removal its devices confirm after a stop or delete, and the per-device table (filtered by
// state in the URL). Everything moves live with the deployment's realtime events.
import { useEffect, useRef, useState, type ReactElement } from "react";
import { Link, useNavigate, useParams, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient, type UseQueryResult } from "@tanstack/react-query";
import { ArrowUpCircle, Ban, CheckCheck, Pause, Play, RotateCcw, Rocket, Square, Trash2, Undo2 } from "lucide-react";
import { statusOf, type RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useRealtimeEvents } from "../../app/realtime";
import { useCan } from "../../app/session";
import { Button } from "../../ui/Button";
import { Card, PageHeader } from "../../ui/Card";
import type { Column } from "../../ui/DataTable";
import { ConfirmDialog } from "../../ui/Dialog";
import { QueryTable } from "../../ui/QueryTable";
import { Empty, ErrorBox, ErrorState, Forbidden, Loading } from "../../ui/states";
import { RelativeTime } from "../../ui/time";
import { useToast } from "../../ui/toast";
import { isManaged, ManagedGate, ManagedMark } from "../../ui/ManagedMark";
import { GroupRollbackDialog } from "../../rollback/GroupRollbackDialog";
import { controlConsequence, controlStates, type Control } from "./controls";
import { RemovalCard } from "./RemovalCard";
import { UpgradeDialog } from "./UpgradeDialog";
import { SecretParametersButton } from "./SecretParametersButton";
import { DEVICE_STATES, type DeviceState } from "./search";
import { BatchTimeline } from "./BatchTimeline";
import { StateBadge } from "../StateBadge";
import type { Rollout } from "./timeline";
import { positionText, retryable, shortfall, STATE_TONE, stateLabel } from "./labels";
import "./rollout.css";
import { counted } from "../../../../src/lib/plural";
import { TERMINAL_ROLLOUT_STATES } from "../../../../src/modules/deployments/rollout-moves";
import { cannotReachText } from "../../../../src/modules/deployments/rollout-words";

type Deployment = RouterOutputs["deployments"]["get"];
type DeviceEntry = RouterOutputs["deployments"]["devices"]["items"][number];

const PAGE = 25;
/** the realtime events of one deployment arrive per device report: a burst refreshes once */
const REFRESH_AFTER_MS = 250;

export function RolloutPage() {
  const canRead = useCan("deployments:read");
  if (!canRead) {
    return (
      <>
        <PageHeader breadcrumb={<DeploymentsLink />} title="Deployment" />
        <Forbidden what="deployments" />
      </>
    );
  }
  return <DeploymentView />;
}

function DeploymentsLink() {
  return <Link to="/deployments">Deployments</Link>;
}

function DeploymentView() {
  const { deploymentId } = useParams({ from: "/app/deployments/$deploymentId" });
  const queryClient = useQueryClient();
  const [deleted, setDeleted] = useState(false);
  const deployment = useQuery({ ...q.deployments.get.options({ id: deploymentId }), enabled: !deleted });
  const staged = deployment.data?.strategy.type === "staged";
  const rollout = useQuery({ ...q.deployments.rollout.status.options({ id: deploymentId }), enabled: staged && !deleted });

  // Device reports, rollout moves and status changes of this deployment: read it again.
  const pending = useRef<number | undefined>(undefined);
  useEffect(() => () => window.clearTimeout(pending.current), []);
  useRealtimeEvents((event) => {
    const data = event.data as { deploymentId?: string; to?: string };
    if (data.deploymentId !== deploymentId) return;
    if (event.type === "deployment.status_changed" && data.to === "deleted") {
      // Every device confirmed the removal (or it was forced): the deployment is gone, and
      // reading it again would only be answered 404.
      window.clearTimeout(pending.current);
      pending.current = undefined;
      setDeleted(true);
      queryClient.removeQueries({ queryKey: q.deployments.key() });
      return;
    }
    if (!["deployment.progress", "rollout.state_changed", "deployment.status_changed"].includes(event.type)) return;
    if (pending.current !== undefined) return;
    pending.current = window.setTimeout(() => {
      pending.current = undefined;
      void queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    }, REFRESH_AFTER_MS);
  });

  if (deleted) {
    return (
      <>
        <PageHeader breadcrumb={<DeploymentsLink />} title="Deployment deleted" />
        <Empty title="The deployment was deleted" action={<Link className="btn" to="/deployments">Back to the deployments</Link>}>
          Every device confirmed the removal of the application, or the removal was forced.
        </Empty>
      </>
    );
  }
  if (deployment.isPending) return <Loading label="Loading the deployment" />;
  if (deployment.isError) {
    return (
      <>
        <PageHeader breadcrumb={<DeploymentsLink />} title="Deployment" />
        <ErrorState error={deployment.error} what="this deployment" retry={() => deployment.refetch()} />
      </>
    );
  }
  const d = deployment.data;
  return (
    <>
      <PageHeader
        breadcrumb={<DeploymentsLink />}
        title={<span className="row">{d.name} <StateBadge deployment={d} /> <ManagedMark resource={d} /></span>}
        description={
          <>
            {d.applicationName} <code>{d.version}</code> · profile <code>{d.profileId}</code> · {targetText(d)} ·{" "}
            {d.strategy.type === "staged" ? "staged rollout" : "all at once"} · changed <RelativeTime value={d.updatedAt} />
          </>
        }
        actions={<DeploymentActions deployment={d} onDeleted={() => setDeleted(true)} />}
      />
      <div className="stack">
        {staged ? <RolloutCard deployment={d} rollout={rollout} /> : <AllAtOnceCard deployment={d} />}
        {(d.status === "stopping" || d.status === "deleting" || d.removalRequestedAt) && <RemovalCard deployment={d} onDeleted={() => setDeleted(true)} />}
        <DevicesCard deployment={d} />
      </div>
    </>
  );
}

function targetText(d: Deployment): string {
  if (d.target.labelSelector) return `devices labelled ${Object.entries(d.target.labelSelector).map(([k, v]) => `${k}=${v}`).join(",")}`;
  const n = d.target.deviceIds?.length ?? 0;
  return counted(n, "picked device");
}

/** A control's button and its confirmation, which says what will happen. */
function useControl(deployment: Deployment, batches: number, rollout?: Rollout) {
  const queryClient = useQueryClient();
  const toast = useToast();
  const [open, setOpen] = useState<Control | null>(null);
  const [conflict, setConflict] = useState<unknown>(null);
  const currentBatch = rollout?.currentBatch ?? null;
  const below = rollout ? shortfall(rollout) : null;
  const failed = rollout ? retryable(rollout) : 0;
  const position = { state: deployment.rolloutState, currentBatch, status: deployment.status, staged: deployment.strategy.type === "staged", retryable: failed };
  const states = controlStates(position);
  // "Promote anyway" only where a promotion is allowed and would accept the batch below its target
  const labels = controlLabels(below !== null && states.promote === null);

  async function run(control: Control) {
    const id = deployment.id;
    try {
      switch (control) {
        case "start": await q.deployments.start.call({ id }); break;
        case "promote": await q.deployments.rollout.promote.call({ id }); break;
        case "approve": await q.deployments.rollout.approve.call({ id }); break;
        case "pause": await q.deployments.rollout.pause.call({ id }); break;
        case "resume": await q.deployments.rollout.resume.call({ id }); break;
        case "retry": await q.deployments.rollout.retryFailed.call({ id }); break;
        case "abort": await q.deployments.rollout.abort.call({ id }); break;
        case "stop": await q.deployments.stop.call({ id, force: false }); break;
        case "forceStop": await q.deployments.stop.call({ id, force: true }); break;
        case "delete": break;
      }
      setConflict(null);
      toast.success(`${labels[control]}: done`);
    } catch (err) {
      // Someone (or the rollout job) moved it first: say so and show where it is now.
      if (statusOf(err) === 409) {
        setConflict(err);
        setOpen(null);
        await queryClient.invalidateQueries({ queryKey: q.deployments.key() });
        return;
      }
      throw err;
    } finally {
      void queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    }
  }

  const dialog = open && (
    <ConfirmDialog
      open
      onClose={() => setOpen(null)}
      title={`${labels[open]}?`}
      confirmLabel={labels[open]}
      danger={open === "abort" || open === "stop" || open === "forceStop" || (open === "promote" && below !== null)}
      onConfirm={() => run(open)}
    >
      <p>{controlConsequence(open, { ...position, batches, shortfall: below })}</p>
    </ConfirmDialog>
  );
  return { states, labels, open: setOpen, dialog, conflict, dismissConflict: () => setConflict(null) };
}

/** The controls' names: promoting a batch in flight below its success target is "Promote anyway". */
function controlLabels(belowTarget: boolean): Record<Control, string> {
  return {
    start: "Start",
    promote: belowTarget ? "Promote anyway" : "Promote canary",
    approve: "Approve next batch",
    pause: "Pause",
    resume: "Resume",
    retry: "Retry failed devices",
    abort: "Abort",
    stop: "Stop",
    forceStop: "Force stop",
    delete: "Delete",
  };
}

const CONTROL_ICONS: Partial<Record<Control, ReactElement>> = {
  start: <Play />,
  promote: <Rocket />,
  approve: <CheckCheck />,
  pause: <Pause />,
  resume: <Play />,
  retry: <RotateCcw />,
  abort: <Ban />,
  stop: <Square />,
};

function ControlButton({ control, use, variant }: { control: Control; use: { states: Record<Control, string | null>; labels: Record<Control, string>; open: (c: Control) => void }; variant?: "primary" | "danger" }) {
  const refusal = use.states[control];
  return (
    <Button variant={refusal ? "secondary" : variant} icon={CONTROL_ICONS[control]} disabled={refusal !== null} title={refusal ?? undefined} onClick={() => use.open(control)}>
      {use.labels[control]}
    </Button>
  );
}

function RolloutCard({ deployment, rollout }: { deployment: Deployment; rollout: UseQueryResult<Rollout> }) {
  const canWrite = useCan("deployments:write");
  const batches = rollout.data?.batches.length ?? 0;
  const control = useControl(deployment, batches, rollout.data);
  const r = rollout.data;
  // the rollout's own read may land a moment after the deployment's: words about its batch only once both agree
  const position = r && r.state === deployment.rolloutState ? positionText(r) : null;
  const paused = deployment.rolloutState === "paused" && r?.state === "paused" && r.batches.some((b) => b.index === r.currentBatch && b.state === "in_progress");
  // From the batch's counts of now, as its legend shows them (a stored reason carries no count).
  const inFlight = r && (r.state === "canary" || r.state === "in_progress") ? r.batches.find((b) => b.index === r.currentBatch && b.state === "in_progress") : undefined;
  const unreachable = inFlight ? cannotReachText({ index: inFlight.index, size: inFlight.size, failed: inFlight.counts.failed, successTarget: inFlight.successTarget }) : null;
  return (
    <Card title="Rollout" id="rollout">
      <div className="stack">
        <div className="rollout-head">
          <div className="rollout-state">
            <span className="faint">Rollout</span>
            <strong className={`rollout-state__value rollout-state--${deployment.rolloutState}`} data-testid="rollout-state">{stateLabel(deployment.rolloutState)}</strong>
            {position && <span className="muted" data-testid="rollout-position">{position}</span>}
          </div>
          {r && (
            <dl className="facts rollout-thresholds">
              <dt>Success threshold</dt><dd>{r.successThreshold}% running</dd>
              <dt>Failure threshold</dt><dd>{r.failureThreshold}% failed pauses it</dd>
              <dt>Batch timeout</dt><dd>{formatSeconds(r.batchTimeoutSeconds)}</dd>
              {/* a setting of the strategy: once the rollout has ended there is no next batch to speak of */}
              {!TERMINAL_ROLLOUT_STATES.includes(deployment.rolloutState) && <><dt>Next batch</dt><dd>{r.autoAdvance ? "starts by itself" : "waits for approval"}</dd></>}
            </dl>
          )}
        </div>
        {deployment.rolloutReason && (
          <div className={`alert-box ${deployment.rolloutState === "paused" || deployment.rolloutState === "failed" ? "alert-box--warning" : "alert-box--info"}`} role="status">
            <div className="stack stack--tight">
              <p><strong>{REASON_TITLE[deployment.rolloutState] ?? "Latest"}:</strong> {deployment.rolloutReason}</p>
              {paused && canWrite && (
                <p data-testid="paused-moves">
                  Nothing new is dispatched while it is paused. To make progress: <strong>Retry failed devices</strong> (each gets its next attempt),{" "}
                  <strong>{control.labels.promote}</strong> (accept the batch as it is), <strong>Resume</strong> (accept its failures and wait for its success target), or <strong>Abort</strong>.
                </p>
              )}
            </div>
          </div>
        )}
        {unreachable && <div className="alert-box alert-box--warning" role="status" data-testid="rollout-unreachable"><p>{unreachable}</p></div>}
        {control.conflict != null && (
          <div className="stack stack--tight" data-testid="rollout-conflict">
            <ErrorBox error={control.conflict} />
            <p className="muted">Someone else moved the rollout first; the page shows where it is now. <Button size="small" variant="ghost" onClick={control.dismissConflict}>Dismiss</Button></p>
          </div>
        )}
        {canWrite && (
          <div className="row rollout-controls" role="group" aria-label="Rollout controls">
            <ControlButton control="start" use={control} variant="primary" />
            <ControlButton control="promote" use={control} variant="primary" />
            <ControlButton control="approve" use={control} variant="primary" />
            <ControlButton control="pause" use={control} />
            <ControlButton control="resume" use={control} />
            <ControlButton control="retry" use={control} />
            <ControlButton control="abort" use={control} variant="danger" />
          </div>
        )}
        {control.dialog}
        {rollout.isError ? (
          <ErrorState error={rollout.error} what="this rollout" retry={() => rollout.refetch()} />
        ) : !r ? (
          <Loading label="Loading the rollout" />
        ) : r.batches.length === 0 ? (
          <Empty title="No batches planned yet">Start the deployment: its targeted devices are then frozen and cut into the canary and the batches.</Empty>
        ) : (
          <BatchTimeline rollout={r} />
        )}
        {r && r.skippedDevices > 0 && <p className="muted">{r.skippedDevices} targeted device{r.skippedDevices === 1 ? " is" : "s are"} not eligible (architecture) and in no batch.</p>}
      </div>
    </Card>
  );
}

const REASON_TITLE: Partial<Record<Deployment["rolloutState"], string>> = {
  paused: "Paused",
  failed: "Failed",
  aborted: "Aborted",
  completed: "Completed",
  initialized: "Planned",
};

function formatSeconds(s: number): string {
  if (s % 3600 === 0) return `${s / 3600} h`;
  if (s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

function AllAtOnceCard({ deployment }: { deployment: Deployment }) {
  const canWrite = useCan("deployments:write");
  const control = useControl(deployment, 1);
  const p = deployment.progress;
  return (
    <Card title="Progress" id="rollout">
      <div className="stack">
        <p className="muted">All at once: every eligible targeted device gets the application when the deployment starts.</p>
        <p data-testid="all-at-once-counts">
          {p.running} running · {p.pending + p.downloading + p.installing} in progress · {p.failed} failed · {p.skipped} skipped (not eligible)
          {p.cancelled > 0 && <> · {p.cancelled} cancelled</>}{p.superseded > 0 && <> · {p.superseded} superseded</>} · {p.total} devices
        </p>
        {canWrite && (
          <div className="row rollout-controls" role="group" aria-label="Rollout controls">
            <ControlButton control="start" use={control} variant="primary" />
          </div>
        )}
        {control.conflict != null && <ErrorBox error={control.conflict} />}
        {control.dialog}
      </div>
    </Card>
  );
}

function DeploymentActions({ deployment, onDeleted }: { deployment: Deployment; onDeleted: () => void }) {
  const canWrite = useCan("deployments:write");
  const queryClient = useQueryClient();
  const toast = useToast();
  const control = useControl(deployment, 1);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [rollback, setRollback] = useState(false);
  const [upgrade, setUpgrade] = useState(false);
  if (!canWrite) return null;
  async function remove() {
    const result = await q.deployments.delete.call({ id: deployment.id });
    if (result.deleted) {
      queryClient.removeQueries({ queryKey: q.deployments.key() });
      onDeleted();
      toast.success(`Deployment ${deployment.name} deleted`);
    } else {
      toast.success("Its devices are removing the application; the deployment is deleted once each confirmed");
      await queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    }
  }
  const target = deployment.target.labelSelector ? { labelSelector: deployment.target.labelSelector } : { deviceIds: deployment.target.deviceIds ?? [] };
  return (
    <>
      {deployment.status === "running" && !isManaged(deployment) && <Button icon={<ArrowUpCircle />} onClick={() => setUpgrade(true)}>Upgrade</Button>}
      <UpgradeDialog deployment={deployment} open={upgrade} onClose={() => setUpgrade(false)} />
      <Button icon={<Undo2 />} onClick={() => setRollback(true)}>Roll back devices</Button>
      <ControlButton control="stop" use={control} variant="danger" />
      <ManagedGate resource={deployment} open={<SecretParametersButton deployment={deployment} />}>
        <Button variant="danger" icon={<Trash2 />} disabled={control.states.delete !== null} title={control.states.delete ?? undefined} onClick={() => setConfirmDelete(true)}>
          Delete
        </Button>
      </ManagedGate>
      {control.dialog}
      {control.conflict != null && <span className="visually-hidden" role="alert">The deployment moved meanwhile; the page was refreshed.</span>}
      <ConfirmDialog open={confirmDelete} onClose={() => setConfirmDelete(false)} title={`Delete ${deployment.name}?`} confirmLabel="Delete deployment" onConfirm={remove}>
        <p>{controlConsequence("delete", { state: deployment.rolloutState, currentBatch: null, staged: false, batches: 1 })}</p>
        {deployment.status === "running" && (
          <p>It runs on {counted(deployment.progress.total, "device")} now: each will be told to remove {deployment.applicationName}.</p>
        )}
      </ConfirmDialog>
      {rollback && (
        <GroupRollbackDialog
          application={{ id: deployment.applicationId, name: deployment.applicationName }}
          initialTarget={target}
          onClose={() => setRollback(false)}
        />
      )}
    </>
  );
}

function DevicesCard({ deployment }: { deployment: Deployment }) {
  const search = useSearch({ from: "/app/deployments/$deploymentId" });
  const navigate = useNavigate({ from: "/deployments/$deploymentId" });
  const offset = search.offset ?? 0;
  const devices = useQuery({
    ...q.deployments.devices.options({ id: deployment.id, state: search.state, limit: PAGE, offset }),
    placeholderData: keepPreviousData,
  });
  const setState = (state: DeviceState | undefined) => void navigate({ search: (prev) => ({ ...prev, state, offset: undefined }), replace: true });
  const columns: Column<DeviceEntry>[] = [
    {
      id: "device",
      header: "Device",
      cell: (e) => <Link to="/devices/$deviceId" params={{ deviceId: e.deviceId }} search={{ tab: "deployments" }}>{e.deviceName}</Link>,
    },
    { id: "batch", header: "Batch", cell: (e) => (e.batchIndex === null ? <span className="faint">none</span> : e.batchIndex === 0 ? "canary" : `batch ${e.batchIndex}`) },
    {
      id: "state",
      header: "State",
      cell: (e) => (
        <span className="row">
          <span className={`badge ${STATE_TONE[e.state]}`}>{e.state}</span>
          {e.attempt > 1 && <span className="faint">attempt {e.attempt}</span>}
          {/* the legend counts a device the batch still waits for apart while it is offline: the table says which */}
          {e.deviceStatus === "offline" && <span className="badge" title="no heartbeat for three intervals">device offline</span>}
        </span>
      ),
    },
    { id: "message", header: "Agent message", cell: (e) => e.message ?? <span className="faint">–</span> },
    // the service's note on the entry: why it skipped, cancelled or superseded it, or who gave it its attempt (not only skips)
    { id: "reason", header: "Service note", cell: (e) => e.reason ?? <span className="faint">–</span> },
    { id: "since", header: "Since", cell: (e) => <RelativeTime value={e.stateChangedAt} /> },
  ];
  return (
    <Card title="Devices" flush id="devices">
      <div className="toolbar">
        <div className="field">
          <label htmlFor="device-state-filter">State</label>
          <select id="device-state-filter" className="select" value={search.state ?? ""} onChange={(e) => setState((e.target.value || undefined) as DeviceState | undefined)}>
            <option value="">Every state</option>
            {DEVICE_STATES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </div>
        <span className="muted" data-testid="device-total">{devices.data ? counted(devices.data.total, "device") : ""}</span>
      </div>
      {/* Page controls only beyond one page. */}
      <QueryTable
        query={devices}
        what="this deployment's devices"
        caption="Devices of this deployment"
        columns={columns}
        rowKey={(e) => e.deviceId}
        loadingRows={5}
        page={(devices.data?.total ?? 0) > PAGE ? { offset, limit: PAGE, onOffset: (o) => void navigate({ search: (prev) => ({ ...prev, offset: o || undefined }), replace: true }) } : undefined}
        pageLabel="Device pages"
        empty={
          search.state ? (
            <Empty title={`No device is ${search.state}`} action={<Button size="small" onClick={() => setState(undefined)}>Show every state</Button>} />
          ) : (
            <Empty title="No device yet">The devices are resolved from the target when the deployment starts.</Empty>
          )
        }
      />
    </Card>
  );
}
