// The platform's activity, for Super Admins: sign-ins (and refused ones), sign-outs, denials,
// tenant switches and changes across every organization, as the activity feed names them;
// filtered by type, organization and time from the URL, paged by the server, and exported
// as CSV or JSON (POST /activity/export, Super Admins only) with its progress.
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { ShieldAlert, X } from "lucide-react";
import { q } from "../api/query";
import type { RouterOutputs } from "../api/client";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { urlPage } from "../ui/urlPage";
import { RelativeTime } from "../ui/time";
import { ExportButtons, ExportStatus } from "../audit/ExportControls";
import { OUTCOME_TONE } from "../audit/AuditPage";
import { instantOf, localInputOf } from "../audit/search";
import { useExportDownload } from "../audit/useExportDownload";
import { ACTIVITY_TYPES, type ActivitySearch } from "./search";
import "../audit/audit.css";

type Item = RouterOutputs["activity"]["list"]["items"][number];

const DEFAULT_LIMIT = 25;
/** the most one activity export may hold (the API's maximum) */
const EXPORT_MAX = 100_000;

const TYPE_LABEL: Record<(typeof ACTIVITY_TYPES)[number], string> = {
  login: "Sign-in",
  login_failed: "Refused sign-in",
  logout: "Sign-out",
  auth_event: "Authentication event",
  access_denied: "Access denied",
  tenant_switch: "Tenant switch",
  api_key_use: "API key use",
  change: "Change",
};

export function ActivityPage() {
  if (!useCan("platform:admin")) {
    return (
      <>
        <PageHeader title="Platform activity" description="Activity across every organization" />
        <Card>
          <div className="state">
            <ShieldAlert aria-hidden="true" />
            <h3>For Super Admins only</h3>
            <p>The platform's activity spans every organization. Your organization's own trail is in the <Link to="/audit">audit log</Link>.</p>
          </div>
        </Card>
      </>
    );
  }
  return <PlatformActivity />;
}

function PlatformActivity() {
  const search = useSearch({ from: "/app/activity" });
  const navigate = useNavigate({ from: "/activity" });
  const exporter = useExportDownload("/api/v1/activity/export");
  const setSearch = (patch: Partial<ActivitySearch>, resetPage = true) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, ...(resetPage ? { offset: undefined } : {}) }), replace: true });

  const page = urlPage(search, setSearch, DEFAULT_LIMIT, [25, 50, 100]);
  const types = search.type ? [search.type] : undefined;
  const list = useQuery({
    ...q.activity.list.options({ types, organizationId: search.organization, from: search.from, to: search.to, ...page.input }),
    placeholderData: keepPreviousData,
  });
  const organizations = useQuery({ ...q.organizations.list.options({ limit: 200, offset: 0 }), staleTime: 60_000 });
  const orgName = new Map(organizations.data?.items.map((o) => [o.id, o.name]));
  const filtered = !!(search.type || search.organization || search.from || search.to);
  const clear = () => void navigate({ search: {}, replace: true });
  const total = list.data?.total;

  const startExport = (format: "csv" | "json") => void exporter.start(format, {
    activityTypes: types, organizationId: search.organization, startDate: search.from, endDate: search.to, maxRecords: EXPORT_MAX,
  }, total === undefined ? undefined : Math.min(total, EXPORT_MAX));

  const columns: Column<Item>[] = [
    { id: "when", header: "When", className: "nowrap", cell: (a) => <RelativeTime value={a.createdAt} /> },
    { id: "type", header: "Type", className: "nowrap", cell: (a) => TYPE_LABEL[a.type] },
    { id: "summary", header: "What", cell: (a) => a.summary },
    {
      id: "who",
      header: "Who",
      cell: (a) => a.userEmail
        ? <div className="audit-actor"><span>{a.userName}</span><span className="faint">{a.userEmail}</span></div>
        : <span className="faint">{a.actorType}</span>,
    },
    { id: "org", header: "Organization", cell: (a) => (a.organizationId ? orgName.get(a.organizationId) ?? <span className="mono faint">{a.organizationId}</span> : <span className="faint">none</span>) },
    { id: "outcome", header: "Outcome", cell: (a) => <span className={`badge ${OUTCOME_TONE[a.outcome as keyof typeof OUTCOME_TONE] ?? ""}`}>{a.outcome}</span> },
  ];

  return (
    <>
      <PageHeader
        title="Platform activity"
        description={total !== undefined ? `${total.toLocaleString()} ${filtered ? "matching" : "across every organization"}, newest first` : "Activity across every organization"}
        actions={<ExportButtons what="platform activity" exporter={exporter} onExport={startExport} />}
      />
      <ExportStatus what="platform activity" exporter={exporter} />
      <Card flush>
        <form className="toolbar audit-filters" role="search" aria-label="Activity filters" onSubmit={(e) => e.preventDefault()}>
          <div className="field">
            <label htmlFor="activity-type">Type</label>
            <select id="activity-type" className="select" value={search.type ?? ""} onChange={(e) => void setSearch({ type: (e.target.value || undefined) as ActivitySearch["type"] })}>
              <option value="">Any type</option>
              {ACTIVITY_TYPES.map((t) => <option key={t} value={t}>{TYPE_LABEL[t]}</option>)}
            </select>
          </div>
          <div className="field">
            <label htmlFor="activity-organization">Organization</label>
            <select id="activity-organization" className="select" value={search.organization ?? ""} onChange={(e) => void setSearch({ organization: e.target.value || undefined })}>
              <option value="">Every organization</option>
              {organizations.data?.items.map((o) => <option key={o.id} value={o.id}>{o.name}</option>)}
            </select>
          </div>
          <div className="field">
            <label htmlFor="activity-from">From</label>
            <input id="activity-from" className="input" type="datetime-local" value={localInputOf(search.from)} onChange={(e) => void setSearch({ from: instantOf(e.target.value) })} />
          </div>
          <div className="field">
            <label htmlFor="activity-to">Until</label>
            <input id="activity-to" className="input" type="datetime-local" value={localInputOf(search.to)} onChange={(e) => void setSearch({ to: instantOf(e.target.value) })} />
          </div>
          {filtered && <Button size="small" variant="ghost" icon={<X />} onClick={clear}>Clear filters</Button>}
        </form>
        <QueryTable
          query={list}
          what="platform activity"
          caption="Platform activity"
          columns={columns}
          rowKey={(a) => a.id}
          page={page}
          pageLabel="Activity pages"
          filtered={filtered}
          noMatch="No activity matches these filters"
          onClearFilters={clear}
          empty={<Empty title="No activity yet">Sign-ins, tenant switches and changes in every organization show here.</Empty>}
        />
      </Card>
    </>
  );
}
