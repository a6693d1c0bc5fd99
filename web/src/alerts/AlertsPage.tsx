// Alerts (one rule firing for one subject: a device, or a config source whose syncs fail): what fires now and what resolved, filtered by
// severity, state and device from the URL, paged by the server and moving live (the realtime
// channel's alert events mark these queries stale, app/realtime.tsx). Someone with
// alerts:write acknowledges (takes it on) or resolves it by hand.
import { useState } from "react";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { X } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog } from "../ui/Dialog";
import { QueryTable } from "../ui/QueryTable";
import { urlPage } from "../ui/urlPage";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { AlertsAreaNav } from "./AreaNav";
import type { AlertListSearch } from "./search";
import { CONDITION_LABEL, SEVERITY_ORDER, SEVERITY_TONE, type Alert, type ConditionType } from "./types";

const DEFAULT_LIMIT = 25;

export function AlertsPage() {
  if (!useCan("alerts:read")) {
    return (
      <>
        <PageHeader title="Alerts" description="What the alert rules raised" />
        <Card><Forbidden what="alerts" /></Card>
      </>
    );
  }
  return <AlertList />;
}

const NOUN = { device: "device", config_source: "config source" } as const;
const alertName = (a: Alert) => `${a.ruleName} on ${a.subjectName ?? `a deleted ${NOUN[a.subjectType]}`}`;

/** The subject cell: a device (with its filter button) or a config source, linked to its page. */
function SubjectCell({ alert: a, filteredDevice, onlyDevice }: { alert: Alert; filteredDevice?: string; onlyDevice: (id: string) => void }) {
  if (a.subjectType === "config_source") {
    return a.subjectName ? (
      <div className="alert-stacked">
        <Link to="/config/sources/$sourceId" params={{ sourceId: a.subjectId }}>{a.subjectName}</Link>
        <span className="faint">config source</span>
      </div>
    ) : <span className="faint">deleted config source</span>;
  }
  return a.deviceName && a.deviceId ? (
    <div className="row">
      <Link to="/devices/$deviceId" params={{ deviceId: a.deviceId }}>{a.deviceName}</Link>
      {filteredDevice !== a.deviceId && (
        <Button size="small" variant="ghost" onClick={() => onlyDevice(a.subjectId)} aria-label={`Only this device: ${a.deviceName}`}>Only this device</Button>
      )}
    </div>
  ) : <span className="faint">deleted device</span>;
}

function AlertList() {
  const search = useSearch({ from: "/app/alerts" });
  const navigate = useNavigate({ from: "/alerts" });
  const canWrite = useCan("alerts:write");
  const [resolving, setResolving] = useState<Alert | null>(null);

  const setSearch = (patch: Partial<AlertListSearch>, resetPage = true) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, ...(resetPage ? { offset: undefined } : {}) }), replace: true });

  const state = search.state ?? "firing";
  const page = urlPage(search, setSearch, DEFAULT_LIMIT, [25, 50, 100]);
  const alerts = useQuery({
    ...q.alerts.list.options({ state, severity: search.severity, deviceId: search.device, ...page.input }),
    placeholderData: keepPreviousData,
  });
  const canReadDevices = useCan("devices:read");
  const device = useQuery({ ...q.devices.get.options({ id: search.device ?? "" }), enabled: !!search.device && canReadDevices });
  const filtered = !!search.severity || !!search.device;
  const keyOf = (a: Alert) => `${a.ruleId}:${a.subjectId}`;

  const acknowledge = useAction({ mutationFn: (a: Alert) => q.alerts.acknowledge.call({ ruleId: a.ruleId, subjectId: a.subjectId }) }, {
    invalidates: [q.alerts.key()],
    success: (_out, a) => `Acknowledged ${alertName(a)}`,
    failure: "Could not acknowledge",
  });
  // A resolved alert leaves the rule's firing count and the fleet overview too.
  const resolve = useAction({ mutationFn: () => q.alerts.resolve.call({ ruleId: resolving!.ruleId, subjectId: resolving!.subjectId }) }, {
    invalidates: [q.alerts.key(), q.alertRules.key(), q.fleet.key()],
    success: () => `Resolved ${resolving ? alertName(resolving) : "the alert"}`,
  });

  const columns: Column<Alert>[] = [
    { id: "severity", header: "Severity", className: "nowrap", cell: (a) => <span className={`badge ${SEVERITY_TONE[a.severity]}`}>{a.severity}</span> },
    {
      id: "rule",
      header: "Rule",
      cell: (a) => (
        <div className="alert-stacked">
          {canWrite ? <Link to="/alerts/rules/$ruleId/edit" params={{ ruleId: a.ruleId }}>{a.ruleName}</Link> : <strong>{a.ruleName}</strong>}
          <span className="faint">{CONDITION_LABEL[a.conditionType as ConditionType] ?? a.conditionType}</span>
        </div>
      ),
    },
    {
      id: "subject",
      header: "Device or source",
      cell: (a) => <SubjectCell alert={a} filteredDevice={search.device} onlyDevice={(device) => void setSearch({ device })} />,
    },
    { id: "value", header: "Value", className: "nowrap num", cell: (a) => (a.value == null ? "—" : Number.isInteger(a.value) ? a.value : a.value.toFixed(2)) },
    { id: "since", header: "Firing since", className: "nowrap", cell: (a) => <RelativeTime value={a.firingSince} /> },
    state === "firing"
      ? { id: "ack", header: "Acknowledged", cell: (a) => (a.acknowledgedAt ? <span>{a.acknowledgedBy} · <RelativeTime value={a.acknowledgedAt} /></span> : <span className="faint">no</span>) }
      : { id: "resolved", header: "Resolved", cell: (a) => <span><RelativeTime value={a.resolvedAt} />{a.resolvedBy ? ` by ${a.resolvedBy}` : " (condition ended)"}</span> },
    ...(canWrite && state === "firing"
      ? [{
          id: "actions",
          header: "Actions",
          cell: (a: Alert) => (
            <div className="alert-actions">
              {!a.acknowledgedAt && (
                <Button size="small" busy={!!acknowledge.pendingInput && keyOf(acknowledge.pendingInput) === keyOf(a)} onClick={() => void acknowledge.run(a)} aria-label={`Acknowledge ${alertName(a)}`}>Acknowledge</Button>
              )}
              <Button size="small" onClick={() => setResolving(a)} aria-label={`Resolve ${alertName(a)}`}>Resolve</Button>
            </div>
          ),
        }]
      : []),
  ];

  return (
    <>
      <PageHeader
        title="Alerts"
        description={alerts.data ? `${alerts.data.total.toLocaleString()} ${state === "firing" ? "firing now" : "resolved"}${filtered ? " matching the filters" : ""}` : "What the alert rules raised"}
      />
      <AlertsAreaNav />
      <Card flush>
        <div className="toolbar">
          <div className="field">
            <label htmlFor="alert-state">State</label>
            <select id="alert-state" className="select" value={state} onChange={(e) => void setSearch({ state: e.target.value === "resolved" ? "resolved" : undefined })}>
              <option value="firing">Firing now</option>
              <option value="resolved">Resolved (history)</option>
            </select>
          </div>
          <div className="field">
            <label htmlFor="alert-severity">Severity</label>
            <select id="alert-severity" className="select" value={search.severity ?? ""} onChange={(e) => void setSearch({ severity: (e.target.value || undefined) as AlertListSearch["severity"] })}>
              <option value="">Any severity</option>
              {SEVERITY_ORDER.map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </div>
          {search.device && (
            <span className="alert-filter-chip badge">
              Device: {device.data?.name ?? search.device.slice(0, 8)}
              <Button size="small" variant="ghost" icon={<X />} aria-label="Any device" onClick={() => void setSearch({ device: undefined })} />
            </span>
          )}
          {filtered && (
            <Button size="small" variant="ghost" icon={<X />} onClick={() => void setSearch({ severity: undefined, device: undefined })}>Clear filters</Button>
          )}
        </div>
        <QueryTable
          query={alerts}
          what="alerts"
          caption={state === "firing" ? "Firing alerts" : "Resolved alerts"}
          columns={columns}
          rowKey={keyOf}
          page={page}
          pageLabel="Alert pages"
          filtered={filtered}
          noMatch="No alert matches these filters"
          onClearFilters={() => void setSearch({ severity: undefined, device: undefined })}
          empty={state === "firing" ? (
            <Empty title="Nothing is firing" action={<Link to="/alerts/rules">See the alert rules</Link>}>
              An alert fires when a rule's condition holds for a device in its scope, or for a config source whose syncs fail.
            </Empty>
          ) : (
            <Empty title="No resolved alert yet" />
          )}
        />
      </Card>
      <ConfirmDialog
        open={resolving !== null}
        onClose={() => setResolving(null)}
        title={resolving ? `Resolve ${alertName(resolving)}?` : "Resolve"}
        confirmLabel="Resolve alert"
        danger={false}
        action={resolve}
      >
        <p>The alert moves to the history now, without a notification. If its condition still holds at the next evaluation, the rule fires again.</p>
      </ConfirmDialog>
    </>
  );
}
