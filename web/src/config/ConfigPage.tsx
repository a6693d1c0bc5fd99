// Configuration: fleet as code (docs/config-as-code.md). The organization's config sources (a
// Git repository, branch and folder of documents) with the commit each applied last, its last
// sync and why; add a source, sync one now (the plan's diff first, SyncDialog), allow its
// prune guard once, delete it. Each source's page has its resources and its sync history.
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { Plus } from "lucide-react";
import { q } from "../api/query";
import { useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useFormFields } from "../ui/useFormFields";
import { shortCommit } from "../ui/ManagedMark";
import { AuthTypeField, BranchPathFields, CredentialField } from "../registries/GitConnectionFields";
import { SourceActions, useConfigAccess } from "./SourceActions";
import { EMPTY_SOURCE, sourceBody, sourceProblems, type ConfigSource, type SourceForm } from "./source-form";
import "./config.css";

const DESCRIPTION = "Deployments, alert rules, notification targets, roles and registries declared in Git, planned and applied by the service.";

export function ConfigPage() {
  const { canRead, canWrite } = useConfigAccess();
  const [adding, setAdding] = useState(false);
  return (
    <>
      <PageHeader title="Configuration" description={DESCRIPTION} actions={canRead && canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setAdding(true)}>Add config source</Button>} />
      {canRead ? <SourceList canWrite={canWrite} onAdd={() => setAdding(true)} /> : <Card><Forbidden what="the config sources (they need the read permission of deployments, alerts, roles and registries)" /></Card>}
      {adding && <SourceDialog onClose={() => setAdding(false)} />}
    </>
  );
}

/** The last sync: applied, refused or failed, why, and when. */
export function LastSync({ source }: { source: ConfigSource }) {
  if (!source.lastSyncStatus) return <span className="faint">never synced</span>;
  const tone = source.lastSyncStatus === "applied" ? "success" : "danger";
  return (
    <div className="stacked-cell">
      <span className="row row--nowrap"><span className={`badge badge--${tone}`}>{source.lastSyncStatus}</span><RelativeTime value={source.lastSyncAt} /></span>
      {source.lastSyncMessage && <span className={source.lastSyncStatus === "applied" ? "faint" : "field__error"}>{source.lastSyncMessage}</span>}
    </div>
  );
}

export function AppliedCommit({ source }: { source: ConfigSource }) {
  if (!source.lastAppliedCommit) return <span className="faint">nothing applied yet</span>;
  return (
    <div className="stacked-cell">
      <span className="mono" title={source.lastAppliedCommit}>{shortCommit(source.lastAppliedCommit)}</span>
      <RelativeTime value={source.lastAppliedAt} />
    </div>
  );
}

function SourceList({ canWrite, onAdd }: { canWrite: boolean; onAdd: () => void }) {
  const session = useSession();
  const sources = useQuery(q.config.sourcesList.options({ orgId: session.organization.id }));
  const columns: Column<ConfigSource>[] = [
    {
      id: "name", header: "Source", cell: (s) => (
        <div className="stacked-cell">
          <Link to="/config/sources/$sourceId" params={{ sourceId: s.id }}><strong>{s.name}</strong></Link>
          <span className="faint">owner mark <span className="mono">{s.owner}</span></span>
        </div>
      ),
    },
    { id: "repository", header: "Repository", cell: (s) => <div className="stacked-cell"><span className="mono">{s.url}</span><span className="faint mono">{s.branch} · {s.path}</span></div> },
    { id: "applied", header: "Last applied", className: "nowrap", cell: (s) => <AppliedCommit source={s} /> },
    { id: "sync", header: "Last sync", cell: (s) => <LastSync source={s} /> },
    ...(canWrite ? [{ id: "actions", header: "Actions", cell: (s: ConfigSource) => <SourceActions source={s} /> }] : []),
  ];
  return (
    <Card flush>
      <QueryTable
        query={sources}
        what="the config sources"
        caption="Config sources"
        columns={columns}
        rowKey={(s) => s.id}
        loadingRows={3}
        empty={
          <Empty title="No config sources yet" action={canWrite && <Button variant="primary" onClick={onAdd}>Add a config source</Button>}>
            A config source is a Git repository, branch and folder of YAML documents. Each sync plans them and applies them in one transaction; what it applies is marked as managed and cannot be changed here.
          </Empty>
        }
      />
    </Card>
  );
}

function SourceDialog({ onClose }: { onClose: () => void }) {
  const session = useSession();
  const { form, set, valid, id, problem, described, showProblems } = useFormFields<SourceForm>(EMPTY_SOURCE, "source", sourceProblems);
  const create = useAction({ mutationFn: (body: ReturnType<typeof sourceBody>) => q.config.sourcesCreate.call({ orgId: session.organization.id, ...body }) }, {
    invalidates: [q.config.key()],
    success: (s) => `Config source “${s.name}” added: sync it to apply its documents`,
    onSuccess: onClose,
  });
  return (
    <Dialog open onClose={onClose} title="Add a config source">
      <form className="stack" onSubmit={create.submit(() => sourceBody(form), { valid, onInvalid: showProblems })} noValidate>
        <div className="field">
          <label htmlFor={id("name")}>Name</label>
          <input id={id("name")} className="input" value={form.name} maxLength={100} onChange={(e) => set("name", e.target.value)} {...described("name")} />
          <span className="field__hint">The owner mark of what it applies (source:name); it cannot be changed later.</span>
          {problem("name")}
        </div>
        <div className="field">
          <label htmlFor={id("url")}>Repository URL</label>
          <input id={id("url")} className="input mono" value={form.url} placeholder="https://git.example.com/fleet-config.git" onChange={(e) => set("url", e.target.value)} {...described("url")} />
          {problem("url")}
        </div>
        <BranchPathFields
          id={id} branch={form.branch} path={form.path} onBranch={(v) => set("branch", v)} onPath={(v) => set("path", v)}
          described={described("branch")} problem={problem("branch")} pathLabel="Folder" pathHint="Every *.yaml and *.yml below it is read."
        />
        <div className="grid grid--2">
          <AuthTypeField id={id("auth")} value={form.authType} onChange={(v) => set("authType", v)} />
          <div className="field">
            <label htmlFor={id("poll")}>Poll interval (seconds)</label>
            <input id={id("poll")} className="input" type="number" min={0} max={86_400} value={form.pollIntervalSeconds} onChange={(e) => set("pollIntervalSeconds", e.target.value)} {...described("pollIntervalSeconds")} />
            <span className="field__hint">0: only sync now and the webhook.</span>
            {problem("pollIntervalSeconds")}
          </div>
        </div>
        <CredentialField id={id("credential")} authType={form.authType} value={form.credential} onChange={(v) => set("credential", v)} described={described("credential")} problem={problem("credential")} />
        <fieldset className="stack stack--tight">
          <legend>What a sync may do</legend>
          <label className="row"><input type="checkbox" checked={form.adopt} onChange={(e) => set("adopt", e.target.checked)} /> Adopt resources of the same name that nobody manages as code yet</label>
          <label className="row"><input type="checkbox" checked={form.prune} onChange={(e) => set("prune", e.target.checked)} /> Prune: delete what the source applied and Git no longer holds</label>
          {form.prune && (
            <div className="field">
              <label htmlFor={id("pruneLimit")}>Prune guard: at most this many deletions per sync</label>
              <input id={id("pruneLimit")} className="input" type="number" min={0} max={10_000} value={form.pruneLimit} onChange={(e) => set("pruneLimit", e.target.value)} {...described("pruneLimit")} />
              <span className="field__hint">A sync that would delete more is refused until someone allows it once.</span>
              {problem("pruneLimit")}
            </div>
          )}
        </fieldset>
        <FormFooter action={create} onCancel={onClose} submitLabel="Add config source" />
      </form>
    </Dialog>
  );
}
