// A device's effective configuration (GET /config-layers/effective): each variable and file with
// the layer@revision it came from and the layers below it overrode, secrets named and never
// shown (the API answers no value for them), the activations, and whether the device applied
// it: in sync, failed with its reason, or drifted files with Restore (POST /config-layers/restore)
// or Keep (POST /config-layers/accept: the device's content into its override layer).
import { Link } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { Check, RotateCcw } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import { DataTable, type Column } from "../ui/DataTable";
import { Empty, ErrorState, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { counted } from "../../../src/lib/plural";
// .cell-stack (a cell of stacked lines) is the device list's
import "../devices/devices.css";
import "./config-layers.css";

export type Effective = RouterOutputs["configLayers"]["effective"];
type Variable = Effective["variables"][number];
type File = Effective["files"][number];
type Source = { layerId: string; layer: string; revision: number };

/** `layer@revision`, linking to the layer's page. */
export function SourceLink({ source }: { source: Source }) {
  return <Link to="/config-layers/$layerId" params={{ layerId: source.layerId }} className="mono">{source.layer}@{source.revision}</Link>;
}

function Overrode({ layers }: { layers: Source[] }) {
  if (!layers.length) return <span className="faint">nothing</span>;
  return <span className="cell-stack">{layers.map((l) => <SourceLink key={`${l.layerId}@${l.revision}`} source={l} />)}</span>;
}

const variableColumns: Column<Variable>[] = [
  { id: "name", header: "Variable", cell: (v) => <span className="mono">{v.name}</span> },
  {
    id: "value", header: "Value",
    cell: (v) => (v.secret ? <span className="badge badge--accent" title="A secret's value is never shown">secret, set</span> : <span className="mono config-value">{v.value}</span>),
  },
  { id: "from", header: "From", cell: (v) => <SourceLink source={v} /> },
  { id: "overrode", header: "Overrode", cell: (v) => <Overrode layers={v.overrode} /> },
];

const fileColumns: Column<File>[] = [
  { id: "path", header: "File", cell: (f) => <span className="mono">{f.path}</span> },
  { id: "mode", header: "Mode, owner", cell: (f) => <span className="mono">{f.mode} {f.owner ?? "root"}</span> },
  {
    id: "content", header: "Content",
    cell: (f) => f.secret ? <span className="badge badge--accent">takes in a secret: not shown</span>
      : f.binary ? <span className="faint">binary, {counted(f.sizeBytes, "byte")}</span>
      : <pre className="config-file-content">{f.content}</pre>,
  },
  { id: "from", header: "From", cell: (f) => <SourceLink source={f} /> },
  { id: "overrode", header: "Overrode", cell: (f) => <Overrode layers={f.overrode} /> },
];

/** Whether the device runs this configuration: in sync, failed with its reason, drifted, or not reported. */
function AppliedState({ effective, deviceId }: { effective: Effective; deviceId: string }) {
  const canWrite = useCan("config:write");
  const restore = useAction(q.configLayers.restore.mutation(), {
    invalidates: [q.configLayers.effective.key()],
    success: (r) => `The device rewrites ${counted(r.paths.length, "file")} with its next heartbeat`,
    failure: "Could not restore the files",
  });
  // the device's own content kept instead: written into its override layer as a new revision
  const accept = useAction(q.configLayers.accept.mutation(), {
    invalidates: [q.configLayers.key()],
    success: (a) => `Kept the device's ${counted(a.paths.length, "file")} in layer ${a.layer} (revision ${a.revision}${a.created ? ", created" : ""})`,
    failure: "Could not accept the device's files",
  });
  const r = effective.reported;
  const drift = r?.drift ?? [];
  return (
    <div className="stack" role="status" aria-label="Applied on the device">
      {effective.inSync && !drift.length && <p className="alert-box alert-box--success"><span><strong>In sync:</strong> the device applied this configuration (<span className="mono">{effective.revision.slice(0, 12)}</span>), reported <RelativeTime value={r?.reportedAt} />.</span></p>}
      {!effective.inSync && r?.state === "failed" && (
        <p className="alert-box alert-box--error"><span><strong>Failed on the device:</strong> {r.message ?? "no reason given"}{r.appliedRevision && <> · it keeps <span className="mono">{r.appliedRevision.slice(0, 12)}</span></>}</span></p>
      )}
      {!effective.inSync && r?.state === "unrenderable" && <p className="alert-box alert-box--error"><span><strong>Not delivered:</strong> {r.message}</span></p>}
      {!effective.inSync && r?.state !== "failed" && r?.state !== "unrenderable" && (
        <p className="alert-box alert-box--info"><span><strong>Not applied yet:</strong> the device gets revision <span className="mono">{effective.revision.slice(0, 12)}</span> with its next heartbeat{r?.appliedRevision ? <>; it runs <span className="mono">{r.appliedRevision.slice(0, 12)}</span></> : r ? "" : "; it never reported a configuration"}.</span></p>
      )}
      {drift.length > 0 && (
        <div className="alert-box alert-box--warning">
          <div className="stack stack--tight">
            <p><strong>Drifted:</strong> {counted(drift.length, "file")} changed on the device by hand{effective.inSync ? " (it applied this configuration otherwise)" : ""}.</p>
            <ul aria-label="Drifted files">{drift.map((d) => <li key={d.path} className="mono">{d.path}{d.sha256 === null && " (removed)"}</li>)}</ul>
            {canWrite && (
              <div className="row">
                <Button icon={<RotateCcw />} busy={restore.isPending} disabled={accept.isPending} onClick={() => void restore.run({ deviceId })}>Restore the drifted files</Button>
                <Button icon={<Check />} busy={accept.isPending} disabled={restore.isPending} onClick={() => void accept.run({ deviceId })}>Keep the device's files as its override</Button>
              </div>
            )}
          </div>
        </div>
      )}
    </div>
  );
}

export function EffectiveConfigView({ effective, deviceId, showState = true }: { effective: Effective; deviceId: string; showState?: boolean }) {
  if (!effective.layers.length) {
    return (
      <Empty title="No configuration" action={<Link className="btn" to="/config-layers">Configuration layers</Link>}>
        No layer applies to this device: the organization has no default layer and no selector layer matches its labels.
      </Empty>
    );
  }
  return (
    <div className="stack">
      {showState && <AppliedState effective={effective} deviceId={deviceId} />}
      <p className="faint" aria-label="Layers that apply">
        Layers, lowest precedence first: {effective.layers.map((l, i) => <span key={l.layerId}>{i > 0 && " → "}<SourceLink source={l} /> <span className="faint">({l.kind}{l.order !== null ? ` ${l.order}` : ""})</span></span>)}
      </p>
      <DataTable caption="Effective variables" columns={variableColumns} rows={effective.variables} rowKey={(v) => v.name} empty={<p className="faint">No variables.</p>} />
      <DataTable caption="Effective files" columns={fileColumns} rows={effective.files} rowKey={(f) => f.path} empty={<p className="faint">No files.</p>} />
      {effective.activations.length > 0 && (
        <ul aria-label="Activations" className="faint">
          {effective.activations.map((a) => <li key={a.layer}>after its files change, layer {a.layer} runs <span className="mono">{a.command.join(" ")}</span></li>)}
        </ul>
      )}
    </div>
  );
}

/** The device page's Configuration tab and the preview's body: loads and shows the effective view. */
export function EffectiveConfig({ deviceId, title = "Effective configuration", showState = true }: { deviceId: string; title?: string; showState?: boolean }) {
  // The device's report arrives with a heartbeat, which no realtime event announces: read again
  // while it has not applied this configuration.
  const effective = useQuery({
    ...q.configLayers.effective.options({ deviceId }),
    retry: false,
    refetchInterval: (query) => (query.state.data && !query.state.data.inSync ? 5000 : false),
  });
  return (
    <Card title={title}>
      {effective.isPending ? <Loading label="Loading the configuration" />
        : effective.isError ? <ErrorState error={effective.error} what="the effective configuration" retry={() => void effective.refetch()} />
        : <EffectiveConfigView effective={effective.data} deviceId={deviceId} showState={showState} />}
    </Card>
  );
}
