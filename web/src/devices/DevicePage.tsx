// One device: its facts and status (live), labels edited in place, rename, release of the
// reported-device-id claim, delete; then tabs for what it reports and what happened to it.
// The open tab and its filters live in the URL.
import { Suspense, useState, type ReactNode } from "react";
import { Link, useNavigate, useParams, useSearch } from "@tanstack/react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { Pencil, Trash2, Unlink } from "lucide-react";
import { statusOf } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { useRealtimeEvents } from "../app/realtime";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { ErrorState, Loading } from "../ui/states";
import { StatusBadge } from "../ui/StatusBadge";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { DeviceActionsMenu } from "./DeviceActionsMenu";
import { LabelChips } from "./LabelChips";
import { SystemCard } from "./SystemCard";
import { LabelsEditor, labelsOfRows, rowsOfLabels, type LabelRow } from "./LabelsEditor";
import { DEVICE_TABS, type DeviceTab } from "./search";
import { DEVICE_TAB_PANELS } from "./tabs";
import type { Device } from "./types";
import "./devices.css";

export function DevicePage() {
  const { deviceId } = useParams({ from: "/app/devices/$deviceId" });
  const search = useSearch({ from: "/app/devices/$deviceId" });
  const queryClient = useQueryClient();
  const device = useQuery(q.devices.get.options({ id: deviceId }));
  // Once the device is deleted, its panels unmount at once: their queries (telemetry every
  // minute, logs, activity) would otherwise ask for it again (404s) until the page is left.
  const [deleted, setDeleted] = useState(false);

  // Its status as it changes, without waiting for the fleet-wide refresh.
  useRealtimeEvents((event) => {
    if (event.type === "device.status_changed" && event.data.deviceId === deviceId) {
      void queryClient.invalidateQueries({ queryKey: q.devices.get.key({ id: deviceId }) });
    }
  });

  if (device.isPending || deleted) return <Loading label="Loading the device" />;
  if (device.isError) {
    // A stale link (a deleted device) still leads somewhere: back to the table. Asking again
    // would not bring a deleted device back, so a 404 offers the way back instead of a retry.
    const gone = statusOf(device.error) === 404;
    return (
      <>
        <PageHeader breadcrumb={<Link to="/devices">Devices</Link>} title={gone ? "Device not found" : "Device"} />
        <ErrorState
          error={device.error}
          what="this device"
          retry={gone ? undefined : () => device.refetch()}
          action={gone && <Link className="btn" to="/devices">Back to devices</Link>}
        />
      </>
    );
  }
  const d = device.data;
  const tabs = DEVICE_TABS.filter((t) => t in DEVICE_TAB_PANELS);
  const tab: DeviceTab = search.tab && tabs.includes(search.tab) ? search.tab : tabs[0];
  const Panel = DEVICE_TAB_PANELS[tab]!;
  return (
    <>
      <PageHeader
        breadcrumb={<Link to="/devices">Devices</Link>}
        title={<span className="row">{d.name} <StatusBadge status={d.status} />{d.admission === "pending" && <Link to="/enrollment-requests" className="badge badge--warning">awaiting approval</Link>}{d.attestation === "tpm" && <span className="badge badge--success" title="Its key is held by a TPM the service attested at enrollment">TPM attested</span>}</span>}
        description={<>Last seen <RelativeTime value={d.lastSeenAt} /> · status since <RelativeTime value={d.statusChangedAt ?? d.createdAt} /></>}
        actions={<><DeviceActionsMenu device={d} /><DeviceActions device={d} onDeleted={() => setDeleted(true)} /></>}
      />
      {d.status === "error" && (
        <p className="alert-box alert-box--error" role="status" aria-label="Why the device is in error">
          <strong>Error:</strong> {d.statusReason ?? "the device reports an error without saying why; its logs may tell."}
        </p>
      )}
      <div className="device-top">
        <FactsCard device={d} />
        <LabelsCard device={d} />
      </div>
      <SystemCard device={d} />
      <div className="tabs" role="tablist" aria-label="Device details">
        {tabs.map((t) => (
          <Link key={t} to="/devices/$deviceId" params={{ deviceId }} search={{ tab: t }} role="tab" aria-selected={t === tab} className="tab" replace>
            {TAB_LABELS[t]}
          </Link>
        ))}
      </div>
      <div role="tabpanel" aria-label={TAB_LABELS[tab]}>
        {/* A tab's code loads on first opening: only the panel waits for it, not the page. */}
        <Suspense fallback={<Loading label={`Loading ${TAB_LABELS[tab].toLowerCase()}`} />}>
          <Panel device={d} />
        </Suspense>
      </div>
    </>
  );
}

const TAB_LABELS: Record<DeviceTab, string> = {
  telemetry: "Telemetry",
  logs: "Logs",
  activity: "Activity",
  certificates: "Certificates",
  deployments: "Deployments",
  configuration: "Configuration",
  terminal: "Terminal",
  sessions: "Sessions",
};

function Fact({ label, children }: { label: string; children: ReactNode }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children ?? <span className="faint">unknown</span>}</dd>
    </>
  );
}

function FactsCard({ device: d }: { device: Device }) {
  return (
    <Card title="Facts">
      <dl className="facts">
        <Fact label="Reported device id">{d.reportedDeviceId && <span className="mono">{d.reportedDeviceId}{!d.claimActive && <span className="badge">claim released</span>}</span>}</Fact>
        <Fact label="Operating system">{d.os}</Fact>
        <Fact label="Architecture">{d.arch}</Fact>
        <Fact label="Agent version">{d.agentVersion}</Fact>
        <Fact label="Hardware model">{d.hardwareModel}</Fact>
        <Fact label="Address">{d.ipAddress && <span className="mono">{d.ipAddress}</span>}</Fact>
        <Fact label="Enrolled">{d.enrolledAt && <time dateTime={d.enrolledAt} title={formatDateTime(d.enrolledAt)}>{formatDateTime(d.enrolledAt)}</time>}</Fact>
        <Fact label="Last seen"><RelativeTime value={d.lastSeenAt} /></Fact>
        <Fact label="Device id"><span className="mono faint">{d.id}</span></Fact>
      </dl>
    </Card>
  );
}

function LabelsCard({ device: d }: { device: Device }) {
  const canWrite = useCan("devices:write");
  const [editing, setEditing] = useState<LabelRow[] | null>(null);
  const parsed = editing ? labelsOfRows(editing) : null;
  // Groups select devices by label: their member counts change too.
  const save = useAction(q.devices.update.mutation(), {
    invalidates: [q.devices.key(), q.groups.key()],
    success: "Labels saved",
    onSuccess: () => setEditing(null),
  });

  return (
    <Card
      title="Labels"
      actions={canWrite && !editing && <Button size="small" icon={<Pencil />} onClick={() => { save.reset(); setEditing(rowsOfLabels(d.labels)); }}>Edit labels</Button>}
    >
      {editing ? (
        <form className="stack" onSubmit={save.submit(() => ({ id: d.id, labels: parsed?.ok ? parsed.labels : {} }), { valid: !!parsed?.ok })} aria-label="Labels of this device">
          <LabelsEditor rows={editing} onChange={setEditing} legend="Labels of this device" />
          <FormFooter action={save} inline={false} onCancel={() => setEditing(null)} disabled={!parsed?.ok} submitLabel="Save labels" />
        </form>
      ) : (
        <LabelChips labels={d.labels} />
      )}
    </Card>
  );
}

function DeviceActions({ device: d, onDeleted }: { device: Device; onDeleted: () => void }) {
  const canWrite = useCan("devices:write");
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const [dialog, setDialog] = useState<"rename" | "release" | "delete" | null>(null);
  const [name, setName] = useState(d.name);
  const rename = useAction(q.devices.update.mutation(), {
    invalidates: [q.devices.key()],
    success: (renamed) => `Renamed to ${renamed.name}`,
    onSuccess: () => setDialog(null),
  });
  const release = useAction({ mutationFn: () => q.devices.releaseClaim.call({ id: d.id }) }, { invalidates: [q.devices.key()], success: "Claim released" });
  const remove = useAction({ mutationFn: () => q.devices.delete.call({ id: d.id }) }, {
    success: `${d.name} deleted`,
    onSuccess: async () => {
      onDeleted();
      // Leave the page first: while it is mounted, its query of the deleted device is
      // active, and dropping or invalidating it would fetch it again (a 404).
      await navigate({ to: "/devices" });
      queryClient.removeQueries({ queryKey: q.devices.get.key({ id: d.id }) });
      await queryClient.invalidateQueries({ queryKey: q.devices.list.key() });
    },
  });
  if (!canWrite) return null;

  return (
    <>
      <Button icon={<Pencil />} onClick={() => { setName(d.name); rename.reset(); setDialog("rename"); }}>Rename</Button>
      {d.reportedDeviceId && d.claimActive && <Button icon={<Unlink />} onClick={() => setDialog("release")}>Release claim</Button>}
      <Button variant="danger" icon={<Trash2 />} onClick={() => setDialog("delete")}>Delete</Button>

      <Dialog open={dialog === "rename"} onClose={() => setDialog(null)} title="Rename device">
        <form className="stack" onSubmit={rename.submit(() => ({ id: d.id, name: name.trim() }))}>
          <div className="field">
            <label htmlFor="device-name">Name</label>
            <input id="device-name" className="input" maxLength={200} value={name} onChange={(e) => setName(e.target.value)} />
          </div>
          <FormFooter action={rename} onCancel={() => setDialog(null)} disabled={!name.trim() || name.trim() === d.name} submitLabel="Rename" />
        </form>
      </Dialog>

      <ConfirmDialog
        open={dialog === "release"}
        onClose={() => setDialog(null)}
        title="Release the reported-device-id claim?"
        confirmLabel="Release claim"
        danger={false}
        action={release}
      >
        <p>
          New hardware may then enroll as <code>{d.reportedDeviceId}</code> (a replaced unit). This device keeps its record, its history and its
          certificates; it can still connect.
        </p>
      </ConfirmDialog>

      <ConfirmDialog
        open={dialog === "delete"}
        onClose={() => setDialog(null)}
        title={`Delete ${d.name}?`}
        confirmLabel="Delete device"
        action={remove}
      >
        <p>The device is removed from the fleet and its certificates are revoked: it can no longer connect until it enrolls again. Its telemetry, logs and history are deleted. This cannot be undone.</p>
      </ConfirmDialog>
    </>
  );
}
