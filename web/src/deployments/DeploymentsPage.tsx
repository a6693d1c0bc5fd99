// Every deployment at a glance: its one state, application, version, target, progress and last
// change; filtered by state and application from the URL, paged by the server, and moving
// live as devices report (the realtime channel's deployment events).
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Plus, X } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import { Progress } from "../ui/charts";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { urlPage } from "../ui/urlPage";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { ManagedMark } from "../ui/ManagedMark";
import { DeploymentLink } from "./DeploymentLink";
import { progressSegments, progressText } from "./progress";
import { type DeploymentListSearch } from "./search";
import { StateBadge } from "./StateBadge";
import type { Deployment } from "./types";
import { DEPLOYMENT_STATES, deploymentStateText } from "../../../src/modules/deployments/deployment-state";
import "./deployments.css";
import { counted } from "../../../src/lib/plural";

const DEFAULT_LIMIT = 25;

export const SEGMENT_COLORS = {
  running: "var(--status-online)",
  failed: "var(--status-error)",
  active: "var(--status-provisioned)",
  waiting: "var(--status-pending)",
} as const;

export function DeploymentsPage() {
  const canRead = useCan("deployments:read");
  if (!canRead) {
    return (
      <>
        <PageHeader title="Deployments" description="Applications shipped to devices" />
        <Card><Forbidden what="deployments" /></Card>
      </>
    );
  }
  return <DeploymentList />;
}

/** "site=berlin, tier=edge" or "3 devices". */
export function targetText(target: Deployment["target"]): string {
  if (target.labelSelector) return Object.entries(target.labelSelector).map(([k, v]) => `${k}=${v}`).join(", ");
  const n = target.deviceIds?.length ?? 0;
  return counted(n, "picked device");
}

export function DeploymentProgress({ deployment }: { deployment: Deployment }) {
  const { segments, total, summary } = progressSegments(deployment.progress);
  return (
    <div className="deployment-progress">
      <Progress
        value={deployment.progress.running}
        max={total}
        label={`Progress of ${deployment.name}: ${summary}`}
        segments={segments.map((s) => ({ ...s, color: SEGMENT_COLORS[s.key] }))}
      />
      <span className="faint num">{progressText(deployment)}</span>
    </div>
  );
}

function DeploymentList() {
  const search = useSearch({ from: "/app/deployments" });
  const navigate = useNavigate({ from: "/deployments" });
  const canWrite = useCan("deployments:write");
  const canReadApps = useCan("applications:read");

  const setSearch = (patch: Partial<DeploymentListSearch>, resetPage = true) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, ...(resetPage ? { offset: undefined } : {}) }), replace: true });

  const page = urlPage(search, setSearch, DEFAULT_LIMIT, [25, 50, 100]);
  const deployments = useQuery({
    ...q.deployments.list.options({ ...page.input, state: search.state, applicationId: search.application }),
    placeholderData: keepPreviousData,
  });
  const applications = useQuery({ ...q.applications.list.options({ limit: 200, offset: 0 }), enabled: canReadApps, staleTime: 60_000 });
  const filtered = !!search.state || !!search.application;

  const columns: Column<Deployment>[] = [
    {
      id: "name",
      header: "Deployment",
      cell: (d) => (
        <div className="deployment-name">
          <span className="row row--nowrap"><DeploymentLink id={d.id}>{d.name}</DeploymentLink><ManagedMark resource={d} /></span>
          {d.description && <span className="faint">{d.description}</span>}
        </div>
      ),
    },
    { id: "state", header: "State", className: "nowrap", cell: (d) => <StateBadge deployment={d} /> },
    { id: "application", header: "Application", cell: (d) => d.applicationName },
    { id: "version", header: "Version", className: "nowrap", cell: (d) => <span className="mono">{d.version}</span> },
    { id: "target", header: "Target", cell: (d) => <span className={d.target.labelSelector ? "mono" : undefined}>{targetText(d.target)}</span> },
    { id: "progress", header: "Progress", className: "col-progress", cell: (d) => <DeploymentProgress deployment={d} /> },
    { id: "changed", header: "Last change", className: "nowrap", cell: (d) => <RelativeTime value={d.updatedAt} /> },
  ];

  return (
    <>
      <PageHeader
        title="Deployments"
        description={deployments.data ? `${deployments.data.total.toLocaleString()} ${filtered ? "matching" : "in this organization"}` : "Applications shipped to devices"}
        actions={canWrite && <Link to="/deployments/new" className="btn btn--primary"><Plus aria-hidden="true" />New deployment</Link>}
      />
      <Card flush>
        <div className="toolbar">
          <div className="field">
            <label htmlFor="deployment-state">State</label>
            <select id="deployment-state" className="select" value={search.state ?? ""} onChange={(e) => void setSearch({ state: (e.target.value || undefined) as DeploymentListSearch["state"] })}>
              <option value="">Any state</option>
              {DEPLOYMENT_STATES.map((s) => <option key={s} value={s}>{deploymentStateText(s)}</option>)}
            </select>
          </div>
          {canReadApps && (
            <div className="field">
              <label htmlFor="deployment-application">Application</label>
              <select id="deployment-application" className="select" value={search.application ?? ""} onChange={(e) => void setSearch({ application: e.target.value || undefined })}>
                <option value="">Any application</option>
                {applications.data?.items.map((a) => <option key={a.id} value={a.id}>{a.name}</option>)}
              </select>
            </div>
          )}
          {filtered && (
            <Button size="small" variant="ghost" icon={<X />} onClick={() => void navigate({ search: {}, replace: true })}>
              Clear filters
            </Button>
          )}
        </div>
        <QueryTable
          query={deployments}
          what="deployments"
          caption="Deployments"
          columns={columns}
          rowKey={(d) => d.id}
          page={page}
          pageLabel="Deployment pages"
          filtered={filtered}
          noMatch="No deployment matches these filters"
          onClearFilters={() => void navigate({ search: {}, replace: true })}
          empty={
            <Empty title="No deployments yet" action={canWrite && <Link to="/deployments/new" className="btn btn--primary">Create a deployment</Link>}>
              A deployment ships one version of an application from the catalog to the devices a label selector matches, all at once or in stages.
            </Empty>
          }
        />
      </Card>
    </>
  );
}
