// The audit log: who did what to which entity, with what outcome. Filters (actor, action,
// entity, outcome, time range) and text search live in the URL (audit/search.ts), the server
// pages, each entry opens to its changed fields and request facts, and the current filters
// export as CSV or JSON, downloaded as a file with its progress. Read-only: the audit trail
// has no write operation, so no role sees a write control here.
import { useEffect, useState } from "react";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Activity, ChevronDown, ChevronRight, X } from "lucide-react";
import { q } from "../api/query";
import type { RouterOutputs } from "../api/client";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { urlPage } from "../ui/urlPage";
import { Empty, Forbidden } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useDebounced } from "../ui/useDebounced";
import { changeRows } from "./changes";
import { ExportButtons, ExportStatus } from "./ExportControls";
import { ACTOR_TYPES, auditFilters, instantOf, localInputOf, OUTCOMES, type AuditSearch } from "./search";
import { useExportDownload } from "./useExportDownload";
import "./audit.css";

type Entry = RouterOutputs["audit"]["search"]["items"][number];

const DEFAULT_LIMIT = 25;
/** what one export may hold at most (the API's default cap) */
const EXPORT_MAX = 100_000;

export const OUTCOME_TONE: Record<Entry["outcome"], string> = {
  success: "badge--success",
  failure: "badge--danger",
  denied: "badge--warning",
};

const ACTOR_TYPE_LABEL: Record<Entry["actorType"], string> = { user: "Person", api_key: "API key", device: "Device", system: "System" };

export function AuditPage() {
  if (!useCan("audit:read")) {
    return (
      <>
        <PageHeader title="Audit log" description="Who did what, and when" />
        <Card><Forbidden what="the audit log" /></Card>
      </>
    );
  }
  return <AuditLog />;
}

/** A text filter typed freely, written to the URL once typing pauses. */
function TextFilter({ id, label, value, placeholder, wide, onChange }: { id: string; label: string; value: string | undefined; placeholder?: string; wide?: boolean; onChange: (v: string | undefined) => void }) {
  const [draft, setDraft] = useState(value ?? "");
  const settled = useDebounced(draft);
  useEffect(() => setDraft(value ?? ""), [value]);
  useEffect(() => {
    if ((settled.trim() || undefined) !== value) onChange(settled.trim() || undefined);
  }, [settled]); // eslint-disable-line react-hooks/exhaustive-deps
  return (
    <div className={wide ? "field audit-filter--wide" : "field"}>
      <label htmlFor={id}>{label}</label>
      <input id={id} className="input" type="search" value={draft} placeholder={placeholder} onChange={(e) => setDraft(e.target.value)} />
    </div>
  );
}

/** "Ann Admin" (the person), the key's id, or the device's name (its id once it is gone). */
export function actorText(e: Pick<Entry, "actorType" | "actorId" | "user" | "actorName">): string {
  if (e.actorType === "user") return e.user?.name ?? e.actorId ?? "unknown person";
  if (e.actorType === "api_key") return `API key ${e.actorId?.slice(0, 8) ?? ""}${e.user ? ` of ${e.user.name}` : ""}`;
  if (e.actorType === "device") return `Device ${e.actorName ?? e.actorId ?? ""}`;
  return "System";
}

function AuditLog() {
  const search = useSearch({ from: "/app/audit" });
  const navigate = useNavigate({ from: "/audit" });
  const canReadMembers = useCan("members:read");
  const isSuperAdmin = useCan("platform:admin");
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const exporter = useExportDownload("/api/v1/audit/export");

  const setSearch = (patch: Partial<AuditSearch>, resetPage = true) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, ...(resetPage ? { offset: undefined } : {}) }), replace: true });

  const page = urlPage(search, setSearch, DEFAULT_LIMIT, [25, 50, 100]);
  const filters = auditFilters(search);
  const entries = useQuery({ ...q.audit.search.options({ ...filters, ...page.input }), placeholderData: keepPreviousData });
  const members = useQuery({ ...q.tenant.members.options({ limit: 200, offset: 0 }), enabled: canReadMembers, staleTime: 60_000 });
  const filtered = Object.values(filters).some((v) => v !== undefined);
  const clear = () => void navigate({ search: {}, replace: true });

  const toggle = (id: string) => setOpen((prev) => {
    const next = new Set(prev);
    next.has(id) ? next.delete(id) : next.add(id);
    return next;
  });

  const total = entries.data?.total;
  const columns: Column<Entry>[] = [
    {
      id: "details",
      header: <span className="visually-hidden">Details</span>,
      className: "col-check",
      cell: (e) => {
        const expanded = open.has(e.id);
        return (
          <Button size="small" variant="ghost" icon={expanded ? <ChevronDown /> : <ChevronRight />}
            aria-expanded={expanded} aria-controls={`audit-${e.id}`} aria-label={`Details of ${e.action} at ${formatDateTime(e.createdAt)}`} onClick={() => toggle(e.id)} />
        );
      },
    },
    { id: "when", header: "When", className: "nowrap", cell: (e) => <RelativeTime value={e.createdAt} /> },
    {
      id: "actor",
      header: "Actor",
      cell: (e) => (
        <div className="audit-actor">
          <span>{actorText(e)}</span>
          {e.user && <span className="faint">{e.user.email}</span>}
        </div>
      ),
    },
    { id: "action", header: "Action", cell: (e) => <span className="mono">{e.action}</span> },
    { id: "entity", header: "Entity", cell: (e) => <EntityCell entry={e} /> },
    { id: "outcome", header: "Outcome", cell: (e) => <span className={`badge ${OUTCOME_TONE[e.outcome]}`}>{e.outcome}</span> },
  ];
  const startExport = (format: "csv" | "json") =>
    void exporter.start(format, { ...filters, maxRecords: EXPORT_MAX }, total === undefined ? undefined : Math.min(total, EXPORT_MAX));

  return (
    <>
      <PageHeader
        title="Audit log"
        description={total !== undefined ? `${total.toLocaleString()} ${filtered ? "matching entries" : "entries in this organization"}, newest first` : "Who did what, and when"}
        actions={
          <>
            {isSuperAdmin && <Link to="/activity" className="btn"><Activity aria-hidden="true" />Platform activity</Link>}
            <ExportButtons what="audit log" exporter={exporter} onExport={startExport} />
          </>
        }
      />
      <ExportStatus what="audit log" exporter={exporter} />
      <Card flush>
        <form className="toolbar audit-filters" role="search" aria-label="Audit log filters" onSubmit={(e) => e.preventDefault()}>
          <TextFilter id="audit-q" label="Search" wide value={search.q} placeholder="action, entity, id, message" onChange={(v) => void setSearch({ q: v })} />
          {canReadMembers && (
            <div className="field">
              <label htmlFor="audit-user">Person</label>
              <select id="audit-user" className="select" value={search.user ?? ""} onChange={(e) => void setSearch({ user: e.target.value || undefined })}>
                <option value="">Anyone</option>
                {members.data?.items.map((m) => <option key={m.userId} value={m.userId}>{m.name} ({m.email})</option>)}
              </select>
            </div>
          )}
          <div className="field">
            <label htmlFor="audit-actor-type">Actor type</label>
            <select id="audit-actor-type" className="select" value={search.actorType ?? ""} onChange={(e) => void setSearch({ actorType: (e.target.value || undefined) as AuditSearch["actorType"] })}>
              <option value="">Any actor</option>
              {ACTOR_TYPES.map((t) => <option key={t} value={t}>{ACTOR_TYPE_LABEL[t]}</option>)}
            </select>
          </div>
          <TextFilter id="audit-action" label="Action" wide value={search.action} placeholder="devices.update or devices.*" onChange={(v) => void setSearch({ action: v })} />
          <TextFilter id="audit-entity-type" label="Entity type" value={search.entityType} placeholder="device" onChange={(v) => void setSearch({ entityType: v })} />
          <TextFilter id="audit-entity-id" label="Entity id" value={search.entityId} onChange={(v) => void setSearch({ entityId: v })} />
          <div className="field">
            <label htmlFor="audit-outcome">Outcome</label>
            <select id="audit-outcome" className="select" value={search.outcome ?? ""} onChange={(e) => void setSearch({ outcome: (e.target.value || undefined) as AuditSearch["outcome"] })}>
              <option value="">Any outcome</option>
              {OUTCOMES.map((o) => <option key={o} value={o}>{o}</option>)}
            </select>
          </div>
          <div className="field">
            <label htmlFor="audit-from">From</label>
            <input id="audit-from" className="input" type="datetime-local" value={localInputOf(search.from)} onChange={(e) => void setSearch({ from: instantOf(e.target.value) })} />
          </div>
          <div className="field">
            <label htmlFor="audit-to">Until</label>
            <input id="audit-to" className="input" type="datetime-local" value={localInputOf(search.to)} onChange={(e) => void setSearch({ to: instantOf(e.target.value) })} />
          </div>
          {filtered && <Button size="small" variant="ghost" icon={<X />} onClick={clear}>Clear filters</Button>}
        </form>
        <QueryTable
          query={entries}
          what="the audit log"
          caption="Audit entries"
          columns={columns}
          rowKey={(e) => e.id}
          loadingRows={6}
          details={(e) => open.has(e.id) && <div id={`audit-${e.id}`}><EntryDetails entry={e} /></div>}
          page={page}
          pageLabel="Audit log pages"
          filtered={filtered}
          noMatch="No entry matches these filters"
          onClearFilters={clear}
          empty={<Empty title="Nothing recorded yet">Every change made through the API or this console is recorded here, with who made it.</Empty>}
        />
      </Card>
    </>
  );
}

function EntryDetails({ entry }: { entry: Entry }) {
  const rows = changeRows(entry.changes);
  const isDiff = rows.some((r) => r.from !== undefined);
  return (
    <div className="audit-details">
      {rows.length === 0 ? (
        <p className="muted">No changed fields recorded.</p>
      ) : (
        <table className="table audit-changes">
          <caption className="visually-hidden">Changed fields of {entry.action}</caption>
          <thead>
            <tr>
              <th scope="col">Field</th>
              {isDiff && <th scope="col">Before</th>}
              <th scope="col">{isDiff ? "After" : "Value"}</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.field}>
                <th scope="row" className="mono">{r.field}</th>
                {isDiff && <td className="mono">{r.from ?? "—"}</td>}
                <td className="mono">{r.to}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <dl className="facts">
        <dt>Time</dt>
        <dd>{formatDateTime(entry.createdAt)}</dd>
        {entry.message && (<><dt>Message</dt><dd>{entry.message}</dd></>)}
        <dt>Actor</dt>
        <dd>{ACTOR_TYPE_LABEL[entry.actorType]} <span className="mono faint">{entry.actorId ?? "—"}</span></dd>
        {entry.requestId && (<><dt>Request id</dt><dd className="mono">{entry.requestId}</dd></>)}
        {entry.sourceIp && (<><dt>Source IP</dt><dd className="mono">{entry.sourceIp}</dd></>)}
        {entry.userAgent && (<><dt>User agent</dt><dd className="mono">{entry.userAgent}</dd></>)}
      </dl>
    </div>
  );
}

/** The entry's entity: a device by its name (a link to it) above its id; others by type and id. */
function EntityCell({ entry: e }: { entry: { entityType: string | null; entityId: string | null; entityName?: string | null } }) {
  if (!e.entityType) return <span className="faint">—</span>;
  if (e.entityName && e.entityId) {
    return (
      <div className="audit-actor">
        <span>{e.entityType} <Link to="/devices/$deviceId" params={{ deviceId: e.entityId }}>{e.entityName}</Link></span>
        <span className="mono faint">{e.entityId}</span>
      </div>
    );
  }
  return <span>{e.entityType} {e.entityId && <span className="mono faint">{e.entityId}</span>}</span>;
}
