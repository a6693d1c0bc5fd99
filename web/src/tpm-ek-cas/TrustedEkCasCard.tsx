// The TPM endorsement key manufacturer CAs the organization trusts (/api/v1/tpm-ek-cas): a
// device enrolling with `fleet-agent enroll --tpm` is attested only when its EK certificate
// chains to one of them (docs/admission.md, "TPM-held keys"). Shown on the Enrollment page.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Plus, Trash2 } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";

type EkCa = RouterOutputs["tpmEkCas"]["list"]["items"][number];

export function TrustedEkCasCard() {
  const canWrite = useCan("enrollment:write");
  const page = useLocalPage(20);
  const [adding, setAdding] = useState(false);
  const [removing, setRemoving] = useState<EkCa | null>(null);
  const cas = useQuery({ ...q.tpmEkCas.list.options(page.input), placeholderData: keepPreviousData });
  const remove = useAction({ mutationFn: () => q.tpmEkCas.delete.call({ id: removing!.id }) }, {
    invalidates: [q.tpmEkCas.key()],
    success: () => `“${removing?.name ?? ""}” is no longer trusted`,
  });

  const columns: Column<EkCa>[] = [
    { id: "name", header: "Name", cell: (c) => <div className="stacked-cell"><strong>{c.name}</strong><span className="faint">{c.subject}</span></div> },
    { id: "fingerprint", header: "Fingerprint", cell: (c) => <code title={`sha256:${c.fingerprint}`}>{c.fingerprint.slice(0, 16)}…</code> },
    { id: "expires", header: "Expires", cell: (c) => <RelativeTime value={c.notAfter} /> },
    { id: "added", header: "Added", cell: (c) => <RelativeTime value={c.createdAt} /> },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (c: EkCa) => <Button size="small" icon={<Trash2 />} onClick={() => setRemoving(c)} aria-label={`Remove ${c.name}`}>Remove</Button>,
    }] : []),
  ];

  return (
    <>
      <Card
        title="Trusted TPM manufacturer CAs"
        flush
        actions={canWrite && <Button icon={<Plus />} onClick={() => setAdding(true)}>Trust a CA</Button>}
      >
        <QueryTable
          query={cas}
          what="trusted TPM manufacturer CAs"
          caption="Trusted TPM manufacturer CAs"
          columns={columns}
          rowKey={(c) => c.id}
          page={page}
          pageLabel="Trusted CA pages"
          empty={
            <Empty title="No TPM manufacturer CA trusted">
              Devices enrolling with <code>fleet-agent enroll --tpm</code> are attested only when their TPM's endorsement key certificate chains to a CA trusted here; until then they are refused.
            </Empty>
          }
        />
      </Card>
      {adding && <TrustCaDialog onClose={() => setAdding(false)} />}
      <ConfirmDialog
        open={removing !== null}
        onClose={() => setRemoving(null)}
        title={`Stop trusting “${removing?.name ?? ""}”?`}
        confirmLabel="Stop trusting"
        action={remove}
      >
        <p>Devices whose TPM it vouches for can no longer enroll with <code>--tpm</code>; devices attested already keep working, and their next certificate renewal is refused.</p>
      </ConfirmDialog>
    </>
  );
}

function TrustCaDialog({ onClose }: { onClose: () => void }) {
  const [name, setName] = useState("");
  const [certificate, setCertificate] = useState("");
  const create = useAction(q.tpmEkCas.create.mutation(), { invalidates: [q.tpmEkCas.key()], onSuccess: onClose, success: () => `“${name.trim()}” trusted` });
  return (
    <Dialog open onClose={onClose} title="Trust a TPM manufacturer CA">
      <form className="stack" onSubmit={create.submit(() => ({ name: name.trim(), certificate }))}>
        <div className="field">
          <label htmlFor="ekca-name">Name</label>
          <input id="ekca-name" className="input" required maxLength={200} value={name} onChange={(e) => setName(e.target.value)} placeholder="Infineon TPM EK CA" />
        </div>
        <div className="field">
          <label htmlFor="ekca-certificate">CA certificate (PEM)</label>
          <textarea id="ekca-certificate" className="input mono pem-input" spellCheck={false} required rows={8} value={certificate} onChange={(e) => setCertificate(e.target.value)} placeholder="-----BEGIN ...-----" aria-describedby="ekca-hint" />
          <span id="ekca-hint" className="field__hint">The CA that issues the endorsement key certificates of your TPMs (its vendor publishes it), or an intermediate of it.</span>
        </div>
        <FormFooter action={create} onCancel={onClose} disabled={!name.trim() || !certificate.trim()} submitLabel="Trust CA" />
      </form>
    </Dialog>
  );
}
