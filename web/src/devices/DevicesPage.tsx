// The fleet as a table: every filter, the sort and the page live in the URL; the server
// pages, sorts and filters (one page of rows in the browser, whatever the fleet's size); status
// changes arrive over the realtime channel. Selected devices can be labelled, unlabelled or
// deleted together.
import { useEffect, useState } from "react";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Plus, Search, Tag, Trash2, X } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { urlPage } from "../ui/urlPage";
import { Empty, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { StatusBadge } from "../ui/StatusBadge";
import { useDebounced } from "../ui/useDebounced";
import { LabelChips } from "./LabelChips";
import { BulkDeleteDialog, BulkLabelDialog } from "./bulk-actions";
import { selectorProblem, selectorUnfinished, SelectorInput } from "./SelectorInput";
import { DEVICE_STATUSES, type Device, type DeviceStatus } from "./types";
import { DEVICE_SORTS, type DeviceListSearch } from "./search";
import "./devices.css";

const DEFAULT_LIMIT = 50;
type TableSort = (typeof DEVICE_SORTS)[number];

function parseStatuses(text: string | undefined): DeviceStatus[] {
  const wanted = new Set((text ?? "").split(","));
  return DEVICE_STATUSES.filter((s) => wanted.has(s));
}

export function DevicesPage() {
  // A role without devices:read reaches this page only by a link: it says so, and asks the API
  // for nothing it would refuse (the table, the label suggestions).
  const canRead = useCan("devices:read");
  if (!canRead) {
    return (
      <>
        <PageHeader title="Devices" description="All devices of this organization" />
        <Card><Forbidden what="devices" /></Card>
      </>
    );
  }
  return <DeviceTable />;
}

function DeviceTable() {
  const search = useSearch({ from: "/app/devices" });
  const navigate = useNavigate({ from: "/devices" });
  const canWrite = useCan("devices:write");
  const canEnroll = useCan("enrollment:write");

  const setSearch = (patch: Partial<DeviceListSearch>, resetPage = true) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, ...(resetPage ? { offset: undefined } : {}) }), replace: true });

  // Text filters update the URL once typing pauses.
  const [text, setText] = useState(search.q ?? "");
  const [selectorText, setSelectorText] = useState(search.labels ?? "");
  const settledText = useDebounced(text);
  const settledSelector = useDebounced(selectorText);
  useEffect(() => {
    if ((settledText || undefined) !== search.q) void setSearch({ q: settledText || undefined });
  }, [settledText]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    // only a selector the API accepts, and not one still being typed (`site=`), goes to the URL
    if (selectorProblem(settledSelector) || selectorUnfinished(settledSelector)) return;
    if ((settledSelector || undefined) !== search.labels) void setSearch({ labels: settledSelector || undefined });
  }, [settledSelector]); // eslint-disable-line react-hooks/exhaustive-deps

  const statuses = parseStatuses(search.status);
  const page = urlPage(search, setSearch, DEFAULT_LIMIT);
  const sort: TableSort = search.sort ?? "name";
  const order = search.order ?? (sort === "name" ? "asc" : "desc");
  const input = {
    ...page.input,
    sort,
    order,
    status: statuses.length ? statuses : undefined,
    labels: search.labels || undefined,
    search: search.q || undefined,
  };
  const devices = useQuery({ ...q.devices.list.options(input), placeholderData: keepPreviousData });

  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [dialog, setDialog] = useState<"label" | "delete" | null>(null);
  const filtered = statuses.length > 0 || !!search.labels || !!search.q;

  function toggleStatus(status: DeviceStatus) {
    const next = statuses.includes(status) ? statuses.filter((s) => s !== status) : [...statuses, status];
    void setSearch({ status: next.length ? next.join(",") : undefined });
  }

  function clearFilters() {
    setText("");
    setSelectorText("");
    void navigate({ search: {}, replace: true });
  }

  const columns: Column<Device, TableSort>[] = [
    {
      id: "name",
      header: "Name",
      sortKey: "name",
      cell: (d) => (
        <div className="device-name">
          <Link to="/devices/$deviceId" params={{ deviceId: d.id }}>{d.name}</Link>
          {/* The reported id under the name, unless the name is that id (the default at enrollment). */}
          {d.reportedDeviceId && d.reportedDeviceId !== d.name && <span className="faint mono">{d.reportedDeviceId}</span>}
        </div>
      ),
    },
    { id: "status", header: "Status", sortKey: "status", className: "nowrap", cell: (d) => <>{<StatusBadge status={d.status} />}{d.admission === "pending" && <> <Link to="/enrollment-requests" className="badge badge--warning">awaiting approval</Link></>}{d.attestation === "tpm" && <> <span className="badge badge--success" title="Its key is held by a TPM the service attested at enrollment">TPM attested</span></>}</> },
    { id: "labels", header: "Labels", className: "col-labels", cell: (d) => <LabelChips labels={d.labels} max={3} /> },
    { id: "lastSeen", header: "Last seen", sortKey: "lastSeenAt", className: "nowrap", cell: (d) => <RelativeTime value={d.lastSeenAt} /> },
    // The architecture decides which deployments fit a device; the OS and agent are on its page.
    { id: "arch", header: "Architecture", className: "nowrap", cell: (d) => d.arch ?? <span className="faint">unknown</span> },
    { id: "created", header: "Created", sortKey: "createdAt", className: "nowrap", cell: (d) => <RelativeTime value={d.createdAt} /> },
  ];

  const selectedIds = [...selected];
  return (
    <>
      <PageHeader
        title="Devices"
        description={devices.data ? `${devices.data.total.toLocaleString()} ${filtered ? "matching" : "in this organization"}` : "All devices of this organization"}
        actions={canEnroll && <Link to="/enrollment-tokens" className="btn"><Plus aria-hidden="true" />Enroll devices</Link>}
      />
      <Card flush>
        <div className="toolbar">
          <div className="field search-field">
            <label htmlFor="device-search">Search</label>
            <div className="input-icon">
              <Search aria-hidden="true" />
              <input id="device-search" className="input" type="search" placeholder="Name or reported device id" value={text} onChange={(e) => setText(e.target.value)} />
            </div>
          </div>
          <SelectorInput id="device-labels" value={selectorText} onChange={setSelectorText} />
          <fieldset className="status-filter">
            <legend>Status</legend>
            {DEVICE_STATUSES.map((s) => (
              <label key={s} className={`status-toggle badge badge--${s}`}>
                <input type="checkbox" checked={statuses.includes(s)} onChange={() => toggleStatus(s)} />
                {s}
              </label>
            ))}
          </fieldset>
          {filtered && (
            <Button size="small" variant="ghost" icon={<X />} onClick={clearFilters}>
              Clear filters
            </Button>
          )}
        </div>
        {canWrite && selected.size > 0 && (
          <div className="bulk-bar" role="region" aria-label="Selected devices">
            <strong>{selected.size} selected</strong>
            <Button size="small" icon={<Tag />} onClick={() => setDialog("label")}>Set or remove a label</Button>
            <Button size="small" variant="danger" icon={<Trash2 />} onClick={() => setDialog("delete")}>Delete</Button>
            <Button size="small" variant="ghost" onClick={() => setSelected(new Set())}>Clear selection</Button>
          </div>
        )}
        {/* Server paging: one page of rows in the browser, whatever the fleet's size (QueryTable renders that page). */}
        <QueryTable
          query={devices}
          what="devices"
          caption="Devices"
          columns={columns}
          rowKey={(d) => d.id}
          sort={{ key: sort, order }}
          onSort={(next) => void setSearch({ sort: next.key, order: next.order })}
          selection={canWrite ? { selected, onChange: setSelected, rowLabel: (d) => `Select ${d.name}` } : undefined}
          page={page}
          pageLabel="Device pages"
          filtered={filtered}
          noMatch="No device matches these filters"
          onClearFilters={clearFilters}
          empty={
            <Empty title="No devices yet" action={canEnroll && <Link to="/enrollment-tokens" className="btn btn--primary">Create an enrollment token</Link>}>
              Devices appear here once they enroll with a token of this organization. The enrollment page shows the simulator command that enrolls test devices in a minute.
            </Empty>
          }
        />
      </Card>
      {dialog === "label" && <BulkLabelDialog onClose={() => setDialog(null)} deviceIds={selectedIds} onDone={() => setSelected(new Set())} />}
      <BulkDeleteDialog open={dialog === "delete"} onClose={() => setDialog(null)} deviceIds={selectedIds} onDone={() => setSelected(new Set())} />
    </>
  );
}
