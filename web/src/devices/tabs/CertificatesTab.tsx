// The device's certificates: validity as time left, the PEM to download, and revocation with
// a reason (published on the CA's revocation list).
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Ban, Download } from "lucide-react";
import type { RouterInputs, RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useCan } from "../../app/session";
import { Button } from "../../ui/Button";
import { Card } from "../../ui/Card";
import type { Column } from "../../ui/DataTable";
import { ConfirmDialog } from "../../ui/Dialog";
import { QueryTable } from "../../ui/QueryTable";
import { Empty } from "../../ui/states";
import { DateTime, formatDateTime, RelativeTime } from "../../ui/time";
import { useAction } from "../../ui/useAction";
import { useLocalPage } from "../../ui/useLocalPage";
import type { Device } from "../types";

type Certificate = RouterOutputs["deviceCertificates"]["list"]["items"][number];
type Reason = RouterInputs["deviceCertificates"]["revoke"]["reason"];

/** The API's revocation reasons, in its order (checked against its type). */
const REASONS = ["Key compromise", "CA compromise", "Affiliation changed", "Superseded", "Cessation of operation", "Certificate hold", "Other"] as const satisfies readonly Reason[];

const STATUS_TONE: Record<Certificate["status"], string> = { valid: "success", expired: "warning", revoked: "danger" };
const PAGE = 25;

function downloadPem(cert: Certificate, deviceName: string) {
  const url = URL.createObjectURL(new Blob([cert.certificate], { type: "application/x-pem-file" }));
  const link = document.createElement("a");
  link.href = url;
  link.download = `${deviceName}-${cert.serialNumber.slice(0, 16)}.pem`;
  link.click();
  URL.revokeObjectURL(url);
}

export function CertificatesTab({ device }: { device: Device }) {
  const canWrite = useCan("certificates:write");
  const page = useLocalPage(PAGE);
  const [revoking, setRevoking] = useState<Certificate | null>(null);
  const [reason, setReason] = useState<Reason>("Cessation of operation");
  const certs = useQuery({ ...q.deviceCertificates.list.options({ deviceId: device.id, ...page.input }), placeholderData: keepPreviousData });

  const revoke = useAction({ mutationFn: () => q.deviceCertificates.revoke.call({ deviceId: device.id, certificateId: revoking!.id, reason }) }, {
    invalidates: [q.deviceCertificates.key()],
    success: "Certificate revoked",
  });

  const columns: Column<Certificate>[] = [
    { id: "serial", header: "Serial", cell: (c) => <code title={c.fingerprint}>{c.serialNumber.slice(0, 20)}{c.serialNumber.length > 20 ? "…" : ""}</code> },
    { id: "status", header: "Status", cell: (c) => <span className={`badge badge--${STATUS_TONE[c.status]}`}>{c.status}</span> },
    { id: "issued", header: "Issued", cell: (c) => <DateTime value={c.notBefore} /> },
    {
      id: "expires",
      header: "Expires",
      cell: (c) => <span className={c.status === "valid" && Date.parse(c.notAfter) - Date.now() < 30 * 86_400_000 ? "expiring" : undefined}><RelativeTime value={c.notAfter} /></span>,
    },
    { id: "issuer", header: "Issuer", cell: (c) => <span className="faint">{c.issuer}</span> },
    {
      id: "actions",
      header: "Actions",
      cell: (c) => (
        <div className="row">
          <Button size="small" icon={<Download />} onClick={() => downloadPem(c, device.name)} aria-label={`Download certificate ${c.serialNumber.slice(0, 8)} as PEM`}>PEM</Button>
          {canWrite && !c.revoked && (
            <Button size="small" icon={<Ban />} onClick={() => setRevoking(c)} aria-label={`Revoke certificate ${c.serialNumber.slice(0, 8)}`}>Revoke</Button>
          )}
          {c.revoked && c.revokeReason && <span className="faint">{c.revokeReason}</span>}
        </div>
      ),
    },
  ];

  return (
    <Card title="Certificates" flush>
      <QueryTable query={certs} what="this device's certificates" caption="Certificates" columns={columns} rowKey={(c) => c.id} page={page} pageLabel="Certificate pages"
        empty={<Empty title="No certificates">The device gets one when it enrolls.</Empty>} />
      <ConfirmDialog
        open={revoking !== null}
        onClose={() => setRevoking(null)}
        title="Revoke this certificate?"
        confirmLabel="Revoke certificate"
        action={revoke}
      >
        <p>
          The device can no longer authenticate with certificate <code>{revoking?.serialNumber.slice(0, 16)}</code>. It appears on the CA's
          revocation list with the reason you choose. If it is the device's only valid certificate, the device stops connecting.
        </p>
        <div className="field">
          <label htmlFor="revoke-reason">Reason</label>
          <select id="revoke-reason" className="select" value={reason} onChange={(e) => setReason(e.target.value as Reason)}>
            {REASONS.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </div>
      </ConfirmDialog>
    </Card>
  );
}
