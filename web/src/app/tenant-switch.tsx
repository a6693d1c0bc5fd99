// Super Admin tenant switching, visible at all times: while a switch is active a banner names
// the organization, the reason and the end time, with a button that ends it. The dialog starts
// one (time-bound, with a reason, audited in the organization entered).
import { useState } from "react";
import { ShieldAlert } from "lucide-react";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { DateTime, formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useOrganizationChanged, type Session } from "./session";

/** Ends the Super Admin's own switch: back in their home organization, everything read again. */
export function useEndSwitch(success: string) {
  const reset = useOrganizationChanged();
  return useAction({ mutationFn: () => q.tenant.return.call({}) }, { success, failure: "Could not end the switch", onSuccess: reset });
}

export function TenantSwitchBanner({ session }: { session: Session }) {
  const sw = session.activeSwitch!;
  const end = useEndSwitch(`Back in ${sw.fromOrgName ?? "your organization"}`);
  return (
    <div className="tenant-banner" role="region" aria-label="Tenant switch">
      <ShieldAlert aria-hidden="true" />
      <p>
        Acting in <strong>{sw.toOrgName ?? session.organization.name}</strong> as Super Admin
        {sw.reason ? <> for “{sw.reason}”</> : " (no reason given)"}
        {sw.expiresAt && <>, until <DateTime value={sw.expiresAt} /> (<RelativeTime value={sw.expiresAt} />)</>}.
      </p>
      <Button size="small" onClick={() => void end.run()} busy={end.isPending}>End switch</Button>
    </div>
  );
}

export function TenantSwitchDialog({ target, onClose }: { target: { id: string; name: string } | null; onClose: () => void }) {
  const reset = useOrganizationChanged();
  const [reason, setReason] = useState("");
  const [minutes, setMinutes] = useState(60);
  const start = useAction(q.tenant.switch.mutation(), {
    success: () => `Acting in ${target?.name ?? ""} for ${minutes} minutes`,
    onSuccess: async () => {
      onClose();
      await reset();
    },
  });
  return (
    <Dialog open={target !== null} onClose={onClose} title={`Switch into ${target?.name ?? ""}`}>
      <p className="muted">You are not a member of this organization. As a Super Admin you may act in it for a limited time; the switch is recorded in its audit log with your reason.</p>
      <form className="stack" onSubmit={start.submit(() => ({ organizationId: target!.id, reason: reason.trim() || undefined, durationMinutes: minutes }))}>
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
        <FormFooter action={start} onCancel={onClose} submitLabel={`Switch for ${minutes} minutes`} />
      </form>
    </Dialog>
  );
}
