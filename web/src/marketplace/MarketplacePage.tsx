// The marketplace store: which global registries it reads (beside the mandatory ones),
// enable/disable, sync now with a live progress bar (the progress stream), and its sync history
// with each run's per-product breakdown and skip reasons.
import { useEffect, useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Power, PowerOff, RefreshCw, Settings, Store } from "lucide-react";
import { statusOf, type RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { DataTable, type Column } from "../ui/DataTable";
import { Dialog } from "../ui/Dialog";
import { Pagination } from "../ui/Pagination";
import { FormFooter } from "../ui/FormFooter";
import { Empty, ErrorBox, ErrorState, Forbidden, Loading } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { formatDuration, intervalText } from "../registries/forms";
import { outcomeCounts, progressView } from "./progress";
import { useSyncProgress } from "./useSyncProgress";
import "../applications/applications.css";
import "./marketplace.css";

type StoreDto = RouterOutputs["marketplaceStore"]["get"];
type SyncRecord = RouterOutputs["marketplaceStore"]["syncHistory"]["data"][number];
type Product = SyncRecord["products"][number];
const HISTORY_PAGE = 5;

export function MarketplacePage() {
  const canRead = useCan("registries:read");
  return (
    <>
      <PageHeader title="Marketplace" description="The organization's store: application packages from its OCI registries and the platform's global ones, synced into the catalog." />
      {canRead ? <StoreArea /> : <Card><Forbidden what="the marketplace store" /></Card>}
    </>
  );
}

function StoreArea() {
  const canWrite = useCan("registries:write");
  const setUp = useAction({ mutationFn: () => q.marketplaceStore.put.call({}) }, {
    invalidates: [q.marketplaceStore.key()],
    success: "Marketplace store set up",
    failure: "Could not set up the store",
  });
  // 404 until the store is set up: the page offers to set it up.
  const store = useQuery(q.marketplaceStore.get.options());

  if (store.isPending) return <Card><Loading /></Card>;
  if (store.isError && statusOf(store.error) === 404) {
    return (
      <Card>
        <Empty
          title="No marketplace store yet"
          action={canWrite && (
            <Button variant="primary" icon={<Store />} busy={setUp.isPending} onClick={() => void setUp.run()}>Set up the store</Button>
          )}
        >
          The store syncs the platform's mandatory global registries, and the optional ones you choose, into this organization's catalog.
        </Empty>
      </Card>
    );
  }
  if (store.isError) return <Card><ErrorState error={store.error} what="the marketplace store" retry={() => store.refetch()} /></Card>;
  return <StoreView store={store.data} />;
}

function StoreView({ store }: { store: StoreDto }) {
  const canWrite = useCan("registries:write");
  const [configuring, setConfiguring] = useState(false);
  const { progress, stream } = useSyncProgress(true);
  const running = progress ? progress.state === "queued" || progress.state === "running" : store.syncing;
  const invalidates = [q.marketplaceStore.key()];
  const toggle = useAction({ mutationFn: (enable: boolean) => (enable ? q.marketplaceStore.enable : q.marketplaceStore.disable).call() }, {
    invalidates,
    success: (_, enable) => (enable ? "Store enabled" : "Store disabled"),
    failure: "Could not change the store",
  });
  const sync = useAction({ mutationFn: () => q.marketplaceStore.sync.call() }, { invalidates, success: "Sync queued", failure: "Could not start the sync" });

  return (
    <div className="stack">
      <Card
        title="Store"
        actions={canWrite && <>
          <Button icon={<Settings />} onClick={() => setConfiguring(true)}>Configure</Button>
          <Button
            icon={store.enabled ? <PowerOff /> : <Power />}
            busy={toggle.isPending}
            onClick={() => void toggle.run(!store.enabled)}
          >{store.enabled ? "Disable" : "Enable"}</Button>
          <Button
            variant="primary"
            icon={<RefreshCw />}
            busy={sync.isPending}
            disabled={!store.enabled || running}
            onClick={() => void sync.run()}
          >Sync now</Button>
        </>}
      >
        <div className="stack">
          <dl className="facts">
            <dt>State</dt><dd><span className={`badge badge--${store.enabled ? "success" : "offline"}`}>{store.enabled ? "enabled" : "disabled"}</span></dd>
            <dt>Schedule</dt><dd>{intervalText(store.syncIntervalMinutes)}</dd>
            <dt>Optional registries</dt><dd>{store.includeAllGlobalRegistries ? "every enabled global registry" : `${store.globalRegistryIds.length} chosen`}</dd>
            <dt>Last sync</dt><dd><RelativeTime value={store.lastSyncAt} /></dd>
            {store.lastSyncError && <><dt>Last error</dt><dd className="field__error">{store.lastSyncError}</dd></>}
          </dl>
          <SyncProgressBar progress={progress} stream={stream} />
        </div>
      </Card>
      <Card title="Registries it reads" flush>
        <DataTable
          caption="Registries the store reads, in order"
          columns={SOURCE_COLUMNS}
          rows={store.registries}
          rowKey={(r) => r.id}
          empty={<Empty title="No registries">The platform has no mandatory global registry and none is chosen: configure the store to include some.</Empty>}
        />
      </Card>
      <SyncHistory />
      <ConfigureDialog open={configuring} store={store} onClose={() => setConfiguring(false)} />
    </div>
  );
}

type Source = StoreDto["registries"][number];
const SOURCE_COLUMNS: Column<Source>[] = [
  { id: "order", header: "Order", className: "num", cell: (r) => r.priority ?? "first" },
  { id: "name", header: "Registry", cell: (r) => <strong>{r.name}</strong> },
  { id: "kind", header: "Kind", cell: (r) => r.kind === "tenant" ? "this organization's" : "global" },
  { id: "mandatory", header: "Why it is read", cell: (r) => r.kind === "tenant" ? <span className="faint">always (this organization's)</span> : r.mandatory ? <span className="badge badge--accent">mandatory</span> : <span className="faint">chosen</span> },
];

function SyncProgressBar({ progress, stream }: { progress: ReturnType<typeof useSyncProgress>["progress"]; stream: ReturnType<typeof useSyncProgress>["stream"] }) {
  if (stream.state === "stopped") return <ErrorBox error={stream.error} />;
  if (!progress) return <Loading label="Connecting to the sync progress" />;
  const view = progressView(progress);
  const pct = view.value !== null && view.max > 0 ? (view.value / view.max) * 100 : 0;
  return (
    <div className="sync-progress stack stack--tight">
      <div className="row">
        <strong>Sync progress</strong>
        <span className={`connection connection--${stream.state === "live" ? "live" : "reconnecting"}`}>
          {stream.state === "live" ? "Live" : stream.state === "reconnecting" ? stream.retryInSeconds === null ? "Reconnecting" : `Reconnecting in ${stream.retryInSeconds} s` : "Connecting"}
        </span>
      </div>
      <div
        role="progressbar"
        aria-label="Marketplace sync progress"
        aria-valuemin={0}
        {...(view.value !== null ? { "aria-valuemax": view.max, "aria-valuenow": view.value } : {})}
        aria-valuetext={view.text}
        className={`bar-track${view.value === null && view.active ? " bar-track--indeterminate" : ""}`}
      >
        {view.value !== null && <span className="bar-fill" style={{ width: `${pct}%`, background: progress.state === "failed" ? "var(--danger)" : "var(--chart-2)" }} />}
      </div>
      <p className="muted" aria-live="polite">{view.text}</p>
    </div>
  );
}

function ConfigureDialog({ open, store, onClose }: { open: boolean; store: StoreDto; onClose: () => void }) {
  const session = useSession();
  const [interval, setIntervalText] = useState(String(store.syncIntervalMinutes));
  const [includeAll, setIncludeAll] = useState(store.includeAllGlobalRegistries);
  const [chosen, setChosen] = useState<Set<string>>(new Set(store.globalRegistryIds));
  const save = useAction(q.marketplaceStore.put.mutation(), {
    invalidates: [q.marketplaceStore.key()],
    success: "Store configuration saved",
    onSuccess: onClose,
  });
  // A Super Admin sees every global registry; anyone else the ones already chosen (by their names in the store's list).
  const globals = useQuery({ ...q.globalRegistries.oci.list.options({ limit: 200, offset: 0 }), enabled: open && session.isSuperAdmin });
  useEffect(() => {
    if (!open) return;
    setIntervalText(String(store.syncIntervalMinutes));
    setIncludeAll(store.includeAllGlobalRegistries);
    setChosen(new Set(store.globalRegistryIds));
    save.reset();
  }, [open]); // eslint-disable-line react-hooks/exhaustive-deps
  const options = session.isSuperAdmin
    ? (globals.data?.items ?? []).filter((g) => !g.mandatory).map((g) => ({ id: g.id, name: g.name }))
    : store.registries.filter((r) => r.kind === "global" && !r.mandatory && store.globalRegistryIds.includes(r.id)).map((r) => ({ id: r.id, name: r.name }));
  const minutes = Number(interval);
  const intervalProblem = interval.trim() === "" || !Number.isInteger(minutes) || minutes < 0 || minutes > 10_080 ? "Give whole minutes from 0 (manual syncs only) to 10080." : null;


  return (
    <Dialog open={open} onClose={onClose} title="Configure the marketplace store">
      <form className="stack" onSubmit={save.submit(() => ({ enabled: store.enabled, syncIntervalMinutes: minutes, includeAllGlobalRegistries: includeAll, globalRegistryIds: [...chosen] }), { valid: !intervalProblem })} noValidate>
        <div className="field">
          <label htmlFor="store-interval">Sync interval (minutes)</label>
          <input id="store-interval" className="input" type="number" min={0} max={10_080} value={interval} onChange={(e) => setIntervalText(e.target.value)} aria-invalid={intervalProblem ? true : undefined} aria-describedby={intervalProblem ? "store-interval-error" : undefined} />
          {intervalProblem ? <span className="field__error" id="store-interval-error">{intervalProblem}</span> : <span className="field__hint">0: manual syncs only.</span>}
        </div>
        <label className="row"><input type="checkbox" checked={includeAll} onChange={(e) => setIncludeAll(e.target.checked)} /> Include every enabled global registry</label>
        <fieldset className="field" disabled={includeAll}>
          <legend className="field__label">Optional global registries</legend>
          {session.isSuperAdmin && globals.isPending ? <Loading /> : options.length === 0 ? (
            <p className="faint">{session.isSuperAdmin ? "The platform has no optional global registry." : "None chosen. The platform's mandatory registries are always read."}</p>
          ) : options.map((o) => (
            <label key={o.id} className="row">
              <input type="checkbox" checked={includeAll || chosen.has(o.id)} onChange={(e) => setChosen((c) => { const next = new Set(c); e.target.checked ? next.add(o.id) : next.delete(o.id); return next; })} /> {o.name}
            </label>
          ))}
        </fieldset>
        <FormFooter action={save} onCancel={onClose} disabled={!!intervalProblem} submitLabel="Save" />
      </form>
    </Dialog>
  );
}

const PRODUCT_COLUMNS: Column<Product>[] = [
  { id: "registry", header: "Registry", cell: (p) => p.registryName },
  { id: "product", header: "Repository:tag", cell: (p) => <span className="mono">{p.repository}:{p.tag}</span> },
  { id: "outcome", header: "Outcome", cell: (p) => <span className={`badge badge--${p.outcome === "skipped" ? "warning" : p.outcome === "unchanged" ? "offline" : "success"}`}>{p.outcome}</span> },
  { id: "application", header: "Application", cell: (p) => p.application ? <span className="mono">{p.application} {p.version}</span> : <span className="faint">none</span> },
  { id: "reason", header: "Skip reason", cell: (p) => p.reason ?? <span className="faint">none</span> },
];

function SyncHistory() {
  const [offset, setOffset] = useState(0);
  const history = useQuery({ ...q.marketplaceStore.syncHistory.options({ limit: String(HISTORY_PAGE), offset: String(offset) }), placeholderData: keepPreviousData });
  return (
    <Card title="Sync history">
      {history.isPending ? <Loading /> : history.isError ? <ErrorState error={history.error} retry={() => history.refetch()} /> : history.data.data.length === 0 ? (
        <Empty title="No syncs yet">Sync the store to fill the catalog; each run shows here with what it did to each product.</Empty>
      ) : (
        <div className="stack">
          <ol className="version-list" aria-label="Sync runs, newest first">
            {history.data.data.map((r) => <SyncRun key={r.id} run={r} />)}
          </ol>
          <Pagination label="Sync history pages" offset={offset} limit={HISTORY_PAGE} total={history.data.total} onOffset={setOffset} />
        </div>
      )}
    </Card>
  );
}

function SyncRun({ run }: { run: SyncRecord }) {
  const counts = outcomeCounts(run.products);
  const headingId = `run-${run.id}`;
  const when = formatDateTime(run.createdAt);
  return (
    <li className="version">
      <section aria-labelledby={headingId} className="stack">
        <div className="version__header">
          <h3 id={headingId}>Run of {when}</h3>
          <span className={`badge badge--${run.status === "success" ? "success" : "danger"}`}>{run.status}</span>
          <span className="faint">{run.triggeredBy === "scheduler" ? "scheduled" : run.triggeredBy ? "manual" : ""} · {formatDuration(run.syncDurationMs)}</span>
        </div>
        <p className="muted">
          {run.repositoriesFound} repositories, {run.applicationsFound} packages found: {counts.imported} imported, {counts.updated} updated, {counts.unchanged} unchanged, {counts.skipped} skipped.
        </p>
        {run.errors.length > 0 && <div className="alert-box alert-box--error" role="alert"><ul className="warning-list">{run.errors.map((e, i) => <li key={i}>{e}</li>)}</ul></div>}
        <DataTable caption={`Products of the run of ${when}`} columns={PRODUCT_COLUMNS} rows={run.products} rowKey={(p) => `${p.registryId}/${p.repository}:${p.tag}`} empty={<span className="faint">No product read.</span>} />
        {run.skippedRepositories.length > 0 && (
          <ul className="warning-list" aria-label={`Repositories skipped in the run of ${when}`}>
            {run.skippedRepositories.map((s) => <li key={`${s.registryId}/${s.repository}`}><span className="mono">{s.repository}</span> in {s.registryName}: {s.reason}</li>)}
          </ul>
        )}
      </section>
    </li>
  );
}
