// /certificates: the organization's certificate authorities (web/src/ca-certificates/) and the
// device certificates across the fleet: how many are valid, expired or revoked, and the ones
// that expire soon (not yet renewed), each linking to its device. The window and the page of
// that list live in the URL (search.ts).
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Link, useNavigate, useSearch } from "@tanstack/react-router";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { CaCertificatesCard, Expiry } from "../ca-certificates/CaCertificatesCard";
import { Card, PageHeader } from "../ui/Card";
import { Stat } from "../ui/charts";
import type { Column } from "../ui/DataTable";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorState, Forbidden } from "../ui/states";
import { useNow } from "../ui/time";
import { EXPIRING_WINDOWS } from "./search";
import "../ca-certificates/ca-certificates.css";
import { counted } from "../../../src/lib/plural";

type ExpiringCertificate = RouterOutputs["certificates"]["expiring"]["items"][number];

const PAGE = 25;
const DEFAULT_DAYS = 30;
const numbers = new Intl.NumberFormat();

export function CertificatesPage() {
  const canRead = useCan("certificates:read");
  return (
    <>
      <PageHeader
        title="Certificates"
        description="Devices prove who they are with a certificate signed by the organization's default CA. Keep a CA in service and renew certificates before they expire."
      />
      {canRead ? (
        <div className="stack">
          <CaCertificatesCard />
          <ExpiringCertificatesCard />
        </div>
      ) : <Forbidden what="the certificates" />}
    </>
  );
}

function ExpiringCertificatesCard() {
  const search = useSearch({ from: "/app/certificates" });
  const navigate = useNavigate({ from: "/certificates" });
  const now = Math.max(useNow(), Date.now());
  const days = search.days ?? DEFAULT_DAYS;
  const offset = search.offset ?? 0;
  const stats = useQuery(q.certificates.stats.options({ days }));
  const expiring = useQuery({ ...q.certificates.expiring.options({ days, limit: PAGE, offset }), placeholderData: keepPreviousData });
  const windows = EXPIRING_WINDOWS.includes(days as (typeof EXPIRING_WINDOWS)[number]) ? EXPIRING_WINDOWS : [...EXPIRING_WINDOWS, days].sort((a, b) => a - b);

  const columns: Column<ExpiringCertificate>[] = [
    {
      id: "device",
      header: "Device",
      cell: (c) => c.deviceName !== null
        ? <Link to="/devices/$deviceId" params={{ deviceId: c.deviceId }} search={{ tab: "certificates" }}>{c.deviceName}</Link>
        : <span className="faint">deleted device</span>,
    },
    { id: "expires", header: "Expires", cell: (c) => <Expiry notAfter={c.notAfter} now={now} /> },
    { id: "serial", header: "Serial", cell: (c) => <code title={c.fingerprint}>{c.serialNumber.slice(0, 20)}{c.serialNumber.length > 20 ? "…" : ""}</code> },
    { id: "issuer", header: "Issuer", cell: (c) => <span className="faint">{c.issuer}</span> },
  ];

  const windowSelect = (
    <div className="field field--inline">
      <label htmlFor="expiring-days">Expiring within</label>
      <select
        id="expiring-days"
        className="select"
        value={days}
        onChange={(e) => void navigate({ search: (prev) => ({ ...prev, days: Number(e.target.value) === DEFAULT_DAYS ? undefined : Number(e.target.value), offset: undefined }) })}
      >
        {windows.map((d) => <option key={d} value={d}>{counted(d, "day")}</option>)}
      </select>
    </div>
  );

  return (
    <>
      <Card title="Device certificates">
        {stats.isError ? <ErrorState error={stats.error} what="the certificate statistics" retry={() => stats.refetch()} /> : (
          <div className="certificate-stats" aria-busy={stats.isPending || undefined}>
            <Stat label="Valid" value={stats.data ? numbers.format(stats.data.valid) : "…"} />
            <Stat label={`Expiring within ${counted(days, "day")}`} value={stats.data ? numbers.format(stats.data.expiringSoon) : "…"} tone={stats.data?.expiringSoon ? "warning" : undefined} />
            <Stat label="Expired" value={stats.data ? numbers.format(stats.data.expired) : "…"} tone={stats.data?.expired ? "danger" : undefined} />
            <Stat label="Revoked" value={stats.data ? numbers.format(stats.data.revoked) : "…"} />
          </div>
        )}
      </Card>
      <Card title="Expiring soon" actions={windowSelect} flush>
        <QueryTable
          query={expiring}
          what="the expiring certificates"
          caption={`Device certificates expiring within ${counted(days, "day")}`}
          columns={columns}
          rowKey={(c) => c.id}
          loadingRows={4}
          page={{ offset, limit: PAGE, onOffset: (o) => void navigate({ search: (prev) => ({ ...prev, offset: o || undefined }) }) }}
          pageLabel="Expiring certificate pages"
          empty={
            <Empty title={`No device certificate expires within ${counted(days, "day")}`}>
              Valid certificates that are not renewed yet appear here, soonest first. Devices renew their own before they expire.
            </Empty>
          }
        />
      </Card>
    </>
  );
}
