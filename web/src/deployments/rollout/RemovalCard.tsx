// The removal a stop or delete asks of the devices, followed until each confirmed it: how
// many confirmed, which have not yet (first), and the way to finish without them (force),
// with what that leaves behind. The counts move with the devices' reports (the page refreshes
// every query of the deployment on its realtime events).
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { AlertTriangle } from "lucide-react";
import type { RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useCan } from "../../app/session";
import { Progress } from "../../ui/charts";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import { DataTable, type Column } from "../../ui/DataTable";
import { ConfirmDialog } from "../../ui/Dialog";
import { Pagination } from "../../ui/Pagination";
import { ErrorState } from "../../ui/states";
import { RelativeTime } from "../../ui/time";
import { useToast } from "../../ui/toast";
import { STATE_TONE } from "./labels";

type Deployment = RouterOutputs["deployments"]["get"];
type RemovalDevice = RouterOutputs["deployments"]["removalStatus"]["devices"][number];

const PAGE = 25;

export function RemovalCard({ deployment, onDeleted }: { deployment: Deployment; onDeleted: () => void }) {
  const canWrite = useCan("deployments:write");
  const queryClient = useQueryClient();
  const toast = useToast();
  const [offset, setOffset] = useState(0);
  const [forcing, setForcing] = useState(false);
  const removal = useQuery({ ...q.deployments.removalStatus.options({ id: deployment.id, limit: PAGE, offset }), placeholderData: keepPreviousData });
  const deleting = deployment.status === "deleting";
  const waiting = deployment.status === "stopping" || deleting;

  async function force() {
    if (deleting) {
      await q.deployments.delete.call({ id: deployment.id, force: "true" });
      queryClient.removeQueries({ queryKey: q.deployments.key() });
      onDeleted();
      toast.success(`Deployment ${deployment.name} deleted without waiting for its devices`);
    } else {
      await q.deployments.stop.call({ id: deployment.id, force: true });
      toast.success(`Deployment ${deployment.name} stopped without waiting for its devices`);
      await queryClient.invalidateQueries({ queryKey: q.deployments.key() });
    }
  }

  const columns: Column<RemovalDevice>[] = [
    { id: "device", header: "Device", cell: (d) => <Link to="/devices/$deviceId" params={{ deviceId: d.deviceId }} search={{ tab: "deployments" }}>{d.deviceName}</Link> },
    { id: "confirmed", header: "Removal", cell: (d) => (d.confirmed ? <span className="badge badge--success">confirmed</span> : <span className="badge badge--warning">awaited</span>) },
    { id: "state", header: "State", cell: (d) => <span className={`badge ${STATE_TONE[d.state]}`}>{d.state}</span> },
    { id: "message", header: "Agent message", cell: (d) => d.message ?? <span className="faint">–</span> },
    { id: "since", header: "Since", cell: (d) => <RelativeTime value={d.stateChangedAt} /> },
  ];
  const r = removal.data;
  return (
    <Card title="Removal" flush id="removal">
      <div className="card__body stack">
        {removal.isError ? (
          <ErrorState error={removal.error} what="the removal" retry={() => removal.refetch()} />
        ) : (
          <>
            <p data-testid="removal-summary" role="status">
              {!r
                ? "Reading the removal…"
                : waiting
                  ? `${r.confirmed} of ${r.total} devices confirmed the removal; ${r.awaiting} awaited. The deployment is ${deleting ? "deleted" : "stopped"} once every device confirmed.`
                  : `Removal complete: ${r.confirmed} of ${r.total} devices confirmed it; the deployment is ${deployment.status}.`}
            </p>
            {r && <Progress value={r.confirmed} max={Math.max(r.total, 1)} label="Devices that confirmed the removal" />}
            {canWrite && waiting && (
              <div className="row">
                <Button variant="danger" icon={<AlertTriangle />} onClick={() => setForcing(true)}>{deleting ? "Force delete" : "Force stop"}</Button>
                <span className="muted">Finishes now without waiting for the devices that have not confirmed.</span>
              </div>
            )}
          </>
        )}
      </div>
      {r && r.total > 0 && (
        <>
          <DataTable caption="Devices asked to remove the application, awaited first" columns={columns} rows={r.devices} rowKey={(d) => d.deviceId} loading={removal.isFetching && !r} />
          {r.total > PAGE && <Pagination label="Removal pages" offset={offset} limit={PAGE} total={r.total} onOffset={setOffset} />}
        </>
      )}
      <ConfirmDialog
        open={forcing}
        onClose={() => setForcing(false)}
        title={deleting ? `Delete ${deployment.name} without waiting?` : `Stop ${deployment.name} without waiting?`}
        confirmLabel={deleting ? "Force delete" : "Force stop"}
        onConfirm={force}
      >
        <div className="alert-box alert-box--warning">
          <AlertTriangle aria-hidden="true" />
          <p>
            {r?.awaiting ?? "Some"} device{r?.awaiting === 1 ? " has" : "s have"} not confirmed the removal. They are no longer told to remove {deployment.applicationName}, and a device
            that has not removed it yet may keep running it without the service knowing.
          </p>
        </div>
        <p>{deleting ? "The deployment is deleted now." : "The deployment is stopped now."}</p>
      </ConfirmDialog>
    </Card>
  );
}
