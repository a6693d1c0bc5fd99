// One configuration layer: its content (variables, files, secrets, activation) edited as a
// whole and saved as a new revision with a comment; secrets are write-only (the API answers
// their names, never a value: the editor shows "set" and takes a replacement); the revision
// history with who, when and why, each earlier revision one Roll back away; delete.
import { useState, type ReactNode } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import { Eye, Plus, RotateCcw, Save, Trash2, X } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { splitRefusal, statusOf } from "../api/client";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { ErrorState, Forbidden, Loading } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { isManaged, ManagedGate, ManagedMark } from "../ui/ManagedMark";
import { appliesTo, PreviewDialog } from "./LayersPage";
import { draftChanged, draftOf, draftProblems, patchOf, type FileRow, type LayerDraft } from "./draft";
import { contentFieldOf, KIND_LABELS } from "./layer-words";
import { NO_ROLLOUT, rolloutFieldOf, RolloutFields, rolloutOf, rolloutProblems, type RolloutDraft } from "./RolloutFields";
import "../devices/devices.css";
import "./config-layers.css";

type Layer = RouterOutputs["configLayers"]["get"];
type Revision = RouterOutputs["configLayers"]["revisions"]["items"][number];

export function LayerPage() {
  const { layerId } = useParams({ from: "/app/config-layers/$layerId" });
  const canRead = useCan("config:read");
  const layer = useQuery({ ...q.configLayers.get.options({ id: layerId }), enabled: canRead, retry: (n, err) => statusOf(err) !== 404 && n < 2 });
  const header = <Link to="/config-layers">Configuration layers</Link>;
  if (!canRead) return <><PageHeader breadcrumb={header} title="Configuration layer" /><Card><Forbidden what="configuration layers" /></Card></>;
  if (layer.isPending) return <Loading label="Loading the layer" />;
  if (layer.isError) {
    return (
      <>
        <PageHeader breadcrumb={header} title="Configuration layer" />
        <ErrorState error={layer.error} what="the layer" retry={statusOf(layer.error) === 404 ? undefined : () => void layer.refetch()}
          action={<Link className="btn" to="/config-layers">Back to the layers</Link>} />
      </>
    );
  }
  // A new revision (a save, a rollback) starts the editor again from what is now in effect.
  return <LayerView key={`${layerId}@${layer.data.revision}`} layer={layer.data} />;
}

function LayerView({ layer }: { layer: Layer }) {
  // a layer managed as code is changed in its documents: the API refuses the console's edits (409)
  const canWrite = useCan("config:write") && !isManaged(layer);
  const navigate = useNavigate();
  const [deleting, setDeleting] = useState(false);
  const [previewing, setPreviewing] = useState(false);
  const remove = useAction({ mutationFn: () => q.configLayers.delete.call({ id: layer.id }) }, {
    invalidates: [q.configLayers.key()],
    success: `Layer ${layer.name} deleted`,
    onSuccess: () => navigate({ to: "/config-layers" }),
  });
  return (
    <>
      <PageHeader
        breadcrumb={<Link to="/config-layers">Configuration layers</Link>}
        title={layer.name}
        description={<><ManagedMark resource={layer} /> {KIND_LABELS[layer.kind]}{layer.order !== null && <> at order {layer.order}</>} · applies to {appliesTo(layer)} · revision {layer.revision}, changed <RelativeTime value={layer.updatedAt} /></>}
        actions={
          <>
            <Button icon={<Eye />} onClick={() => setPreviewing(true)}>Preview a device</Button>
            <ManagedGate resource={layer}>
              {canWrite && <Button variant="danger" icon={<Trash2 />} onClick={() => setDeleting(true)}>Delete layer</Button>}
            </ManagedGate>
          </>
        }
      />
      <div className="stack">
        {layer.description && <p className="faint">{layer.description}</p>}
        {layer.rollout && (
          <p className="alert-box alert-box--info" role="status" aria-label="Rollout">
            <span>
              <strong>Rolling out in stages:</strong> revision {layer.rollout.revision} ({layer.rollout.state === "paused" ? "paused" : "in progress"}); devices not reached yet get revision {layer.releasedRevision}.{" "}
              <Link to="/jobs/$jobId" params={{ jobId: layer.rollout.jobId }}>Open the rollout job</Link>
            </span>
          </p>
        )}
        <ContentEditor layer={layer} canWrite={canWrite} />
        <RevisionHistory layer={layer} canWrite={canWrite} />
      </div>
      <ConfirmDialog open={deleting} onClose={() => setDeleting(false)} title={`Delete layer ${layer.name}?`} confirmLabel={`Delete layer ${layer.name}`} action={remove}>
        <p>Its {layer.revision} revisions go with it. The devices it applies to lose its variables, files and secrets with their next heartbeat (the layers below take over).</p>
      </ConfirmDialog>
      {previewing && <PreviewDialog onClose={() => setPreviewing(false)} initialDeviceId={layer.deviceId ?? ""} />}
    </>
  );
}

function ContentEditor({ layer, canWrite }: { layer: Layer; canWrite: boolean }) {
  const before = layer.content;
  const [draft, setDraft] = useState<LayerDraft>(() => draftOf(before));
  const [saving, setSaving] = useState(false);
  const [serverErrors, setServerErrors] = useState<Record<string, string>>({});
  const problems = draftProblems(draft);
  const changed = draftChanged(draft, before);
  const edit = (change: (d: LayerDraft) => LayerDraft) => setDraft((d) => change(d));
  const setRow = <K extends "variables" | "files" | "secrets">(list: K, i: number, row: Partial<LayerDraft[K][number]>) => {
    edit((d) => ({ ...d, [list]: d[list].map((r, j) => (j === i ? { ...r, ...row } : r)) }));
    // the API's refusal of this row is answered by changing it
    setServerErrors((errors) => Object.fromEntries(Object.entries(errors).filter(([key]) => !key.startsWith(`${list}.${i}.`))));
  };
  const removeRow = (list: "variables" | "files" | "secrets", i: number) => {
    edit((d) => ({ ...d, [list]: d[list].filter((_, j) => j !== i) }));
    // the rows after it move up: a refusal's row number no longer names them
    setServerErrors({});
  };
  const readOnly = !canWrite;
  const errors = { ...problems, ...serverErrors };
  const err = (key: string) => errors[key] && <span className="field__error" id={`cfg-${key.replaceAll(".", "-")}-error`}>{errors[key]}</span>;
  const aria = (key: string) => errors[key] ? { "aria-invalid": true, "aria-describedby": `cfg-${key.replaceAll(".", "-")}-error` } as const : {};
  return (
    <>
      <Card title={`Content (revision ${layer.revision})`} actions={canWrite && (
        <>
          {changed && <Button onClick={() => { setDraft(draftOf(before)); setServerErrors({}); }}>Discard changes</Button>}
          <Button variant="primary" icon={<Save />} disabled={!changed || Object.keys(problems).length > 0} onClick={() => setSaving(true)}>Save as a new revision</Button>
        </>
      )}>
        <div className="stack">
          <fieldset className="stack config-fieldset" disabled={readOnly}>
            <legend><h3>Variables</h3></legend>
            <div className="config-rows">
              {draft.variables.map((v, i) => (
                <div className="config-row" key={i} role="group" aria-label={`Variable ${v.name || i + 1}`}>
                  <div className="field">
                    <label htmlFor={`var-${i}-name`}>Name</label>
                    <input id={`var-${i}-name`} className="input mono" value={v.name} onChange={(e) => setRow("variables", i, { name: e.target.value })} {...aria(`variables.${i}.name`)} />
                    {err(`variables.${i}.name`)}
                  </div>
                  <div className="field">
                    <label htmlFor={`var-${i}-value`}>Value</label>
                    <input id={`var-${i}-value`} className="input mono" value={v.value} onChange={(e) => setRow("variables", i, { value: e.target.value })} placeholder="mqtt://{{ device.labels.site }}.example:1883" />
                  </div>
                  {canWrite && <Button icon={<X />} aria-label={`Remove variable ${v.name || i + 1}`} onClick={() => removeRow("variables", i)} />}
                </div>
              ))}
              {!draft.variables.length && <p className="faint">No variables.</p>}
            </div>
            {canWrite && <div><Button icon={<Plus />} onClick={() => edit((d) => ({ ...d, variables: [...d.variables, { name: "", value: "" }] }))}>Add variable</Button></div>}
          </fieldset>

          <fieldset className="stack config-fieldset" disabled={readOnly}>
            <legend><h3>Files</h3></legend>
            <div className="config-rows">
              {draft.files.map((f, i) => <FileEditor key={i} index={i} file={f} onChange={(row) => setRow("files", i, row)} onRemove={canWrite ? () => removeRow("files", i) : undefined} err={err} aria={aria} />)}
              {!draft.files.length && <p className="faint">No files.</p>}
            </div>
            {canWrite && <div><Button icon={<Plus />} onClick={() => edit((d) => ({ ...d, files: [...d.files, { path: "", content: "", contentBase64: null, mode: "0644", owner: "", template: true }] }))}>Add file</Button></div>}
          </fieldset>

          <fieldset className="stack config-fieldset" disabled={readOnly}>
            <legend><h3>Secrets</h3></legend>
            <p className="faint">Sealed at rest and never shown again, here or anywhere: a secret is set or not. Type a value to replace one.</p>
            <div className="config-rows">
              {draft.secrets.map((s, i) => (
                <div className="config-row" key={i} role="group" aria-label={`Secret ${s.name || i + 1}`}>
                  <div className="field">
                    <label htmlFor={`secret-${i}-name`}>Name</label>
                    <input id={`secret-${i}-name`} className="input mono" value={s.name} readOnly={s.stored} onChange={(e) => setRow("secrets", i, { name: e.target.value })} {...aria(`secrets.${i}.name`)} />
                    {err(`secrets.${i}.name`)}
                  </div>
                  <div className="field">
                    <label htmlFor={`secret-${i}-value`}>{s.stored ? `Replace ${s.name}` : "Value"}</label>
                    {/* never filled from the API: it has no value to give */}
                    <input id={`secret-${i}-value`} className="input" type="password" autoComplete="new-password" value={s.value} disabled={s.removed}
                      onChange={(e) => setRow("secrets", i, { value: e.target.value })} placeholder={s.stored ? "set (type to replace)" : ""} {...aria(`secrets.${i}.value`)} />
                    {err(`secrets.${i}.value`)}
                  </div>
                  {s.stored && <span className={s.removed ? "badge badge--danger" : "badge badge--success"}>{s.removed ? "to be removed" : s.value ? "to be replaced" : "set"}</span>}
                  {canWrite && (s.stored
                    ? <Button onClick={() => setRow("secrets", i, { removed: !s.removed, value: "" })}>{s.removed ? `Keep ${s.name}` : `Remove secret ${s.name}`}</Button>
                    : <Button icon={<X />} aria-label={`Remove secret ${s.name || i + 1}`} onClick={() => removeRow("secrets", i)} />)}
                </div>
              ))}
              {!draft.secrets.length && <p className="faint">No secrets.</p>}
            </div>
            {canWrite && <div><Button icon={<Plus />} onClick={() => edit((d) => ({ ...d, secrets: [...d.secrets, { name: "", stored: false, value: "", removed: false }] }))}>Add secret</Button></div>}
          </fieldset>

          <fieldset className="stack config-fieldset" disabled={readOnly}>
            <legend><h3>Activation</h3></legend>
            <div className="field">
              <label htmlFor="cfg-activation">Activation command (run after this layer's files change; no shell)</label>
              <input id="cfg-activation" className="input mono" value={draft.activation} onChange={(e) => edit((d) => ({ ...d, activation: e.target.value }))} placeholder="systemctl reload mosquitto" {...aria("activation")} />
              {err("activation")}
            </div>
          </fieldset>
        </div>
      </Card>
      {saving && <SaveDialog layer={layer} draft={draft} onClose={() => setSaving(false)} onFieldErrors={setServerErrors} />}
    </>
  );
}

function FileEditor({ index: i, file: f, onChange, onRemove, err, aria }: {
  index: number; file: FileRow; onChange: (row: Partial<FileRow>) => void; onRemove?: () => void;
  err: (key: string) => ReactNode; aria: (key: string) => object;
}) {
  const name = f.path || `file ${i + 1}`;
  return (
    <div className="config-file stack" role="group" aria-label={`File ${name}`}>
      <div className="config-row">
        <div className="field">
          <label htmlFor={`file-${i}-path`}>Path</label>
          <input id={`file-${i}-path`} className="input mono" value={f.path} onChange={(e) => onChange({ path: e.target.value })} placeholder="/etc/fleet/mosquitto.conf" {...aria(`files.${i}.path`)} />
          {err(`files.${i}.path`)}
        </div>
        <div className="field">
          <label htmlFor={`file-${i}-mode`}>Mode</label>
          <input id={`file-${i}-mode`} className="input mono" value={f.mode} onChange={(e) => onChange({ mode: e.target.value })} {...aria(`files.${i}.mode`)} />
          {err(`files.${i}.mode`)}
        </div>
        <div className="field">
          <label htmlFor={`file-${i}-owner`}>Owner</label>
          <input id={`file-${i}-owner`} className="input mono" value={f.owner} onChange={(e) => onChange({ owner: e.target.value })} placeholder="root (user or user:group)" {...aria(`files.${i}.owner`)} />
          {err(`files.${i}.owner`)}
        </div>
        {onRemove && <Button icon={<X />} aria-label={`Remove file ${name}`} onClick={onRemove} />}
      </div>
      {f.content !== null ? (
        <div className="field">
          <label htmlFor={`file-${i}-content`}>Content of {name}</label>
          <textarea id={`file-${i}-content`} className="input" value={f.content} onChange={(e) => onChange({ content: e.target.value })} spellCheck={false} {...aria(`files.${i}.content`)} />
          {err(`files.${i}.content`)}
          <label className="checkbox"><input type="checkbox" checked={f.template} onChange={(e) => onChange({ template: e.target.checked })} /> Render {"{{ }}"} templates in it</label>
        </div>
      ) : <p className="faint">Binary content, kept as it is (the API takes a new one as contentBase64).</p>}
    </div>
  );
}

function SaveDialog({ layer, draft, onClose, onFieldErrors }: { layer: Layer; draft: LayerDraft; onClose: () => void; onFieldErrors: (errors: Record<string, string>) => void }) {
  const [comment, setComment] = useState("");
  const [rollout, setRollout] = useState<RolloutDraft>(NO_ROLLOUT);
  // the editor rows that are sent (blank ones are not), to name a refused row by the API's index
  const sent = {
    files: draft.files.flatMap((f, i) => (f.path.trim() ? [i] : [])),
    variables: draft.variables.flatMap((v, i) => (v.name.trim() ? [i] : [])),
  };
  const contentField = contentFieldOf(sent);
  const fieldOf = (message: string, path?: readonly (string | number)[]) => rolloutFieldOf(message, path) ?? contentField(message, path);
  const isEditorField = (key: string) => /^(files|variables|secrets)\.|^activation$/.test(key);
  // a refusal about a row (a file's path, say) is shown at that row in the editor too
  const save = useAction({
    mutationFn: (input: Parameters<typeof q.configLayers.update.call>[0]) => q.configLayers.update.call(input).catch((err: unknown) => {
      const { fields } = splitRefusal(err, fieldOf);
      onFieldErrors(Object.fromEntries(Object.entries(fields).filter(([key]) => isEditorField(key))));
      throw err;
    }),
  }, {
    invalidates: [q.configLayers.key()],
    success: (l) => (l.rollout ? `Layer ${l.name}: revision ${l.revision} saved, rolling out in stages` : `Layer ${l.name}: revision ${l.revision} saved`),
    onSuccess: onClose,
    fieldOf,
  });
  const fieldErrors = save.fieldErrors;
  const outside = Object.keys(fieldErrors).filter(isEditorField);
  const rolloutErrors = { ...Object.fromEntries(Object.entries(fieldErrors).filter(([k]) => !isEditorField(k))), ...rolloutProblems(rollout) };
  return (
    <Dialog open onClose={onClose} title={`Save ${layer.name} as revision ${layer.revision + 1}`} wide>
      <form className="stack" noValidate onSubmit={save.submit(() => {
        onFieldErrors({});
        const staged = rolloutOf(rollout, comment.trim() || undefined);
        return { id: layer.id, ...patchOf(draft, layer.content), ...(comment.trim() ? { comment: comment.trim() } : {}), ...(staged ? { rollout: staged } : {}) };
      }, { valid: Object.keys(rolloutProblems(rollout)).length === 0 })}>
        <div className="field">
          <label htmlFor="save-comment">Comment (why; kept with the revision)</label>
          <input id="save-comment" className="input" maxLength={500} value={comment} onChange={(e) => setComment(e.target.value)} placeholder="new broker for Berlin" />
        </div>
        <RolloutFields value={rollout} onChange={(next) => { save.reset(); setRollout(next); }} errors={rolloutErrors} />
        {!rollout.staged && <p className="faint">The devices this layer applies to get the new revision with their next heartbeat.</p>}
        {outside.length > 0 && <p className="alert-box alert-box--error" role="alert">Refused (marked at the field): {outside.map((k) => fieldErrors[k]).join("; ")}</p>}
        <FormFooter action={save} onCancel={onClose} submitLabel={rollout.staged ? `Save revision ${layer.revision + 1} and roll it out` : `Save revision ${layer.revision + 1}`} />
      </form>
    </Dialog>
  );
}

function RevisionHistory({ layer, canWrite }: { layer: Layer; canWrite: boolean }) {
  const page = useLocalPage(25);
  const revisions = useQuery({ ...q.configLayers.revisions.options({ id: layer.id, ...page.input }), placeholderData: keepPreviousData });
  const who = useAuthors();
  const [rollingBack, setRollingBack] = useState<Revision | null>(null);
  const rollback = useAction({ mutationFn: () => q.configLayers.rollback.call({ id: layer.id, revision: rollingBack!.revision }) }, {
    invalidates: [q.configLayers.key()],
    success: (l) => `Layer ${layer.name} rolled back: revision ${l.revision} has the content of revision ${rollingBack?.revision}`,
  });
  const columns: Column<Revision>[] = [
    {
      id: "revision", header: "Revision",
      cell: (r) => (
        <div className="cell-stack">
          <span className="row">
            <strong>{r.revision}</strong>
            {r.revision === layer.releasedRevision && <span className="badge badge--success">in effect</span>}
            {r.revision === layer.rollout?.revision && <span className="badge badge--accent">rolling out</span>}
          </span>
          {r.restoredFrom !== null && <span className="faint">rollback to {r.restoredFrom}</span>}
        </div>
      ),
    },
    { id: "when", header: "When", className: "nowrap", cell: (r) => <span title={formatDateTime(r.createdAt)}><RelativeTime value={r.createdAt} /></span> },
    { id: "who", header: "Who", cell: (r) => who(r.createdById) },
    { id: "comment", header: "Comment", cell: (r) => r.comment ?? <span className="faint">none</span> },
    {
      id: "content", header: "Content",
      cell: (r) => <span className="faint">{Object.keys(r.variables).length} variables, {r.files.length} files, secrets: {r.secretNames.join(", ") || "none"}</span>,
    },
    ...(canWrite ? [{
      id: "rollback", header: "Roll back", className: "nowrap",
      cell: (r: Revision) => r.revision === layer.revision ? <span className="faint">in effect</span>
        : <Button size="small" icon={<RotateCcw />} onClick={() => setRollingBack(r)}>Roll back to revision {r.revision}</Button>,
    } satisfies Column<Revision>] : []),
  ];
  return (
    <Card title="Revisions" flush>
      <QueryTable query={revisions} what="revisions" caption="Revisions of the layer" columns={columns} rowKey={(r) => String(r.revision)} page={page} empty={<p className="faint">No revisions.</p>} />
      <ConfirmDialog open={rollingBack !== null} onClose={() => setRollingBack(null)} title={`Roll ${layer.name} back to revision ${rollingBack?.revision}?`}
        confirmLabel={`Roll back to revision ${rollingBack?.revision}`} action={rollback} danger={false}>
        <p>Revision {layer.revision + 1} will have the content of revision {rollingBack?.revision} (its secrets too); the history keeps every revision. The devices get it with their next heartbeat.</p>
      </ConfirmDialog>
    </Card>
  );
}

/** A revision's author by name where members may be read; else "you" or the id's start. */
function useAuthors() {
  const session = useSession();
  const canReadMembers = useCan("members:read");
  const members = useQuery({ ...q.members.list.options({ orgId: session.organization.id, limit: 200, offset: 0 }), enabled: canReadMembers });
  const names = new Map(members.data?.items.map((m) => [m.userId, m.name || m.email]) ?? []);
  return (id: string | null) => (id === null ? <span className="faint">unknown</span> : names.get(id) ?? <span className="faint mono" title={id}>{id.slice(0, 8)} (an API key or former member)</span>);
}
