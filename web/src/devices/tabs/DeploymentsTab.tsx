// What the device's desired state holds (its entry in every deployment that targeted it, the
// ones its heartbeat carries first), rolling it back to the last version that ran successfully
// on it (rollback/), and the versions it ran, newest first. Each deployment links to its page
// (stop, delete, the rollout). Progress reports of this device arrive over the realtime
// channel and refresh all three.
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import type { RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { DeviceRollbackCard } from "../../rollback/DeviceRollbackCard";
import { useRealtimeEvents } from "../../app/realtime";
import { Card } from "../../ui/Card";
import { type Column } from "../../ui/DataTable";
import { QueryTable, type Page } from "../../ui/QueryTable";
import { Empty } from "../../ui/states";
import { formatDateTime, RelativeTime } from "../../ui/time";
import type { Device } from "../types";
import { STATE_TONE } from "../../deployments/rollout/labels";
import { deploymentStateText } from "../../../../src/modules/deployments/deployment-state";

type Entry = RouterOutputs["deployments"]["ofDevice"]["items"][number];
type HistoryItem = RouterOutputs["rollback"]["history"]["items"][number];

const PAGE = 25;

export function DeploymentsTab({ device }: { device: Device }) {
  const queryClient = useQueryClient();
  useRealtimeEvents((event) => {
    if (event.type === "deployment.progress" && (event.data as { deviceId?: string }).deviceId === device.id) {
      void queryClient.invalidateQueries({ queryKey: q.deployments.ofDevice.key() });
      void queryClient.invalidateQueries({ queryKey: q.rollback.history.key() });
    }
  });
  return (
    <div className="stack">
      <DesiredStateCard device={device} />
      <DeviceRollbackCard device={device} />
      <VersionHistoryCard device={device} />
    </div>
  );
}

function DesiredStateCard({ device }: { device: Device }) {
  const [offset, setOffset] = useState(0);
  const entries = useQuery({ ...q.deployments.ofDevice.options({ id: device.id, limit: PAGE, offset }), placeholderData: keepPreviousData });
  const columns: Column<Entry>[] = [
    {
      id: "deployment",
      header: "Deployment",
      cell: (e) => (
        <div className="cell-stack">
          <Link to="/deployments/$deploymentId" params={{ deploymentId: e.deploymentId }}><strong>{e.deploymentName}</strong></Link>
          <span className="faint">deployment {deploymentStateText(e.deploymentState)}{e.batchIndex !== null && ` · ${e.batchIndex === 0 ? "canary" : `batch ${e.batchIndex}`}`}</span>
        </div>
      ),
    },
    {
      id: "application",
      header: "Application",
      cell: (e) => (
        <div className="cell-stack">
          <span>{e.applicationName} <code>{e.version}</code></span>
          <span className="faint mono">{e.profileId}</span>
        </div>
      ),
    },
    {
      id: "desired",
      header: "Told to",
      cell: (e) => e.desiredAction
        ? <span className={`badge ${e.desiredAction === "install" ? "badge--accent" : "badge--warning"}`}>{e.desiredAction}</span>
        : <span className="faint" title="Not in the device's desired state">nothing</span>,
    },
    { id: "state", header: "State", cell: (e) => <span className={`badge ${STATE_TONE[e.state]}`}>{e.state}</span> },
    {
      id: "message",
      header: "Message",
      cell: (e) => e.message ?? (e.reason ? <span className="muted">{e.reason}</span> : <span className="faint">–</span>),
    },
    { id: "since", header: "Since", cell: (e) => <RelativeTime value={e.stateChangedAt} /> },
  ];
  return (
    <Card title="Desired state" flush>
      <p className="card-intro muted">
        Every deployment that targets this device. Those it is told to install or remove come first: that is what its next heartbeat receives.
      </p>
      <QueryTable
        query={entries}
        what="this device's deployments"
        caption="Deployments of this device"
        columns={columns}
        rowKey={(e) => e.deploymentId}
        empty={<Empty title="No deployment targets this device">A deployment reaches the device when its label selector matches the device's labels, or when it names the device.</Empty>}
        page={pagedBeyondOne(entries.data?.total, offset, setOffset)}
        pageLabel="Deployment pages"
        loadingRows={3}
      />
    </Card>
  );
}

function VersionHistoryCard({ device }: { device: Device }) {
  const [offset, setOffset] = useState(0);
  const history = useQuery({ ...q.rollback.history.options({ id: device.id, limit: PAGE, offset }), placeholderData: keepPreviousData });
  const columns: Column<HistoryItem>[] = [
    {
      id: "version",
      header: "Version",
      cell: (h) => (
        <div className="cell-stack">
          <span>{h.applicationName ?? <span className="faint">deleted application</span>} <code>{h.version}</code></span>
          <span className="faint mono">{h.profileId}</span>
        </div>
      ),
    },
    {
      id: "outcome",
      header: "Outcome",
      cell: (h) => h.succeeded ? <span className="badge badge--success">succeeded</span> : <span className="badge badge--danger">failed</span>,
    },
    { id: "deployment", header: "Deployment", cell: (h) => h.deploymentName ?? <span className="faint">deleted</span> },
    { id: "message", header: "Message", cell: (h) => h.message ?? <span className="faint">–</span> },
    {
      id: "when",
      header: "Finished",
      cell: (h) => <span title={`Started ${formatDateTime(h.startedAt)}, finished ${formatDateTime(h.finishedAt)}`}><RelativeTime value={h.finishedAt} /></span>,
    },
  ];
  return (
    <Card title="Version history" flush>
      <QueryTable
        query={history}
        what="this device's version history"
        caption="Versions this device ran, newest first"
        columns={columns}
        rowKey={(h) => h.id}
        empty={<Empty title="No version has run on this device yet">Each version a deployment brings is recorded here once the device reports it running or failed.</Empty>}
        page={pagedBeyondOne(history.data?.total, offset, setOffset)}
        pageLabel="Version history pages"
        loadingRows={3}
      />
    </Card>
  );
}

/** Page controls once there is more than one page of PAGE rows. */
function pagedBeyondOne(total: number | undefined, offset: number, onOffset: (offset: number) => void): Page | undefined {
  return (total ?? 0) > PAGE ? { offset, limit: PAGE, onOffset } : undefined;
}
