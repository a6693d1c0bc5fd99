// The enrollment lobby (/enrollment-requests): devices enrolled with an `approval` token wait
// here, with what they said of themselves and what the service saw; approve or reject one, or
// every pending request whose asked-for labels match a selector (docs/admission.md).
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Check, CheckCheck, X } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { LabelChips } from "../devices/LabelChips";
import { LabelsEditor, type LabelRow, labelsOfRows } from "../devices/LabelsEditor";
import { SelectorInput, selectorProblem } from "../devices/SelectorInput";
import { parseSelector } from "../../../src/modules/devices/selector";
import { counted } from "../../../src/lib/plural";
import { PreauthorizedCard } from "../preauthorized-devices/PreauthorizedCard";

type Request = RouterOutputs["enrollmentRequests"]["list"]["items"][number];
type State = Request["state"];

const STATE_TONE: Record<State, string> = { pending: "warning", approved: "success", rejected: "offline", conflict: "danger" };
const STATE_WORDS: Record<State, string> = { pending: "awaiting approval", approved: "approved", rejected: "rejected", conflict: "conflict: refused" };
const SHOWN: Record<string, State[] | undefined> = { pending: ["pending"], conflict: ["conflict"], decided: ["approved", "rejected"], all: undefined };

/** os/arch and the rest of what the device reported, as one short line. */
function factsLine(facts: Record<string, unknown>): string {
  return Object.entries(facts).slice(0, 4).map(([k, v]) => `${k}: ${String(v)}`).join(", ");
}

export function LobbyPage() {
  const canWrite = useCan("enrollment:write");
  const page = useLocalPage(50);
  const [shown, setShown] = useState<keyof typeof SHOWN>("pending");
  const [approving, setApproving] = useState<Request | "matching" | null>(null);
  const [rejecting, setRejecting] = useState<Request | null>(null);
  const requests = useQuery({ ...q.enrollmentRequests.list.options({ ...page.input, state: SHOWN[shown] }), placeholderData: keepPreviousData });

  const columns: Column<Request>[] = [
    {
      id: "device",
      header: "Device says",
      cell: (r) => (
        <div className="stacked-cell">
          <strong>{r.name}</strong>
          <span className="faint">id <code>{r.reportedDeviceId}</code></span>
          {Object.keys(r.facts).length > 0 && <span className="faint">{factsLine(r.facts)}</span>}
        </div>
      ),
    },
    { id: "labels", header: "Labels asked for", cell: (r) => <LabelChips labels={r.requestedLabels} max={4} /> },
    {
      id: "seen",
      header: "Service saw",
      cell: (r) => (
        <div className="stacked-cell">
          <span>{r.sourceAddress ?? "unknown address"}</span>
          <span className="faint">token “{r.tokenName}”, <RelativeTime value={r.createdAt} /></span>
        </div>
      ),
    },
    {
      id: "key",
      header: "Key fingerprint",
      cell: (r) => (
        <div className="stacked-cell">
          <code title={`sha256:${r.keyFingerprint}`}>{r.keyFingerprint.slice(0, 16)}…</code>
          {/* verified by the service (docs/admission.md, "TPM-held keys"), not said by the device */}
          {r.attestation && (
            <span className="badge badge--success" title={`Endorsement key sha256:${r.attestation.ekHash}, issued by ${r.attestation.ekIssuer}, trusted as “${r.attestation.trustedCaName}”`}>
              TPM attested{r.attestation.manufacturer ? ` (${r.attestation.manufacturer})` : ""}
            </span>
          )}
        </div>
      ),
    },
    {
      id: "state",
      header: "State",
      cell: (r) => (
        <div className="stacked-cell">
          <span className={`badge badge--${STATE_TONE[r.state]}`}>{STATE_WORDS[r.state]}</span>
          {r.reason && <span className="faint">{r.reason}</span>}
        </div>
      ),
    },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (r: Request) => r.state === "pending" && (
        <div className="row row--tight">
          <Button size="small" variant="primary" icon={<Check />} onClick={() => setApproving(r)} aria-label={`Approve ${r.name}`}>Approve</Button>
          <Button size="small" icon={<X />} onClick={() => setRejecting(r)} aria-label={`Reject ${r.name}`}>Reject</Button>
        </div>
      ),
    }] : []),
  ];

  return (
    <>
      <PageHeader
        title="Lobby"
        description="Devices enrolled with a token that asks for approval wait here. They heartbeat and are listed under Devices, but get no deployment, configuration, secret or image until approved."
        actions={canWrite && <Button icon={<CheckCheck />} onClick={() => setApproving("matching")}>Approve matching…</Button>}
      />
      <div className="stack">
        <Card
          title="Enrollment requests"
          flush
          actions={
            <label className="row row--tight">
              <span>Show</span>
              <select className="input" value={shown} onChange={(e) => { setShown(e.target.value as keyof typeof SHOWN); page.onOffset(0); }} aria-label="Show requests">
                <option value="pending">awaiting approval</option>
                <option value="conflict">conflicts</option>
                <option value="decided">decided</option>
                <option value="all">all</option>
              </select>
            </label>
          }
        >
          <QueryTable
            query={requests}
            what="enrollment requests"
            caption="Enrollment requests"
            columns={columns}
            rowKey={(r) => r.id}
            page={page}
            pageLabel="Request pages"
            empty={
              <Empty title={shown === "pending" ? "No device awaits approval" : "No requests"}>
                A device enrolled with a token in mode “approval” appears here until someone approves or rejects it.
              </Empty>
            }
          />
        </Card>
        <PreauthorizedCard />
      </div>
      {approving && <ApproveDialog request={approving === "matching" ? null : approving} onClose={() => setApproving(null)} />}
      {rejecting && <RejectDialog request={rejecting} onClose={() => setRejecting(null)} />}
    </>
  );
}

/** One request, or (request null) every pending request whose asked-for labels match a selector; optionally with labels. */
function ApproveDialog({ request, onClose }: { request: Request | null; onClose: () => void }) {
  const [selector, setSelector] = useState("");
  const [labels, setLabels] = useState<LabelRow[]>([]);
  const labelSet = labelsOfRows(labels);
  const problem = request ? null : selector.trim() ? selectorProblem(selector) : "name at least one label";
  const approve = useAction({
    mutationFn: (extra: Record<string, string>) => request
      ? q.enrollmentRequests.approve.call({ id: request.id, labels: extra })
      : q.enrollmentRequests.approveMatching.call({ labelSelector: parseSelector(selector), labels: extra }),
  }, {
    invalidates: [q.enrollmentRequests.key(), q.devices.key()],
    success: (d) => (request ? `“${request.name}” approved: it is admitted` : `${counted(d.decided, "device")} approved`) + (d.skipped ? `, ${d.skipped} left pending (too many labels)` : ""),
    onSuccess: onClose,
  });
  return (
    <Dialog open onClose={onClose} title={request ? `Approve “${request.name}”?` : "Approve every matching request"}>
      <form className="stack" onSubmit={approve.submit(() => (labelSet.ok ? labelSet.labels : {}), { valid: labelSet.ok && !problem })}>
        {request
          ? <p>The device is admitted with the labels it asked for{Object.keys(request.requestedLabels).length ? "" : " (none)"} and those given here, and from then on gets what its labels match.</p>
          : (
            <div className="field">
              <SelectorInput label="Requests whose asked-for labels match" value={selector} onChange={setSelector} />
              {problem && selector.trim() && <span className="field__problem">{problem}</span>}
            </div>
          )}
        <LabelsEditor rows={labels} onChange={setLabels} legend="Labels to add (optional; they win over the asked-for ones)" />
        <FormFooter action={approve} onCancel={onClose} disabled={!labelSet.ok || problem !== null} submitLabel={request ? "Approve device" : "Approve matching"} />
      </form>
    </Dialog>
  );
}

function RejectDialog({ request, onClose }: { request: Request; onClose: () => void }) {
  const [reason, setReason] = useState("");
  const reject = useAction({ mutationFn: () => q.enrollmentRequests.reject.call({ id: request.id, reason: reason.trim() || undefined }) }, {
    invalidates: [q.enrollmentRequests.key(), q.devices.key()],
    success: `“${request.name}” rejected`,
  });
  return (
    <ConfirmDialog open onClose={onClose} title={`Reject “${request.name}”?`} confirmLabel="Reject device" action={reject}>
      <p>Its certificate is revoked and the device removed; its agent wipes its identity on its next contact. The request stays here as rejected.</p>
      <div className="field">
        <label htmlFor="reject-reason">Reason <span className="faint">(optional)</span></label>
        <input id="reject-reason" className="input" maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
      </div>
    </ConfirmDialog>
  );
}
