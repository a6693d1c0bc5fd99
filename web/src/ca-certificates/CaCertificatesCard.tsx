// The organization's certificate authorities (/api/v1/ca-certificates): which one signs the
// devices' certificates, how long each has left, and, for whoever may, generating or uploading
// one, making one the default, renewing, retiring and deleting. The certificate and its
// revocation list are links to the API's own downloads: the browser saves them as files.
import { useState } from "react";
import { keepPreviousData, useQuery, useQueryClient } from "@tanstack/react-query";
import { AlertTriangle, Ban, Download, FileUp, RefreshCw, ShieldCheck, ShieldPlus, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog } from "../ui/Dialog";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { formatDateTime, useNow } from "../ui/time";
import { useToast } from "../ui/toast";
import { useLocalPage } from "../ui/useLocalPage";
import { caStateOf, expiryOf, movesOf, type CaCertificate, type CaState } from "./ca-facts";
import { GenerateCaDialog, RenewCaDialog, UploadCaDialog } from "./CaDialogs";
import "./ca-certificates.css";

const PAGE = 25;
const STATE_TONE: Record<CaState, string> = {
  default: "accent", "in service": "success", retired: "offline", expired: "danger", "not yet valid": "warning", "trust only": "offline",
};

type Confirming = { kind: "default" | "retire" | "delete"; ca: CaCertificate };

/** Time left before `notAfter`; `quiet`: no warning (a retired CA's end concerns no one). */
export function Expiry({ notAfter, now, quiet = false }: { notAfter: string; now: number; quiet?: boolean }) {
  const computed = expiryOf(notAfter, now);
  const expiry = quiet ? { ...computed, tone: "ok" as const } : computed;
  return (
    <span className={`expiry expiry--${expiry.tone}`}>
      {expiry.tone !== "ok" && <AlertTriangle aria-hidden="true" />}
      <time dateTime={notAfter} title={formatDateTime(notAfter)}>{expiry.text}</time>
    </span>
  );
}

export function CaCertificatesCard() {
  const canWrite = useCan("certificates:write");
  const canAdmin = useCan("certificates:admin");
  const queryClient = useQueryClient();
  const toast = useToast();
  const now = Math.max(useNow(), Date.now());
  const page = useLocalPage(PAGE);
  const [dialog, setDialog] = useState<"generate" | "upload" | null>(null);
  const [renewing, setRenewing] = useState<CaCertificate | null>(null);
  const [confirming, setConfirming] = useState<Confirming | null>(null);
  const cas = useQuery({ ...q.caCertificates.list.options(page.input), placeholderData: keepPreviousData });

  /** CAs change which certificates the fleet gets, and the statistics by CA. */
  const refresh = () => Promise.all([
    queryClient.invalidateQueries({ queryKey: q.caCertificates.key() }),
    queryClient.invalidateQueries({ queryKey: q.certificates.key() }),
  ]);

  const columns: Column<CaCertificate>[] = [
    {
      id: "name",
      header: "Name",
      cell: (ca) => <div className="ca-name"><strong>{ca.name}</strong><span className="faint">{ca.subject}</span></div>,
    },
    {
      id: "state",
      header: "State",
      cell: (ca) => {
        const state = caStateOf(ca, now);
        return <span className={`badge badge--${STATE_TONE[state]}`} title={state === "trust only" ? "Uploaded without its private key: trusted and downloadable, signs nothing" : undefined}>{state}</span>;
      },
    },
    { id: "key", header: "Key", cell: (ca) => <span className="nowrap">{ca.keyAlgorithm}</span> },
    { id: "origin", header: "Origin", cell: (ca) => ca.origin },
    { id: "expires", header: "Expires", cell: (ca) => <Expiry notAfter={ca.notAfter} now={now} quiet={ca.retiredAt !== null} /> },
    {
      id: "files",
      header: "Download",
      cell: (ca) => (
        <div className="row ca-actions">
          <a className="btn btn--small" href={`/api/v1/ca-certificates/${ca.id}/download`} download aria-label={`Download the certificate of ${ca.name} as PEM`}>
            <Download aria-hidden="true" />PEM
          </a>
          {movesOf(ca, now).crl && (
            <a className="btn btn--small" href={`/api/v1/ca-certificates/${ca.id}/crl`} download aria-label={`Download the CRL of ${ca.name}`}>
              <Download aria-hidden="true" />CRL
            </a>
          )}
        </div>
      ),
    },
    ...(canWrite || canAdmin ? [{
      id: "actions",
      header: "Actions",
      cell: (ca: CaCertificate) => {
        const moves = movesOf(ca, now);
        return (
          <div className="row ca-actions">
            {canAdmin && moves.setDefault && (
              <Button size="small" icon={<ShieldCheck />} onClick={() => setConfirming({ kind: "default", ca })} aria-label={`Make default: ${ca.name}`}>Make default</Button>
            )}
            {canWrite && moves.renew && (
              <Button size="small" icon={<RefreshCw />} onClick={() => setRenewing(ca)} aria-label={`Renew ${ca.name}`}>Renew</Button>
            )}
            {canAdmin && moves.retire && (
              <Button size="small" icon={<Ban />} onClick={() => setConfirming({ kind: "retire", ca })} aria-label={`Retire ${ca.name}`}>Retire</Button>
            )}
            {canAdmin && moves.delete && (
              <Button size="small" icon={<Trash2 />} onClick={() => setConfirming({ kind: "delete", ca })} aria-label={`Delete ${ca.name}`}>Delete</Button>
            )}
          </div>
        );
      },
    }] : []),
  ];

  const writeActions = canWrite && (
    <>
      <Button icon={<FileUp />} onClick={() => setDialog("upload")}>Upload CA</Button>
      <Button variant="primary" icon={<ShieldPlus />} onClick={() => setDialog("generate")}>Generate CA</Button>
    </>
  );

  return (
    <Card title="Certificate authorities" actions={writeActions} flush>
      {!cas.isError && cas.data && page.offset === 0 && <DefaultCaNotice cas={cas.data.items} now={now} />}
      <QueryTable
        query={cas}
        what="the certificate authorities"
        caption="Certificate authorities"
        columns={columns}
        rowKey={(ca) => ca.id}
        page={page}
        pageLabel="CA pages"
        loadingRows={3}
        empty={
          <Empty title="No certificate authority yet" action={canWrite && <Button variant="primary" icon={<ShieldPlus />} onClick={() => setDialog("generate")}>Generate CA</Button>}>
            Devices get their certificate from the organization's default CA when they enroll: without one, every enrollment is refused.
          </Empty>
        }
      />
      <GenerateCaDialog
        open={dialog === "generate"}
        onClose={() => setDialog(null)}
        onDone={async (ca) => {
          setDialog(null);
          toast.success(`CA “${ca.name}” generated${ca.isDefault ? ": it is the default" : ""}`);
          await refresh();
        }}
      />
      <UploadCaDialog
        open={dialog === "upload"}
        onClose={() => setDialog(null)}
        onDone={async (ca) => {
          setDialog(null);
          toast.success(`CA “${ca.name}” uploaded${ca.isDefault ? ": it is the default" : ""}`);
          await refresh();
        }}
      />
      <RenewCaDialog
        ca={renewing}
        onClose={() => setRenewing(null)}
        onDone={async (ca) => {
          setRenewing(null);
          toast.success(`CA renewed as “${ca.name}”${ca.isDefault ? ", now the default" : ""}`);
          await refresh();
        }}
      />
      <ConfirmCaMove confirming={confirming} onClose={() => setConfirming(null)} onDone={refresh} />
    </Card>
  );
}

/** Says when the fleet's signing CA is missing or about to expire: enrollments depend on it. */
function DefaultCaNotice({ cas, now }: { cas: CaCertificate[]; now: number }) {
  const signing = cas.find((ca) => caStateOf(ca, now) === "default");
  if (!signing) {
    if (cas.length === 0) return null; // the empty state says it
    return (
      <div className="alert-box alert-box--warning ca-notice" role="status">
        <AlertTriangle aria-hidden="true" />
        <p><strong>No default CA in service.</strong> Devices cannot enroll or renew their certificates until a CA that can sign is made the default.</p>
      </div>
    );
  }
  const expiry = expiryOf(signing.notAfter, now);
  if (expiry.tone !== "warning") return null;
  return (
    <div className="alert-box alert-box--warning ca-notice" role="status">
      <AlertTriangle aria-hidden="true" />
      <p><strong>The default CA “{signing.name}” expires soon ({expiry.text}).</strong> Renew it, or make another CA the default, before devices can no longer get certificates.</p>
    </div>
  );
}

const CONFIRM_TEXT = {
  default: {
    title: (ca: CaCertificate) => `Make “${ca.name}” the default CA?`,
    label: "Make default",
    body: (ca: CaCertificate) => <p>Devices that enroll or renew from now on get their certificate from “{ca.name}” ({ca.subject}). Certificates issued by the current default stay valid.</p>,
  },
  retire: {
    title: (ca: CaCertificate) => `Retire “${ca.name}”?`,
    label: "Retire CA",
    body: (ca: CaCertificate) => (
      <p>
        “{ca.name}” signs no new certificate{ca.isDefault ? " and stops being the default: devices cannot enroll until another CA is made the default" : ""}.
        Certificates it issued keep working until they expire or are revoked. A retired CA cannot be brought back into service.
      </p>
    ),
  },
  delete: {
    title: (ca: CaCertificate) => `Delete “${ca.name}”?`,
    label: "Delete CA",
    body: (ca: CaCertificate) => <p>“{ca.name}” and its key are removed. The service refuses while certificates it issued are still valid.</p>,
  },
} as const;

function ConfirmCaMove({ confirming, onClose, onDone }: { confirming: Confirming | null; onClose: () => void; onDone: () => Promise<unknown> }) {
  const toast = useToast();
  const text = confirming && CONFIRM_TEXT[confirming.kind];
  return (
    <ConfirmDialog
      open={confirming !== null}
      onClose={onClose}
      danger={confirming?.kind !== "default"}
      title={confirming && text ? text.title(confirming.ca) : ""}
      confirmLabel={text?.label ?? ""}
      onConfirm={async () => {
        const { kind, ca } = confirming!;
        if (kind === "default") await q.caCertificates.setDefault.call({ id: ca.id });
        if (kind === "retire") await q.caCertificates.retire.call({ id: ca.id });
        if (kind === "delete") await q.caCertificates.delete.call({ id: ca.id });
        toast.success(kind === "default" ? `“${ca.name}” is the default CA` : kind === "retire" ? `“${ca.name}” retired` : `“${ca.name}” deleted`);
        await onDone();
      }}
    >
      {confirming && text?.body(confirming.ca)}
    </ConfirmDialog>
  );
}
