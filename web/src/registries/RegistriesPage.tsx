// Registries: the organization's Git and OCI registries (create, edit, enable/disable, delete,
// sync now with what the sync did; OCI also health check and sync history) and, for Super
// Admins, the platform's global OCI registries (priority, mandatory).
import { useState, type ReactNode } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { Activity, History, Pencil, Plus, Power, PowerOff, RefreshCw, Trash2 } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { DataTable, type Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { Pagination } from "../ui/Pagination";
import { Empty, ErrorState, Forbidden, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useToast } from "../ui/toast";
import { formOf, gitBody, globalBody, intervalText, ociBody, type RegistryKind } from "./forms";
import { RegistryDialog } from "./RegistryDialog";
import { GitSyncReport, OciSyncReport, type GitSyncResult, type OciSyncRecord } from "./SyncReports";
import "../applications/applications.css";
import "./registries.css";

type GitRegistry = RouterOutputs["registries"]["git"]["list"]["items"][number];
type OciRegistry = RouterOutputs["registries"]["oci"]["list"]["items"][number];
type GlobalRegistry = RouterOutputs["globalRegistries"]["oci"]["list"]["items"][number];
const PAGE = 25;

export function RegistriesPage() {
  const canRead = useCan("registries:read");
  const session = useSession();
  return (
    <>
      <PageHeader title="Registries" description="Where the catalog's applications come from: Git repositories of manifests and OCI registries of application packages, synced on a schedule or now." />
      {canRead ? (
        <div className="stack">
          <GitRegistries />
          <OciRegistries />
          {session.isSuperAdmin && <GlobalRegistries />}
        </div>
      ) : <Card><Forbidden what="the registries" /></Card>}
    </>
  );
}

function EnabledBadge({ enabled }: { enabled: boolean }) {
  return <span className={`badge badge--${enabled ? "success" : "offline"}`}>{enabled ? "enabled" : "disabled"}</span>;
}

function LastSync({ at, error }: { at?: string | null; error?: string | null }) {
  return (
    <div className="device-name">
      <RelativeTime value={at ?? null} />
      {error && <span className="field__error">{error}</span>}
    </div>
  );
}

/** The write actions every registry row has; `extra` adds a kind's own. */
function RowActions({ name, enabled, onSync, onEdit, onToggle, onDelete, extra }: {
  name: string; enabled: boolean; onSync?: () => Promise<void>; onEdit: () => void; onToggle: () => Promise<void>; onDelete: () => void; extra?: ReactNode;
}) {
  const [busy, setBusy] = useState<"sync" | "toggle" | null>(null);
  const run = (which: "sync" | "toggle", action: () => Promise<void>) => async () => {
    setBusy(which);
    try {
      await action();
    } finally {
      setBusy(null);
    }
  };
  return (
    <div className="row row--wrap">
      {onSync && <Button size="small" icon={<RefreshCw />} busy={busy === "sync"} disabled={!enabled} onClick={run("sync", onSync)}>Sync now<span className="visually-hidden">{name}</span></Button>}
      {extra}
      <Button size="small" icon={<Pencil />} onClick={onEdit} aria-label={`Edit ${name}`} />
      <Button size="small" icon={enabled ? <PowerOff /> : <Power />} busy={busy === "toggle"} onClick={run("toggle", onToggle)} aria-label={`${enabled ? "Disable" : "Enable"} ${name}`} />
      <Button size="small" variant="danger" icon={<Trash2 />} onClick={onDelete} aria-label={`Delete ${name}`} />
    </div>
  );
}

function GitRegistries() {
  const canWrite = useCan("registries:write");
  const queryClient = useQueryClient();
  const toast = useToast();
  const [offset, setOffset] = useState(0);
  const [editing, setEditing] = useState<GitRegistry | "new" | null>(null);
  const [deleting, setDeleting] = useState<GitRegistry | null>(null);
  const [synced, setSynced] = useState<{ name: string; result: GitSyncResult } | null>(null);
  const list = useQuery({ ...q.registries.git.list.options({ limit: PAGE, offset }), placeholderData: keepPreviousData });
  const refresh = () => queryClient.invalidateQueries({ queryKey: q.registries.git.key() });

  const columns: Column<GitRegistry>[] = [
    { id: "name", header: "Name", cell: (r) => <strong>{r.name}</strong> },
    { id: "source", header: "Repository", cell: (r) => <div className="device-name"><span className="mono">{r.url}</span><span className="faint mono">{r.branch} · {r.path}</span></div> },
    { id: "auth", header: "Credential", cell: (r) => r.hasCredentials ? <span>{r.authType === "BASIC" ? "username and password" : "token"} (stored)</span> : <span className="faint">none</span> },
    { id: "state", header: "State", cell: (r) => <EnabledBadge enabled={r.enabled} /> },
    { id: "interval", header: "Schedule", cell: (r) => intervalText(r.syncIntervalMinutes) },
    { id: "lastSync", header: "Last sync", cell: (r) => <LastSync at={r.lastSyncAt} error={r.lastSyncError} /> },
    ...(canWrite ? [{
      id: "actions", header: "Actions", cell: (r: GitRegistry) => (
        <RowActions
          name={r.name}
          enabled={r.enabled}
          onSync={async () => {
            try {
              const result = await q.registries.git.sync.call({ id: r.id });
              setSynced({ name: r.name, result });
              await Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: q.applications.key() })]);
            } catch (err) {
              toast.error(err, `Could not sync ${r.name}`);
            }
          }}
          onEdit={() => setEditing(r)}
          onToggle={async () => {
            try {
              await (r.enabled ? q.registries.git.disable : q.registries.git.enable).call({ id: r.id });
              toast.success(`${r.name} ${r.enabled ? "disabled" : "enabled"}`);
              await refresh();
            } catch (err) {
              toast.error(err, `Could not ${r.enabled ? "disable" : "enable"} ${r.name}`);
            }
          }}
          onDelete={() => setDeleting(r)}
        />
      ),
    }] : []),
  ];

  return (
    <Card title="Git registries" flush actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>Add Git registry</Button>}>
      {list.isError ? <ErrorState error={list.error} what="the Git registries" retry={() => list.refetch()} /> : (
        <>
          <DataTable
            caption="Git registries"
            columns={columns}
            rows={list.data?.items}
            rowKey={(r) => r.id}
            loading={list.isFetching}
            empty={<Empty title="No Git registries">Add a Git repository that holds application manifests; its applications land in the catalog when it syncs.</Empty>}
          />
          <Pagination label="Git registry pages" offset={offset} limit={PAGE} total={list.data?.total} onOffset={setOffset} />
        </>
      )}
      <RegistryDialog
        kind="git"
        open={editing !== null}
        initial={editing && editing !== "new" ? formOf(editing) : null}
        hasCredentials={editing !== null && editing !== "new" && editing.hasCredentials}
        onClose={() => setEditing(null)}
        onSubmit={async (form) => {
          if (editing === "new") await q.registries.git.create.call(gitBody(form));
          else if (editing) await q.registries.git.update.call({ id: editing.id, ...gitBody(form) });
          toast.success(editing === "new" ? `Git registry “${form.name.trim()}” added` : `Git registry “${form.name.trim()}” saved`);
          setEditing(null);
          await refresh();
        }}
      />
      <DeleteRegistry kind="git" registry={deleting} onClose={() => setDeleting(null)} onDeleted={refresh} />
      <Dialog open={synced !== null} onClose={() => setSynced(null)} title={`Sync of “${synced?.name ?? ""}”`} footer={<Button onClick={() => setSynced(null)}>Close</Button>}>
        {synced && <GitSyncReport result={synced.result} />}
      </Dialog>
    </Card>
  );
}

function OciRegistries() {
  const canWrite = useCan("registries:write");
  const queryClient = useQueryClient();
  const toast = useToast();
  const [offset, setOffset] = useState(0);
  const [editing, setEditing] = useState<OciRegistry | "new" | null>(null);
  const [deleting, setDeleting] = useState<OciRegistry | null>(null);
  const [synced, setSynced] = useState<{ name: string; record: OciSyncRecord } | null>(null);
  const [history, setHistory] = useState<OciRegistry | null>(null);
  const list = useQuery({ ...q.registries.oci.list.options({ limit: PAGE, offset }), placeholderData: keepPreviousData });
  const refresh = () => queryClient.invalidateQueries({ queryKey: q.registries.oci.key() });

  const columns: Column<OciRegistry>[] = [
    { id: "name", header: "Name", cell: (r) => <div className="device-name"><strong>{r.name}</strong>{r.description && <span className="faint">{r.description}</span>}</div> },
    { id: "url", header: "Registry", cell: (r) => <div className="device-name"><span className="mono">{r.url}</span><span className="faint mono">{r.repositories.join(", ") || "no repositories"}</span></div> },
    { id: "health", header: "Health", cell: (r) => <div className="device-name"><span className={`badge badge--${r.healthStatus === "healthy" ? "success" : r.healthStatus === "unhealthy" ? "danger" : "offline"}`}>{r.healthStatus ?? "unknown"}</span>{r.lastHealthCheck && <span className="faint"><RelativeTime value={r.lastHealthCheck} /></span>}</div> },
    { id: "state", header: "State", cell: (r) => <EnabledBadge enabled={r.enabled} /> },
    { id: "interval", header: "Schedule", cell: (r) => intervalText(r.syncIntervalMinutes) },
    { id: "lastSync", header: "Last sync", cell: (r) => <LastSync at={r.lastSyncAt} error={r.lastSyncError} /> },
    {
      id: "actions", header: "Actions", cell: (r) => !canWrite ? (
        <Button size="small" icon={<History />} onClick={() => setHistory(r)} aria-label={`Sync history of ${r.name}`}>History</Button>
      ) : (
        <RowActions
          name={r.name}
          enabled={r.enabled}
          onSync={async () => {
            try {
              const record = await q.registries.oci.sync.call({ id: r.id });
              setSynced({ name: r.name, record });
              await Promise.all([refresh(), queryClient.invalidateQueries({ queryKey: q.applications.key() })]);
            } catch (err) {
              toast.error(err, `Could not sync ${r.name}`);
            }
          }}
          extra={<>
            <Button size="small" icon={<Activity />} onClick={async () => {
              try {
                const health = await q.registries.oci.healthCheck.call({ id: r.id });
                if (health.healthStatus === "healthy") toast.success(`${r.name} is healthy (${health.responseTimeMs} ms)`);
                else toast.error(new Error(health.message ?? `HTTP ${health.httpStatus ?? "no answer"}`), `${r.name} is ${health.healthStatus}`);
                await refresh();
              } catch (err) {
                toast.error(err, `Could not check ${r.name}`);
              }
            }} aria-label={`Check the health of ${r.name}`} />
            <Button size="small" icon={<History />} onClick={() => setHistory(r)} aria-label={`Sync history of ${r.name}`} />
          </>}
          onEdit={() => setEditing(r)}
          onToggle={async () => {
            try {
              await (r.enabled ? q.registries.oci.disable : q.registries.oci.enable).call({ id: r.id });
              toast.success(`${r.name} ${r.enabled ? "disabled" : "enabled"}`);
              await refresh();
            } catch (err) {
              toast.error(err, `Could not ${r.enabled ? "disable" : "enable"} ${r.name}`);
            }
          }}
          onDelete={() => setDeleting(r)}
        />
      ),
    },
  ];

  return (
    <Card title="OCI registries" flush actions={canWrite && <Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>Add OCI registry</Button>}>
      {list.isError ? <ErrorState error={list.error} what="the OCI registries" retry={() => list.refetch()} /> : (
        <>
          <DataTable
            caption="OCI registries"
            columns={columns}
            rows={list.data?.items}
            rowKey={(r) => r.id}
            loading={list.isFetching}
            empty={<Empty title="No OCI registries">Add an OCI registry whose repositories hold application packages.</Empty>}
          />
          <Pagination label="OCI registry pages" offset={offset} limit={PAGE} total={list.data?.total} onOffset={setOffset} />
        </>
      )}
      <RegistryDialog
        kind="oci"
        open={editing !== null}
        initial={editing && editing !== "new" ? formOf(editing) : null}
        hasCredentials={editing !== null && editing !== "new" && editing.hasCredentials}
        onClose={() => setEditing(null)}
        onSubmit={async (form) => {
          if (editing === "new") await q.registries.oci.create.call(ociBody(form));
          else if (editing) await q.registries.oci.update.call({ id: editing.id, ...ociBody(form), description: form.description.trim() || null });
          toast.success(editing === "new" ? `OCI registry “${form.name.trim()}” added` : `OCI registry “${form.name.trim()}” saved`);
          setEditing(null);
          await refresh();
        }}
      />
      <DeleteRegistry kind="oci" registry={deleting} onClose={() => setDeleting(null)} onDeleted={refresh} />
      <Dialog open={synced !== null} onClose={() => setSynced(null)} title={`Sync of “${synced?.name ?? ""}”`} footer={<Button onClick={() => setSynced(null)}>Close</Button>}>
        {synced && <OciSyncReport record={synced.record} />}
      </Dialog>
      <Dialog open={history !== null} onClose={() => setHistory(null)} title={`Sync history of “${history?.name ?? ""}”`} footer={<Button onClick={() => setHistory(null)}>Close</Button>}>
        {history && <OciHistory registryId={history.id} />}
      </Dialog>
    </Card>
  );
}

function OciHistory({ registryId }: { registryId: string }) {
  const [offset, setOffset] = useState(0);
  const history = useQuery({ ...q.registries.oci.syncHistory.options({ id: registryId, limit: 5, offset }), placeholderData: keepPreviousData });
  if (history.isPending) return <Loading />;
  if (history.isError) return <ErrorState error={history.error} retry={() => history.refetch()} />;
  if (history.data.data.length === 0) return <Empty title="No syncs yet">Sync the registry to see what it imports.</Empty>;
  return (
    <div className="stack">
      <ol className="version-list sync-history">{history.data.data.map((r) => <li key={r.id} className="version"><OciSyncReport record={r} /></li>)}</ol>
      <Pagination label="Sync history pages" offset={offset} limit={5} total={history.data.total} onOffset={setOffset} />
    </div>
  );
}

function GlobalRegistries() {
  const queryClient = useQueryClient();
  const toast = useToast();
  const [offset, setOffset] = useState(0);
  const [editing, setEditing] = useState<GlobalRegistry | "new" | null>(null);
  const [deleting, setDeleting] = useState<GlobalRegistry | null>(null);
  const list = useQuery({ ...q.globalRegistries.oci.list.options({ limit: PAGE, offset }), placeholderData: keepPreviousData });
  const refresh = () => queryClient.invalidateQueries({ queryKey: q.globalRegistries.key() });

  const columns: Column<GlobalRegistry>[] = [
    { id: "priority", header: "Priority", className: "num", cell: (r) => r.priority },
    { id: "name", header: "Name", cell: (r) => <div className="device-name"><strong>{r.name}</strong>{r.description && <span className="faint">{r.description}</span>}</div> },
    { id: "url", header: "Registry", cell: (r) => <div className="device-name"><span className="mono">{r.url}</span><span className="faint mono">{r.repositories.join(", ") || "its catalog"}</span></div> },
    { id: "mandatory", header: "Mandatory", cell: (r) => r.mandatory ? <span className="badge badge--accent">mandatory</span> : <span className="faint">optional</span> },
    { id: "state", header: "State", cell: (r) => <EnabledBadge enabled={r.enabled} /> },
    {
      id: "actions", header: "Actions", cell: (r) => (
        <RowActions
          name={r.name}
          enabled={r.enabled}
          onEdit={() => setEditing(r)}
          onToggle={async () => {
            try {
              await q.globalRegistries.oci.update.call({ id: r.id, enabled: !r.enabled });
              toast.success(`${r.name} ${r.enabled ? "disabled" : "enabled"}`);
              await refresh();
            } catch (err) {
              toast.error(err, `Could not ${r.enabled ? "disable" : "enable"} ${r.name}`);
            }
          }}
          onDelete={() => setDeleting(r)}
        />
      ),
    },
  ];

  return (
    <Card title="Global OCI registries" flush actions={<Button variant="primary" icon={<Plus />} onClick={() => setEditing("new")}>Add global registry</Button>}>
      <p className="card-note muted">Super Admin: registries every organization's marketplace store can read, in priority order; mandatory ones are synced for every organization.</p>
      {list.isError ? <ErrorState error={list.error} what="the global registries" retry={() => list.refetch()} /> : (
        <>
          <DataTable
            caption="Global OCI registries"
            columns={columns}
            rows={list.data?.items}
            rowKey={(r) => r.id}
            loading={list.isFetching}
            empty={<Empty title="No global registries">Add one to offer its application packages to the organizations' marketplace stores.</Empty>}
          />
          <Pagination label="Global registry pages" offset={offset} limit={PAGE} total={list.data?.total} onOffset={setOffset} />
        </>
      )}
      <RegistryDialog
        kind="global"
        open={editing !== null}
        initial={editing && editing !== "new" ? formOf(editing) : null}
        hasCredentials={editing !== null && editing !== "new" && editing.hasCredentials}
        onClose={() => setEditing(null)}
        onSubmit={async (form) => {
          if (editing === "new") await q.globalRegistries.oci.create.call(globalBody(form));
          else if (editing) await q.globalRegistries.oci.update.call({ id: editing.id, ...globalBody(form), description: form.description.trim() || null });
          toast.success(editing === "new" ? `Global registry “${form.name.trim()}” added` : `Global registry “${form.name.trim()}” saved`);
          setEditing(null);
          await refresh();
        }}
      />
      <DeleteRegistry kind="global" registry={deleting} onClose={() => setDeleting(null)} onDeleted={refresh} />
    </Card>
  );
}

const DELETE_TEXT: Record<RegistryKind, string> = {
  git: "Its applications stay in the catalog; it is no longer synced.",
  oci: "Its applications stay in the catalog; it is no longer synced, and its sync history goes with it.",
  global: "No organization's marketplace store reads it any more. Applications already imported stay in their catalogs.",
};

function DeleteRegistry({ kind, registry, onClose, onDeleted }: { kind: RegistryKind; registry: { id: string; name: string } | null; onClose: () => void; onDeleted: () => Promise<unknown> }) {
  const toast = useToast();
  const remove = { git: q.registries.git.delete, oci: q.registries.oci.delete, global: q.globalRegistries.oci.delete }[kind];
  return (
    <ConfirmDialog
      open={registry !== null}
      onClose={onClose}
      title={`Delete “${registry?.name ?? ""}”?`}
      confirmLabel="Delete registry"
      onConfirm={async () => {
        await remove.call({ id: registry!.id });
        toast.success(`Registry “${registry!.name}” deleted`);
        await onDeleted();
      }}
    >
      <p>{DELETE_TEXT[kind]}</p>
    </ConfirmDialog>
  );
}
