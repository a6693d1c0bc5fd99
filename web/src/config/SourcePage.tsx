// One config source: where its documents are, what it may do, its last applied commit and last
// sync, its resources with the status of each (in sync, pending secret, refused, drifted), and
// its sync history (who or what triggered each sync, the commit, the outcome and the counts).
import { Link, useNavigate, useParams } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useSession } from "../app/session";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorState, Forbidden, Loading } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useLocalPage } from "../ui/useLocalPage";
import { shortCommit } from "../ui/ManagedMark";
import { AppliedCommit, LastSync } from "./ConfigPage";
import { SourceActions, useConfigAccess } from "./SourceActions";
import { pollText, whereText, type ConfigSource } from "./source-form";
import "./config.css";

type SourceResource = RouterOutputs["config"]["sourcesResources"]["items"][number];
type SyncRecord = RouterOutputs["config"]["sourcesSyncs"]["items"][number];

const Back = () => <Link to="/config">Configuration</Link>;

export function SourcePage() {
  const { sourceId } = useParams({ from: "/app/config/sources/$sourceId" });
  const session = useSession();
  const navigate = useNavigate();
  const { canRead, canWrite } = useConfigAccess();
  const input = { orgId: session.organization.id, id: sourceId };
  const source = useQuery({ ...q.config.sourcesGet.options(input), enabled: canRead });
  if (!canRead) return <><PageHeader breadcrumb={<Back />} title="Config source" /><Card><Forbidden what="the config sources" /></Card></>;
  if (source.isPending) return <Loading />;
  if (source.isError) return <><PageHeader breadcrumb={<Back />} title="Config source" /><ErrorState error={source.error} what="this config source" retry={() => void source.refetch()} /></>;
  const s = source.data;
  return (
    <>
      <PageHeader
        breadcrumb={<Back />}
        title={s.name}
        description={<><span className="mono">{s.url}</span> · <span className="mono">{s.branch}</span> · <span className="mono">{s.path}</span></>}
        actions={canWrite && <SourceActions source={s} size="normal" onDeleted={() => void navigate({ to: "/config" })} />}
      />
      <div className="stack">
        <SourceFacts source={s} />
        <ResourcesCard input={input} />
        <HistoryCard input={input} />
      </div>
    </>
  );
}

function SourceFacts({ source: s }: { source: ConfigSource }) {
  return (
    <Card title="Source">
      <dl className="facts">
        <dt>Last applied</dt><dd><AppliedCommit source={s} /></dd>
        <dt>Last sync</dt><dd><LastSync source={s} /></dd>
        <dt>Owner mark</dt><dd className="mono">{s.owner}</dd>
        <dt>Polling</dt><dd>{pollText(s.pollIntervalSeconds)}</dd>
        <dt>Webhook</dt><dd>{s.hasWebhookSecret ? <span className="mono">{s.webhookPath}</span> : <span className="faint">no secret yet (the webhook answers 401)</span>}</dd>
        <dt>Adopt</dt><dd>{s.adopt ? "takes over resources of the same name that nobody manages" : "off: existing resources of the same name are left alone"}</dd>
        <dt>Prune</dt>
        <dd>
          {s.prune ? `on: at most ${s.pruneLimit} deletion${s.pruneLimit === 1 ? "" : "s"}${s.prunePercent !== null ? ` and ${s.prunePercent}% of its resources` : ""} per sync` : "off: resources removed from Git stay"}
          {s.pruneAllowedOnce && <> · <span className="badge badge--warning">allowed past the guard once</span></>}
        </dd>
        <dt>Credential</dt><dd>{s.hasCredentials ? `${s.authType === "BASIC" ? "username and password" : "token"} (stored)` : <span className="faint">none</span>}</dd>
      </dl>
    </Card>
  );
}

const STATUS_TONE: Record<SourceResource["status"], string> = { "in sync": "badge--success", "pending secret": "badge--warning", refused: "badge--danger", drifted: "badge--warning" };

function ResourcesCard({ input }: { input: { orgId: string; id: string } }) {
  const resources = useQuery(q.config.sourcesResources.options(input));
  const columns: Column<SourceResource>[] = [
    { id: "resource", header: "Resource", cell: (r) => <div className="stacked-cell"><strong>{r.name || "(unnamed)"}</strong><span className="faint">{r.kind}</span></div> },
    { id: "status", header: "Status", className: "nowrap", cell: (r) => <span className={`badge ${STATUS_TONE[r.status]}`}>{r.status}</span> },
    { id: "commit", header: "Commit", className: "nowrap", cell: (r) => (r.managedCommit ? <span className="mono" title={r.managedCommit}>{shortCommit(r.managedCommit)}</span> : <span className="faint">none</span>) },
    {
      id: "why", header: "Why", cell: (r) => (
        <div className="stacked-cell">
          {r.message && <span className={r.status === "refused" ? "field__error" : "muted"}>{r.message}</span>}
          {r.pendingSecrets.length > 0 && <span className="muted">set {r.pendingSecrets.join(", ")} through the API or its page</span>}
          {whereText(r) && <span className="faint mono">{whereText(r)}</span>}
        </div>
      ),
    },
  ];
  return (
    <Card title="Resources" flush>
      <QueryTable query={resources} what="the source's resources" caption="Resources of the source" columns={columns} rowKey={(r) => `${r.kind}/${r.name}/${r.id ?? ""}`} loadingRows={3}
        empty={<Empty title="No resources yet">Sync the source: the resources its documents declare are listed here with their status.</Empty>} />
    </Card>
  );
}

const TRIGGER_TEXT: Record<SyncRecord["trigger"]["type"], string> = { user: "by", api_key: "by API key", webhook: "webhook", schedule: "poll" };

function HistoryCard({ input }: { input: { orgId: string; id: string } }) {
  const page = useLocalPage(10);
  const syncs = useQuery({ ...q.config.sourcesSyncs.options({ ...input, ...page.input }), placeholderData: keepPreviousData });
  const columns: Column<SyncRecord>[] = [
    { id: "when", header: "When", className: "nowrap", cell: (r) => <RelativeTime value={r.startedAt} /> },
    { id: "status", header: "Outcome", className: "nowrap", cell: (r) => <span className={`badge badge--${r.status === "applied" ? "success" : "danger"}`}>{r.status}</span> },
    { id: "commit", header: "Commit", className: "nowrap", cell: (r) => (r.commit ? <span className="mono" title={r.commit}>{shortCommit(r.commit)}</span> : <span className="faint">not fetched</span>) },
    {
      id: "counts", header: "Changes", className: "nowrap", cell: (r) => {
        const c = r.counts;
        const parts = [[c.created, "created"], [c.updated, "updated"], [c.deleted, "deleted"], [c.unchanged, "unchanged"], [c.refused, "refused"]].filter(([n]) => (n as number) > 0);
        return parts.length ? parts.map(([n, w]) => `${n} ${w}`).join(" · ") : <span className="faint">none</span>;
      },
    },
    { id: "trigger", header: "Triggered", cell: (r) => <span>{TRIGGER_TEXT[r.trigger.type]}{r.trigger.type === "user" || r.trigger.type === "api_key" ? ` ${r.trigger.name ?? "someone"}` : r.trigger.type === "webhook" && r.trigger.name ? ` (${r.trigger.name})` : ""}</span> },
    { id: "message", header: "Message", cell: (r) => <span className={r.status === "applied" ? "faint" : "field__error"}>{r.message}</span> },
  ];
  return (
    <Card title="Sync history" flush>
      <QueryTable query={syncs} what="the sync history" caption="Sync history" columns={columns} rowKey={(r) => r.id} page={page} pageLabel="Sync history pages" loadingRows={3}
        empty={<Empty title="No syncs yet">Sync now, a push to the webhook or the poll records each sync here.</Empty>} />
    </Card>
  );
}
