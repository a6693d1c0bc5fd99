// The device's operating system (docs/os-updates.md), shown for a device whose agent reports one
// (RAUC): what runs in the booted slot, what the other slot holds, how the last system update
// ended, and the history of system updates, newest first.
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import type { ReactNode } from "react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useLocalPage } from "../ui/useLocalPage";
import type { Device } from "./types";

type System = NonNullable<Device["system"]>;
type SystemUpdate = RouterOutputs["devices"]["systemUpdates"]["items"][number];

const OUTCOMES: Record<SystemUpdate["outcome"], { label: string; badge: string }> = {
  committed: { label: "committed", badge: "badge--success" },
  "rolled-back": { label: "rolled back", badge: "badge--error" },
  failed: { label: "failed", badge: "badge--error" },
};

/** sha256:<first 12 hex>, the whole digest on hover */
function Digest({ value }: { value: string | null }) {
  return value ? <span className="mono" title={value}>{value.slice(0, 19)}…</span> : <span className="faint">unknown</span>;
}

function Slot({ slot }: { slot: System["booted"] }) {
  return (
    <>
      <span className="mono">{slot.slot ?? "?"}</span> · {slot.version ?? <span className="faint">version unknown</span>} · <Digest value={slot.digest ?? slot.imageDigest} />
    </>
  );
}

function Outcome({ outcome }: { outcome: SystemUpdate["outcome"] }) {
  return <span className={`badge ${OUTCOMES[outcome].badge}`}>{OUTCOMES[outcome].label}</span>;
}

const columns: Column<SystemUpdate>[] = [
  { id: "finished", header: "Finished", cell: (u) => <time dateTime={u.finishedAt} title={formatDateTime(u.finishedAt)}><RelativeTime value={u.finishedAt} /></time> },
  { id: "version", header: "Version", cell: (u) => <>{u.fromVersion ?? "?"} → {u.toVersion ?? "?"}</> },
  { id: "slots", header: "Slots", cell: (u) => <span className="mono">{u.fromSlot ?? "?"} → {u.toSlot ?? "?"}</span> },
  { id: "outcome", header: "Outcome", cell: (u) => <Outcome outcome={u.outcome} /> },
  { id: "reason", header: "Reason", cell: (u) => u.reason ?? "" },
  { id: "digest", header: "Bundle", cell: (u) => <Digest value={u.digest} /> },
];

function Row({ label, children }: { label: string; children: ReactNode }) {
  return (
    <>
      <dt>{label}</dt>
      <dd>{children}</dd>
    </>
  );
}

/** Nothing for a device without a reported system (no RAUC). */
export function SystemCard({ device }: { device: Device }) {
  const system = device.system;
  const page = useLocalPage(10);
  const updates = useQuery({ ...q.devices.systemUpdates.options({ id: device.id, ...page.input }), placeholderData: keepPreviousData, enabled: system != null });
  if (!system) return null;
  return (
    <Card title="System" flush>
      {/* the card is flush for the table: the list gets a card body's padding of its own */}
      <div className="card__body">
        <dl className="facts" aria-label="Operating system">
          <Row label="Running"><Slot slot={system.booted} /></Row>
          <Row label="Other slot"><Slot slot={system.other} /></Row>
          <Row label="Last update">
            {system.lastUpdate ? (
              <>{system.lastUpdate.version ?? "?"} <Outcome outcome={system.lastUpdate.outcome} />{system.lastUpdate.reason && <> · {system.lastUpdate.reason}</>}</>
            ) : <span className="faint">none reported</span>}
          </Row>
          <Row label="Reported"><RelativeTime value={system.reportedAt} /></Row>
        </dl>
      </div>
      <QueryTable query={updates} what="the system updates" caption="System updates" columns={columns} rowKey={(u) => u.id} page={page}
        empty={<Empty title="No system update yet" />} loadingRows={3} />
    </Card>
  );
}
