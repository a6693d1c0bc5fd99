// Configuration layers (docs/configuration.md): the organization's default, layers chosen by
// label selector at an order, and device overrides, listed in their order of precedence (the
// lowest first: a later layer's value of a name replaces an earlier one's). A new layer is
// created here (its content is edited on its own page); the preview shows the effective
// configuration of any device.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useNavigate } from "@tanstack/react-router";
import { Plus } from "lucide-react";
import { q } from "../api/query";
import type { RouterInputs, RouterOutputs } from "../api/client";
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
import { useLocalPage } from "../ui/useLocalPage";
import { SelectorInput } from "../devices/SelectorInput";
import { formatSelector, parseSelector } from "../../../src/modules/devices/selector";
import { counted } from "../../../src/lib/plural";
import { DevicePicker } from "./DevicePicker";
import { EffectiveConfig } from "./EffectiveConfig";
import { createFieldOf, KIND_LABELS, precedenceOrder } from "./layer-words";
import "../devices/devices.css";
import "./config-layers.css";
import { ManagedMark } from "../ui/ManagedMark";

export type LayerSummary = RouterOutputs["configLayers"]["list"]["items"][number];
type CreateLayer = RouterInputs["configLayers"]["create"];
type Kind = CreateLayer["kind"];

export function LayersPage() {
  if (!useCan("config:read")) {
    return (
      <>
        <PageHeader title="Configuration layers" description="Variables, files and secrets of devices" />
        <Card><Forbidden what="configuration layers" /></Card>
      </>
    );
  }
  return <LayerList />;
}

/** What a layer applies to, in words. */
export function appliesTo(layer: Pick<LayerSummary, "kind" | "selector" | "deviceId" | "deviceName">) {
  if (layer.kind === "organization") return <span>every device</span>;
  if (layer.kind === "device") {
    return layer.deviceId ? <Link to="/devices/$deviceId" params={{ deviceId: layer.deviceId }}>{layer.deviceName ?? "its device"}</Link> : <span className="faint">its device</span>;
  }
  const text = formatSelector(layer.selector ?? {});
  return text ? <span className="mono">{text}</span> : <span>every device (empty selector)</span>;
}

function LayerList() {
  const canWrite = useCan("config:write");
  // Precedence is across kinds, which the API sorts by name: one page holds every layer an
  // organization normally has, ordered here.
  const page = useLocalPage(200);
  const [creating, setCreating] = useState(false);
  const [previewing, setPreviewing] = useState(false);
  const layers = useQuery({ ...q.configLayers.list.options(page.input), placeholderData: keepPreviousData });
  const columns: Column<LayerSummary>[] = [
    {
      id: "name", header: "Layer",
      cell: (l) => (
        <div className="cell-stack">
          <span className="row">
            <Link to="/config-layers/$layerId" params={{ layerId: l.id }}><strong>{l.name}</strong></Link>
            <ManagedMark resource={l} />
          </span>
          {l.description && <span className="faint">{l.description}</span>}
        </div>
      ),
    },
    { id: "kind", header: "Kind, order", cell: (l) => <span>{KIND_LABELS[l.kind]}{l.order !== null && <> · order <strong>{l.order}</strong></>}</span> },
    { id: "applies", header: "Applies to", cell: appliesTo },
    {
      id: "content", header: "Content",
      cell: (l) => <span className="faint">{counted(l.variableCount, "variable")}, {counted(l.fileCount, "file")}, {counted(l.secretNames.length, "secret")}</span>,
    },
    { id: "revision", header: "Revision", className: "nowrap", cell: (l) => <span>{l.revision}</span> },
    { id: "changed", header: "Changed", className: "nowrap", cell: (l) => <RelativeTime value={l.updatedAt} /> },
  ];
  return (
    <>
      <PageHeader
        title="Configuration layers"
        description="Lowest precedence first: the organization's default, then selector layers by order (the higher wins), then device overrides"
        actions={
          <>
            <Button onClick={() => setPreviewing(true)}>Preview a device</Button>
            {canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>New layer</Button>}
          </>
        }
      />
      <Card flush>
        <QueryTable
          query={layers}
          what="configuration layers"
          caption="Layers by precedence"
          columns={columns}
          rowKey={(l) => l.id}
          rows={(data) => precedenceOrder(data.items)}
          page={page}
          empty={
            <Empty title="No configuration layers yet" action={canWrite && <Button variant="primary" onClick={() => setCreating(true)}>New layer</Button>}>
              A layer holds variables, files and secrets for the devices it applies to: start with the organization's default layer, then add layers for label selectors such as site=berlin.
            </Empty>
          }
        />
      </Card>
      {creating && <NewLayerDialog onClose={() => setCreating(false)} />}
      {previewing && <PreviewDialog onClose={() => setPreviewing(false)} />}
    </>
  );
}

function NewLayerDialog({ onClose }: { onClose: () => void }) {
  const navigate = useNavigate();
  const [name, setName] = useState("");
  const [kind, setKind] = useState<Kind>("selector");
  const [selector, setSelector] = useState("");
  const [order, setOrder] = useState("10");
  const [deviceId, setDeviceId] = useState("");
  const [description, setDescription] = useState("");
  const create = useAction(q.configLayers.create.mutation(), {
    invalidates: [q.configLayers.key()],
    success: (l) => `Layer ${l.name} created (revision 1)`,
    onSuccess: (l) => navigate({ to: "/config-layers/$layerId", params: { layerId: l.id } }),
    fieldOf: createFieldOf,
  });
  // The selector is parsed by the API's own rules here; anything else the API checks and names.
  let parsedSelector: Record<string, string> | undefined;
  let selectorError: string | undefined;
  try {
    parsedSelector = parseSelector(selector);
  } catch (err) {
    selectorError = (err as Error).message;
  }
  const body = (): CreateLayer => ({
    name: name.trim(), kind,
    ...(kind === "selector" ? { selector: parsedSelector ?? {}, order: Number(order) } : {}),
    ...(kind === "device" ? { deviceId } : {}),
    ...(description.trim() ? { description: description.trim() } : {}),
  });
  const errors = create.fieldErrors;
  const fieldProps = (field: string) => errors[field] ? { "aria-invalid": true, "aria-describedby": `layer-${field}-error` } as const : {};
  const problem = (field: string) => errors[field] && <span className="field__error" id={`layer-${field}-error`}>{errors[field]}</span>;
  return (
    <Dialog open onClose={onClose} title="New configuration layer" wide>
      <form className="stack" onSubmit={create.submit(body, { valid: kind !== "selector" || !selectorError })} noValidate>
        <div className="field">
          <label htmlFor="layer-name">Name</label>
          <input id="layer-name" className="input" value={name} onChange={(e) => setName(e.target.value)} placeholder="site-berlin" required {...fieldProps("name")} />
          {problem("name")}
        </div>
        <div className="field">
          <label htmlFor="layer-kind">Kind</label>
          <select id="layer-kind" className="select" value={kind} onChange={(e) => setKind(e.target.value as Kind)} {...fieldProps("kind")}>
            <option value="organization">{KIND_LABELS.organization}: every device, lowest precedence</option>
            <option value="selector">{KIND_LABELS.selector}: the devices a label selector matches, at an order</option>
            <option value="device">{KIND_LABELS.device}: one device, highest precedence</option>
          </select>
          {problem("kind")}
        </div>
        {kind === "selector" && (
          <>
            <SelectorInput id="layer-selector" label="Devices (label selector; empty: every device)" value={selector} onChange={setSelector} />
            {problem("selector")}
            <div className="field">
              <label htmlFor="layer-order">Order (the higher wins)</label>
              <input id="layer-order" className="input" type="number" value={order} onChange={(e) => setOrder(e.target.value)} {...fieldProps("order")} />
              {problem("order")}
            </div>
          </>
        )}
        {kind === "device" && <DevicePicker id="layer-device" label="Device" value={deviceId} onChange={setDeviceId} error={errors.deviceId} />}
        <div className="field">
          <label htmlFor="layer-description">Description</label>
          <input id="layer-description" className="input" maxLength={500} value={description} onChange={(e) => setDescription(e.target.value)} {...fieldProps("description")} />
          {problem("description")}
        </div>
        <p className="faint">Its variables, files, secrets and activation command are edited on the layer's page; each save is a new revision.</p>
        <FormFooter action={create} onCancel={onClose} submitLabel="Create layer" />
      </form>
    </Dialog>
  );
}

/** A device's effective configuration as the layers stand, each value with the layer it came from. */
export function PreviewDialog({ onClose, initialDeviceId = "" }: { onClose: () => void; initialDeviceId?: string }) {
  const [deviceId, setDeviceId] = useState(initialDeviceId);
  return (
    <Dialog open onClose={onClose} title="Preview a device's configuration" wide>
      <div className="stack">
        <DevicePicker id="preview-device" label="Device to preview" value={deviceId} onChange={setDeviceId} />
        {deviceId ? <EffectiveConfig key={deviceId} deviceId={deviceId} title="What the device gets" /> : <p className="faint">Choose a device to see each value it gets and the layer it comes from.</p>}
      </div>
    </Dialog>
  );
}
