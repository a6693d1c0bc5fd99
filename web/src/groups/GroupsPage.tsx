// Groups are label selectors: pick a label key to see its values with their counts and
// status breakdowns (op 14), or type any selector to count and break down the devices it
// matches (op 12), with a link to those devices in the device table. A group (or any
// selector) can be rolled back to the last good version of an application from here.
import { useEffect, useState } from "react";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { useQuery } from "@tanstack/react-query";
import { ArrowRight, Undo2 } from "lucide-react";
import { parseSelector } from "../../../src/modules/devices/selector";
import { q } from "../api/query";
import { Bars, Donut, Legend, type Slice } from "../ui/charts";
import { Card, PageHeader } from "../ui/Card";
import { DataTable, type Column } from "../ui/DataTable";
import { Empty, ErrorState, Loading } from "../ui/states";
import { statusLabel } from "../ui/StatusBadge";
import { useDebounced } from "../ui/useDebounced";
import { selectorProblem, SelectorInput } from "../devices/SelectorInput";
import { DEVICE_STATUSES, STATUS_COLORS } from "../devices/types";
import type { RouterOutputs } from "../api/client";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { GroupRollbackDialog } from "../rollback/GroupRollbackDialog";
import "./groups.css";
import { counted } from "../../../src/lib/plural";

type Group = RouterOutputs["groups"]["byLabel"]["groups"][number];
type ByStatus = Group["byStatus"];

const statusSlices = (byStatus: ByStatus): Slice[] =>
  DEVICE_STATUSES.map((s) => ({ key: s, label: statusLabel(s), value: byStatus[s], color: STATUS_COLORS[s] }));

export function GroupsPage() {
  const search = useSearch({ from: "/app/groups" });
  const navigate = useNavigate({ from: "/groups" });
  const keys = useQuery(q.groups.labelKeys.options({ limit: 200, offset: 0 }));
  const key = search.key ?? keys.data?.items[0]?.key;
  // The selector a rollback is being prepared for (the dialog is open while set).
  const [rollback, setRollback] = useState<Record<string, string> | null>(null);

  return (
    <>
      <PageHeader title="Groups" description="Devices grouped by their labels. A group is a label selector: every key=value pair must match." />
      <div className="groups">
        <Card title="Label keys" flush>
          {keys.isPending ? <Loading /> : keys.isError ? <ErrorState error={keys.error} what="groups" /> : keys.data.items.length === 0 ? (
            <Empty title="No labels yet">Give devices labels through their enrollment token or on their page; groups are built from them.</Empty>
          ) : (
            <ul className="key-list" aria-label="Label keys">
              {keys.data.items.map((k) => (
                <li key={k.key}>
                  <Link to="/groups" search={(prev) => ({ ...prev, key: k.key })} className="key-list__item" aria-current={k.key === key ? "page" : undefined}>
                    <span className="mono">{k.key}</span>
                    <span className="faint num">{counted(k.valueCount, "value")} · {counted(k.deviceCount, "device")}</span>
                  </Link>
                </li>
              ))}
            </ul>
          )}
        </Card>
        <div className="stack">
          {key && <ValuesCard labelKey={key} onRollback={setRollback} />}
          <SelectorCard initial={search.selector ?? ""} onSettled={(selector) => void navigate({ search: (prev) => ({ ...prev, selector: selector || undefined }), replace: true })} onRollback={setRollback} />
        </div>
      </div>
      {rollback && <GroupRollbackDialog initialTarget={{ labelSelector: rollback }} onClose={() => setRollback(null)} />}
    </>
  );
}

type OnRollback = (selector: Record<string, string>) => void;

function ValuesCard({ labelKey, onRollback }: { labelKey: string; onRollback: OnRollback }) {
  const groups = useQuery(q.groups.byLabel.options({ key: labelKey }));
  const canRollBack = useCan("deployments:write");
  const columns: Column<Group>[] = [
    { id: "value", header: "Value", cell: (g) => <span className="mono">{g.value || "(empty)"}</span> },
    { id: "count", header: "Devices", cell: (g) => <span className="num">{g.count.toLocaleString()}</span> },
    ...DEVICE_STATUSES.map((s) => ({ id: s, header: statusLabel(s), className: "num", cell: (g: Group) => g.byStatus[s] || <span className="faint">0</span> })),
    { id: "open", header: "Device table", cell: (g) => <Link to="/devices" search={{ labels: `${labelKey}=${g.value}` }}>Show<span className="visually-hidden"> devices with {labelKey}={g.value}</span></Link> },
    ...(canRollBack
      ? [{ id: "rollback", header: "Actions", cell: (g: Group) => (
          <Button size="small" variant="ghost" icon={<Undo2 />} aria-label={`Roll back devices with ${labelKey}=${g.value}`} onClick={() => onRollback({ [labelKey]: g.value })}>Roll back</Button>
        ) }]
      : []),
  ];
  // Not a QueryTable: one answer (every value of the key, unpaged) feeds the summary line, the
  // bar chart and the table, so its loading and error states stand for the whole card.
  return (
    <Card title={<>Values of <span className="mono">{labelKey}</span></>}>
      {groups.isPending ? <Loading /> : groups.isError ? <ErrorState error={groups.error} /> : (
        <div className="stack">
          <p className="muted">{counted(groups.data.total, "device")} {groups.data.total === 1 ? "carries" : "carry"} {labelKey}, in {counted(groups.data.groups.length, "group")}.</p>
          <Bars
            label={`Devices by ${labelKey}`}
            rows={groups.data.groups.slice(0, 12).map((g) => ({ key: g.value, label: g.value || "(empty)", value: g.count, segments: statusSlices(g.byStatus) }))}
          />
          <DataTable caption={`Values of ${labelKey}`} columns={columns} rows={groups.data.groups} rowKey={(g) => g.value} />
        </div>
      )}
    </Card>
  );
}

function SelectorCard({ initial, onSettled, onRollback }: { initial: string; onSettled: (selector: string) => void; onRollback: OnRollback }) {
  const canRollBack = useCan("deployments:write");
  const [text, setText] = useState(initial);
  const settled = useDebounced(text, 300);
  const valid = selectorProblem(settled) === null;
  useEffect(() => {
    if (valid) onSettled(settled.trim());
  }, [settled]); // eslint-disable-line react-hooks/exhaustive-deps
  const selector = valid ? parseSelector(settled) : {};
  const result = useQuery({ ...q.groups.query.options({ labelSelector: selector }), enabled: valid });
  return (
    <Card title="Evaluate a selector">
      <div className="stack">
        <SelectorInput id="group-selector" label="Label selector (empty: every device)" value={text} onChange={setText} />
        {!valid ? null : result.isPending ? <Loading /> : result.isError ? <ErrorState error={result.error} /> : (
          <div className="selector-result">
            <Donut slices={statusSlices(result.data.byStatus)} label="Matching devices by status" center={<><strong className="big-number">{result.data.total.toLocaleString()}</strong><span className="faint">match</span></>} />
            <div className="stack">
              <Legend slices={statusSlices(result.data.byStatus)} />
              <Link to="/devices" search={{ labels: settled.trim() || undefined }} className="btn">
                Show {result.data.total === 1 ? "this" : "these"} {counted(result.data.total, "device")} <ArrowRight aria-hidden="true" />
              </Link>
              {canRollBack && Object.keys(selector).length > 0 && (
                <Button icon={<Undo2 />} onClick={() => onRollback(selector)}>Roll back an application on these devices</Button>
              )}
            </div>
          </div>
        )}
      </div>
    </Card>
  );
}
