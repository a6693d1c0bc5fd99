// Super Admin tenant switching, visible at all times: while a switch is active a banner names
// the organization, the reason and the end time, with a button that ends it. The dialog starts
// one (time-bound, with a reason, audited in the organization entered).
import { useState } from "react";
import { ShieldAlert } from "lucide-react";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { Dialog } from "../ui/Dialog";
import { ErrorBox } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useToast } from "../ui/toast";
import { useOrganizationChanged, type Session } from "./session";

export function TenantSwitchBanner({ session }: { session: Session }) {
  const toast = useToast();
  const reset = useOrganizationChanged();
  const [busy, setBusy] = useState(false);
  const sw = session.activeSwitch!;
  async function end() {
    setBusy(true);
    try {
      await q.tenant.return.call({});
      await reset();
      toast.success(`Back in ${sw.fromOrgName ?? "your organization"}`);
    } catch (err) {
      toast.error(err, "Could not end the switch");
    } finally {
      setBusy(false);
    }
  }
  return (
    <div className="tenant-banner" role="region" aria-label="Tenant switch">
      <ShieldAlert aria-hidden="true" />
      <p>
        Acting in <strong>{sw.toOrgName ?? session.organization.name}</strong> as Super Admin
        {sw.reason ? <> for “{sw.reason}”</> : " (no reason given)"}
        {sw.expiresAt && <>, until <time dateTime={sw.expiresAt} title={formatDateTime(sw.expiresAt)}>{new Date(sw.expiresAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}</time> (<RelativeTime value={sw.expiresAt} />)</>}.
      </p>
      <Button size="small" onClick={end} busy={busy}>End switch</Button>
    </div>
  );
}

export function TenantSwitchDialog({ target, onClose }: { target: { id: string; name: string } | null; onClose: () => void }) {
  const toast = useToast();
  const reset = useOrganizationChanged();
  const [reason, setReason] = useState("");
  const [minutes, setMinutes] = useState(60);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  async function start() {
    if (!target) return;
    setBusy(true);
    setError(null);
    try {
      await q.tenant.switch.call({ organizationId: target.id, reason: reason.trim() || undefined, durationMinutes: minutes });
      onClose();
      await reset();
      toast.success(`Acting in ${target.name} for ${minutes} minutes`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  return (
    <Dialog
      open={target !== null}
      onClose={onClose}
      title={`Switch into ${target?.name ?? ""}`}
      footer={<><Button onClick={onClose}>Cancel</Button><Button variant="primary" onClick={start} busy={busy}>Switch for {minutes} minutes</Button></>}
    >
      <p className="muted">You are not a member of this organization. As a Super Admin you may act in it for a limited time; the switch is recorded in its audit log with your reason.</p>
      <div className="stack">
        <div className="field">
          <label htmlFor="switch-reason">Reason</label>
          <input id="switch-reason" className="input" value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} placeholder="Support ticket #1234" />
        </div>
        <div className="field">
          <label htmlFor="switch-minutes">Duration</label>
          <select id="switch-minutes" className="select" value={minutes} onChange={(e) => setMinutes(Number(e.target.value))}>
            {[15, 30, 60, 120, 240, 480].map((m) => <option key={m} value={m}>{m < 60 ? `${m} minutes` : `${m / 60} hour${m > 60 ? "s" : ""}`}</option>)}
          </select>
        </div>
        {error != null && <ErrorBox error={error} />}
      </div>
    </Dialog>
  );
}
