// Rolling back a group: every device a label selector (or the deployment's picked devices)
// matches goes back to the last version of the application that ran successfully on it. The
// dry run comes first and shows, per device, from which version to which or why not; the
// real run is one more click on that report, and its result replaces it. Opened from a
// deployment (its application given) or from the Groups page (the application chosen here).
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { SelectorInput, selectorProblem } from "../devices/SelectorInput";
import { parseSelector } from "../../../src/modules/devices/selector";
import { Button } from "../ui/Button";
import { DataTable, type Column } from "../ui/DataTable";
import { Dialog } from "../ui/Dialog";
import { ErrorBox } from "../ui/states";
import { useAction } from "../ui/useAction";
import { counted } from "../../../src/lib/plural";

type Report = RouterOutputs["rollback"]["group"];
type Outcome = Report["devices"][number];
type Target = { labelSelector: Record<string, string> } | { deviceIds: string[] };

export function GroupRollbackDialog({ application, initialTarget, onClose }: {
  /** the application to roll back; absent: the person chooses it in the dialog */
  application?: { id: string; name: string };
  initialTarget: Target;
  onClose: () => void;
}) {
  const applications = useQuery({ ...q.applications.list.options({ limit: 200, offset: 0 }), enabled: !application });
  const [chosenId, setChosenId] = useState("");
  const chosen = application ?? applications.data?.items.map((a) => ({ id: a.id, name: a.name })).find((a) => a.id === chosenId);
  const picked = "deviceIds" in initialTarget ? initialTarget.deviceIds : null;
  const [selector, setSelector] = useState("labelSelector" in initialTarget ? Object.entries(initialTarget.labelSelector).map(([k, v]) => `${k}=${v}`).join(",") : "");
  const [dryRun, setDryRun] = useState<Report | null>(null);
  const [done, setDone] = useState<Report | null>(null);
  const problem = !chosen ? "Choose an application" : picked ? null : selector.trim() === "" ? "Name at least one label" : selectorProblem(selector);

  const target = (): Target => (picked ? { deviceIds: picked } : { labelSelector: parseSelector(selector) });

  // The dry run and the real one are one procedure (dryRun says which); only the real one changes anything.
  const tryIt = useAction(q.rollback.group.mutation(), { onSuccess: setDryRun });
  const rollBack = useAction(q.rollback.group.mutation(), {
    invalidates: [q.deployments.key(), q.rollback.key()],
    success: (report) => `${counted(report.rolledBack, "device")} rolled back`,
    onSuccess: setDone,
  });
  const busy = tryIt.isPending ? "dry" : rollBack.isPending ? "real" : null;
  const error = tryIt.error ?? rollBack.error;
  function run(dry: boolean) {
    // One refusal at a time: the last attempt's.
    (dry ? rollBack : tryIt).reset();
    void (dry ? tryIt : rollBack).run({ ...target(), applicationId: chosen!.id, dryRun: dry });
  }

  const shown = done ?? dryRun;
  return (
    <Dialog
      open
      onClose={onClose}
      title={application ? `Roll back ${application.name}` : "Roll back an application"}
      footer={
        done ? (
          <Button variant="primary" onClick={onClose}>Close</Button>
        ) : (
          <>
            <Button onClick={onClose} disabled={busy !== null}>Cancel</Button>
            <Button onClick={() => run(true)} busy={busy === "dry"} disabled={problem !== null || busy === "real"}>Dry run</Button>
            {dryRun && (
              <Button variant="danger" onClick={() => run(false)} busy={busy === "real"} disabled={dryRun.rolledBack === 0 || busy === "dry"}>
                Roll back {counted(dryRun.rolledBack, "device")}
              </Button>
            )}
          </>
        )
      }
    >
      <div className="stack">
        {!application && (
          <div className="field">
            <label htmlFor="rollback-application">Application</label>
            <select id="rollback-application" className="select" value={chosenId} onChange={(e) => { setChosenId(e.target.value); setDryRun(null); }}>
              <option value="">Choose an application</option>
              {applications.data?.items.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
            </select>
            {applications.isError && <ErrorBox error={applications.error} />}
          </div>
        )}
        <p>
          Each matched device that ran {chosen?.name ?? "the application"} goes back to the last version that ran successfully on it: a rollback deployment of that version
          replaces the one it runs now. The dry run shows what would happen and changes nothing.
        </p>
        {picked ? (
          <p>Devices: the {counted(picked.length, "device")} this deployment names.</p>
        ) : (
          <SelectorInput id="rollback-selector" label="Devices (label selector)" value={selector} onChange={(v) => { setSelector(v); setDryRun(null); }} />
        )}
        {/* Not a FormFooter: the dialog's footer holds two actions (dry run, roll back), the refusal of either shows here. */}
        {error != null && <ErrorBox error={error} />}
        {shown && <RollbackReport report={shown} />}
      </div>
    </Dialog>
  );
}

export function RollbackReport({ report }: { report: Report }) {
  const columns: Column<Outcome>[] = [
    { id: "device", header: "Device", cell: (o) => <Link to="/devices/$deviceId" params={{ deviceId: o.deviceId }} search={{ tab: "deployments" }}>{o.deviceName}</Link> },
    {
      id: "change",
      header: report.dryRun ? "Would go" : "Went",
      cell: (o) => (o.status === "rolled_back" ? <span>from <code>{o.fromVersion ?? "none"}</code> to <code>{o.toVersion}</code></span> : <span className="faint">stays on <code>{o.fromVersion ?? "none"}</code></span>),
    },
    {
      id: "why",
      header: "Outcome",
      cell: (o) => (o.status === "rolled_back" ? <span className="badge badge--success">{report.dryRun ? "will roll back" : "rolled back"}</span> : <span><span className="badge badge--warning">no target</span> {o.reason}</span>),
    },
  ];
  return (
    <div className="stack stack--tight">
      <p role="status" data-testid="rollback-summary">
        {report.dryRun ? "Dry run: " : "Done: "}
        {counted(report.matched, "device")} ran it; {report.rolledBack} {report.dryRun ? "would be" : "were"} rolled back, {report.withoutTarget} without a version to go back to.
      </p>
      <DataTable
        caption={report.dryRun ? "Dry run of the rollback, per device" : "Rollback result, per device"}
        columns={columns}
        rows={report.devices}
        rowKey={(o) => o.deviceId}
        empty={<p className="muted card__body">No matched device ever ran this application.</p>}
      />
    </div>
  );
}
