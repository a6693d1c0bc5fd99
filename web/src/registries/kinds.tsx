// The three registry kinds as specs of one RegistrySection: what each lists, its columns, how it
// is written, and its own extras (OCI: health check and sync history; global: priority and
// mandatory, enabled through update, no sync). The shared columns are defined once here.
import type { ReactNode } from "react";
import { keepPreviousData, useQuery, type QueryKey } from "@tanstack/react-query";
import { Activity, History } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import type { Column } from "../ui/DataTable";
import { Pagination } from "../ui/Pagination";
import { Empty, ErrorState, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { ManagedMark } from "../ui/ManagedMark";
import { useToast } from "../ui/toast";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { gitBody, globalBody, intervalText, ociBody, type RegistryForm, type RegistryKind } from "./forms";
import { GitSyncReport, OciSyncReport } from "./SyncReports";

export type GitRegistry = RouterOutputs["registries"]["git"]["list"]["items"][number];
export type OciRegistry = RouterOutputs["registries"]["oci"]["list"]["items"][number];
export type GlobalRegistry = RouterOutputs["globalRegistries"]["oci"]["list"]["items"][number];
export type RegistryRow = GitRegistry | OciRegistry | GlobalRegistry;

export interface RegistryKindSpec<R extends RegistryRow> {
  kind: RegistryKind;
  title: string;
  addLabel: string;
  /** in toasts: "Git registry “x” added" */
  noun: string;
  /** in the error state: "the Git registries" */
  what: string;
  pageLabel: string;
  empty: ReactNode;
  note?: ReactNode;
  deleteText: string;
  /** the key prefix a write invalidates */
  key: QueryKey;
  list: (page: { limit: number; offset: number }) => { queryKey: QueryKey; queryFn: (context: { signal: AbortSignal }) => Promise<{ items: R[]; total: number }> };
  columns: Column<R>[];
  create: (form: RegistryForm) => Promise<unknown>;
  update: (registry: R, form: RegistryForm) => Promise<unknown>;
  setEnabled: (registry: R, enabled: boolean) => Promise<unknown>;
  remove: (registry: R) => Promise<unknown>;
  /** only the credential (what the ownership guard lets through for a registry managed as code) */
  setCredential?: (registry: R, credential: string) => Promise<unknown>;
  /** sync now; resolves to the sync's report */
  sync?: (registry: R) => Promise<ReactNode>;
  extraActions?: (registry: R) => ReactNode;
  /** a dialog about one registry, also for those who cannot write */
  detail?: { icon: ReactNode; short: string; label: (name: string) => string; title: (name: string) => string; body: (registry: R) => ReactNode };
}

function EnabledBadge({ enabled }: { enabled: boolean }) {
  return <span className={`badge badge--${enabled ? "success" : "offline"}`}>{enabled ? "enabled" : "disabled"}</span>;
}

const nameColumn = <R extends RegistryRow>(): Column<R> => ({
  id: "name", header: "Name", cell: (r) => {
    const name = "managedBy" in r ? <span className="row row--nowrap"><strong>{r.name}</strong><ManagedMark resource={r} /></span> : <strong>{r.name}</strong>;
    return "description" in r ? <div className="stacked-cell">{name}{r.description && <span className="faint">{r.description}</span>}</div> : name;
  },
});
const urlColumn = <R extends OciRegistry | GlobalRegistry>(none: string): Column<R> => ({
  id: "url", header: "Registry", cell: (r) => <div className="stacked-cell"><span className="mono">{r.url}</span><span className="faint mono">{r.repositories.join(", ") || none}</span></div>,
});
const stateColumn = <R extends RegistryRow>(): Column<R> => ({ id: "state", header: "State", cell: (r) => <EnabledBadge enabled={r.enabled} /> });
const scheduleColumns = <R extends GitRegistry | OciRegistry>(): Column<R>[] => [
  { id: "interval", header: "Schedule", cell: (r) => intervalText(r.syncIntervalMinutes) },
  {
    id: "lastSync", header: "Last sync", cell: (r) => (
      <div className="stacked-cell">
        <RelativeTime value={r.lastSyncAt ?? null} />
        {r.lastSyncError && <span className="field__error">{r.lastSyncError}</span>}
      </div>
    ),
  },
];

export const GIT: RegistryKindSpec<GitRegistry> = {
  kind: "git",
  title: "Git registries",
  addLabel: "Add Git registry",
  noun: "Git registry",
  what: "the Git registries",
  pageLabel: "Git registry pages",
  empty: <Empty title="No Git registries">Add a Git repository that holds application manifests; its applications land in the catalog when it syncs.</Empty>,
  deleteText: "Its applications stay in the catalog; it is no longer synced.",
  key: q.registries.git.key(),
  list: (page) => q.registries.git.list.options(page),
  columns: [
    nameColumn(),
    { id: "source", header: "Repository", cell: (r) => <div className="stacked-cell"><span className="mono">{r.url}</span><span className="faint mono">{r.branch} · {r.path}</span></div> },
    { id: "auth", header: "Credential", cell: (r) => r.hasCredentials ? <span>{r.authType === "BASIC" ? "username and password" : "token"} (stored)</span> : <span className="faint">none</span> },
    stateColumn(),
    ...scheduleColumns<GitRegistry>(),
  ],
  create: (form) => q.registries.git.create.call(gitBody(form)),
  update: (r, form) => q.registries.git.update.call({ id: r.id, ...gitBody(form) }),
  setEnabled: (r, enabled) => (enabled ? q.registries.git.enable : q.registries.git.disable).call({ id: r.id }),
  remove: (r) => q.registries.git.delete.call({ id: r.id }),
  setCredential: (r, credential) => q.registries.git.update.call({ id: r.id, credential }),
  sync: async (r) => <GitSyncReport result={await q.registries.git.sync.call({ id: r.id })} />,
};

const healthBadge = (status: string | null | undefined) => `badge badge--${status === "healthy" ? "success" : status === "unhealthy" ? "danger" : "offline"}`;

function HealthCheck({ registry }: { registry: OciRegistry }) {
  const toast = useToast();
  const check = useAction({ mutationFn: () => q.registries.oci.healthCheck.call({ id: registry.id }) }, {
    invalidates: [q.registries.oci.key()],
    failure: `Could not check ${registry.name}`,
    onSuccess: (health) => {
      if (health.healthStatus === "healthy") toast.success(`${registry.name} is healthy (${health.responseTimeMs} ms)`);
      else toast.error(new Error(health.message ?? `HTTP ${health.httpStatus ?? "no answer"}`), `${registry.name} is ${health.healthStatus}`);
    },
  });
  return <Button size="small" icon={<Activity />} busy={check.isPending} onClick={() => void check.run()} aria-label={`Check the health of ${registry.name}`} />;
}

function OciHistory({ registryId }: { registryId: string }) {
  const page = useLocalPage(5);
  const history = useQuery({ ...q.registries.oci.syncHistory.options({ id: registryId, ...page.input }), placeholderData: keepPreviousData });
  if (history.isPending) return <Loading />;
  if (history.isError) return <ErrorState error={history.error} retry={() => history.refetch()} />;
  if (history.data.data.length === 0) return <Empty title="No syncs yet">Sync the registry to see what it imports.</Empty>;
  return (
    <div className="stack">
      <ol className="version-list sync-history">{history.data.data.map((r) => <li key={r.id} className="version"><OciSyncReport record={r} /></li>)}</ol>
      <Pagination label="Sync history pages" offset={page.offset} limit={page.limit} total={history.data.total} onOffset={page.onOffset} />
    </div>
  );
}

export const OCI: RegistryKindSpec<OciRegistry> = {
  kind: "oci",
  title: "OCI registries",
  addLabel: "Add OCI registry",
  noun: "OCI registry",
  what: "the OCI registries",
  pageLabel: "OCI registry pages",
  empty: <Empty title="No OCI registries">Add an OCI registry whose repositories hold application packages.</Empty>,
  deleteText: "Its applications stay in the catalog; it is no longer synced, and its sync history goes with it.",
  key: q.registries.oci.key(),
  list: (page) => q.registries.oci.list.options(page),
  columns: [
    nameColumn(),
    urlColumn("no repositories"),
    { id: "health", header: "Health", cell: (r) => <div className="stacked-cell"><span className={healthBadge(r.healthStatus)}>{r.healthStatus ?? "unknown"}</span>{r.lastHealthCheck && <span className="faint"><RelativeTime value={r.lastHealthCheck} /></span>}</div> },
    stateColumn(),
    ...scheduleColumns<OciRegistry>(),
  ],
  create: (form) => q.registries.oci.create.call(ociBody(form)),
  update: (r, form) => q.registries.oci.update.call({ id: r.id, ...ociBody(form), description: form.description.trim() || null }),
  setEnabled: (r, enabled) => (enabled ? q.registries.oci.enable : q.registries.oci.disable).call({ id: r.id }),
  remove: (r) => q.registries.oci.delete.call({ id: r.id }),
  setCredential: (r, credential) => q.registries.oci.update.call({ id: r.id, credential }),
  sync: async (r) => <OciSyncReport record={await q.registries.oci.sync.call({ id: r.id })} />,
  extraActions: (r) => <HealthCheck registry={r} />,
  detail: {
    icon: <History />,
    short: "History",
    label: (name) => `Sync history of ${name}`,
    title: (name) => `Sync history of “${name}”`,
    body: (r) => <OciHistory registryId={r.id} />,
  },
};

export const GLOBAL: RegistryKindSpec<GlobalRegistry> = {
  kind: "global",
  title: "Global OCI registries",
  addLabel: "Add global registry",
  noun: "Global registry",
  what: "the global registries",
  pageLabel: "Global registry pages",
  empty: <Empty title="No global registries">Add one to offer its application packages to the organizations' marketplace stores.</Empty>,
  note: <p className="card-note muted">Super Admin: registries every organization's marketplace store can read, in priority order; mandatory ones are synced for every organization.</p>,
  deleteText: "No organization's marketplace store reads it any more. Applications already imported stay in their catalogs.",
  key: q.globalRegistries.key(),
  list: (page) => q.globalRegistries.oci.list.options(page),
  columns: [
    { id: "priority", header: "Priority", className: "num", cell: (r) => r.priority },
    nameColumn(),
    urlColumn("its catalog"),
    { id: "mandatory", header: "Mandatory", cell: (r) => r.mandatory ? <span className="badge badge--accent">mandatory</span> : <span className="faint">optional</span> },
    stateColumn(),
  ],
  create: (form) => q.globalRegistries.oci.create.call(globalBody(form)),
  update: (r, form) => q.globalRegistries.oci.update.call({ id: r.id, ...globalBody(form), description: form.description.trim() || null }),
  setEnabled: (r, enabled) => q.globalRegistries.oci.update.call({ id: r.id, enabled }),
  remove: (r) => q.globalRegistries.oci.delete.call({ id: r.id }),
};
