// Alert rules: each with its condition in words, scope, severity, targets, how many devices it
// fires for now and when it was last evaluated; enable/disable, edit (the rule form) and delete,
// for someone with alerts:write.
import { useState } from "react";
import { Link } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Pencil, Plus, Power, PowerOff, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog } from "../ui/Dialog";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { isManaged, ManagedGate, ManagedMark } from "../ui/ManagedMark";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { AlertsAreaNav } from "./AreaNav";
import { selectorText } from "./rule-form";
import { SEVERITY_TONE, type AlertRule } from "./types";
import { counted } from "../../../src/lib/plural";

const PAGE = 25;

export function RulesPage() {
  const canRead = useCan("alerts:read");
  const canWrite = useCan("alerts:write");
  return (
    <>
      <PageHeader
        title="Alert rules"
        description="What wakes someone up: a condition watched over the devices a label selector picks, and where the notification goes."
        actions={canRead && canWrite && <Link to="/alerts/rules/new" className="btn btn--primary"><Plus aria-hidden="true" />New alert rule</Link>}
      />
      <AlertsAreaNav />
      {canRead ? <RuleList /> : <Card><Forbidden what="the alert rules" /></Card>}
    </>
  );
}

function RuleList() {
  const canWrite = useCan("alerts:write");
  const page = useLocalPage(PAGE);
  const [deleting, setDeleting] = useState<AlertRule | null>(null);
  const rules = useQuery({ ...q.alertRules.list.options(page.input), placeholderData: keepPreviousData });
  const targets = useQuery({ ...q.notificationTargets.list.options({ limit: 100, offset: 0 }), staleTime: 30_000 });
  const targetName = new Map(targets.data?.items.map((t) => [t.id, t.name]));
  const invalidates = [q.alertRules.key(), q.alerts.key()];
  const toggle = useAction({ mutationFn: (rule: AlertRule) => q.alertRules.update.call({ id: rule.id, enabled: !rule.enabled }) }, {
    invalidates,
    success: (_, rule) => `${rule.name} ${rule.enabled ? "disabled" : "enabled"}`,
    failure: (rule) => `Could not ${rule.enabled ? "disable" : "enable"} ${rule.name}`,
  });
  const remove = useAction({ mutationFn: () => q.alertRules.delete.call({ id: deleting!.id }) }, {
    invalidates,
    success: () => `Rule “${deleting?.name ?? ""}” deleted`,
  });

  const columns: Column<AlertRule>[] = [
    {
      id: "name",
      header: "Rule",
      cell: (r) => (
        <div className="alert-stacked">
          <span className="row row--nowrap">
            {canWrite && !isManaged(r) ? <Link to="/alerts/rules/$ruleId/edit" params={{ ruleId: r.id }}>{r.name}</Link> : <strong>{r.name}</strong>}
            <ManagedMark resource={r} />
          </span>
          <span className="faint">{r.summary}</span>
        </div>
      ),
    },
    { id: "severity", header: "Severity", className: "nowrap", cell: (r) => <span className={`badge ${SEVERITY_TONE[r.severity]}`}>{r.severity}</span> },
    {
      id: "scope", header: "Scope", cell: (r) => r.condition.type === "config_source_failing"
        ? (r.condition.sourceNames.length ? <span>{r.condition.sourceNames.join(", ")}</span> : <span className="faint">every config source</span>)
        : Object.keys(r.labelSelector).length ? <span className="mono">{selectorText(r.labelSelector)}</span> : <span className="faint">every device</span>,
    },
    { id: "targets", header: "Notifies", cell: (r) => (r.targetIds.length ? r.targetIds.map((id) => targetName.get(id) ?? "…").join(", ") : <span className="faint">nobody</span>) },
    {
      id: "firing",
      header: "Firing",
      className: "nowrap num",
      cell: (r) => (r.firingCount > 0 ? <Link to="/alerts" search={{}}>{counted(r.firingCount, "device")}</Link> : "0"),
    },
    { id: "state", header: "State", cell: (r) => <span className={`badge badge--${r.enabled ? "success" : "offline"}`}>{r.enabled ? "enabled" : "disabled"}</span> },
    { id: "evaluated", header: "Last evaluated", className: "nowrap", cell: (r) => <RelativeTime value={r.lastEvaluatedAt} /> },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (r: AlertRule) => (
        <ManagedGate resource={r}>
          <div className="alert-actions">
            <Link to="/alerts/rules/$ruleId/edit" params={{ ruleId: r.id }} className="btn btn--small btn--icon" aria-label={`Edit ${r.name}`}><Pencil aria-hidden="true" /></Link>
            <Button size="small" icon={r.enabled ? <PowerOff /> : <Power />} busy={toggle.pendingInput?.id === r.id} onClick={() => void toggle.run(r)} aria-label={`${r.enabled ? "Disable" : "Enable"} ${r.name}`} />
            <Button size="small" variant="danger" icon={<Trash2 />} onClick={() => setDeleting(r)} aria-label={`Delete ${r.name}`} />
          </div>
        </ManagedGate>
      ),
    }] : []),
  ];

  return (
    <Card flush>
      <QueryTable
        query={rules}
        what="the alert rules"
        caption="Alert rules"
        columns={columns}
        rowKey={(r) => r.id}
        page={page}
        pageLabel="Alert rule pages"
        empty={
          <Empty title="No alert rules yet" action={canWrite && <Link to="/alerts/rules/new" className="btn btn--primary">Create an alert rule</Link>}>
            A rule watches a metric threshold, devices offline, failed deployments or expiring certificates, and notifies its targets.
          </Empty>
        }
      />
      <ConfirmDialog
        open={deleting !== null}
        onClose={() => setDeleting(null)}
        title={`Delete the rule “${deleting?.name ?? ""}”?`}
        confirmLabel="Delete rule"
        action={remove}
      >
        <p>
          Its alerts{deleting && deleting.firingCount > 0 ? ` (${deleting.firingCount} firing now)` : ""} and its delivery history are deleted with it, and it stops notifying.
        </p>
      </ConfirmDialog>
    </Card>
  );
}
