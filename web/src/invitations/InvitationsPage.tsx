// Invitations: invite by e-mail with a role, resend (a new link; the old one stops working),
// revoke. The link is in the e-mail the service sends and, once, here: whoever invites can
// also hand it over themselves. It opens the public page /invitations/<token>. Each row shows
// how its latest mail stands; without an SMTP server no mail goes out, and the page says that
// the link shown here is the way to hand it over.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { AlertTriangle, Ban, Send, UserPlus } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import { CopyButton } from "../ui/CopyButton";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorBox, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useLocalPage } from "../ui/useLocalPage";
import { MembersArea } from "../members/MembersTabs";
import { expandPermissions, permissionCatalogueQuery } from "../roles/PermissionPicker";

type Invitation = RouterOutputs["invitations"]["list"]["items"][number];
type SentInvitation = RouterOutputs["invitations"]["create"];
type Status = Invitation["status"];
type MailState = NonNullable<Invitation["mail"]>;

const STATUS_TONE: Record<Status, string> = { pending: "accent", accepted: "success", expired: "warning", revoked: "danger" };
const STATUSES: Status[] = ["pending", "accepted", "expired", "revoked"];
const MAIL_TONE: Record<MailState["status"], string> = { pending: "accent", sending: "accent", sent: "success", failed: "danger" };
const PAGE = 50;

/** The console page an invitation's token opens (the public accept page). */
export function invitationLink(token: string): string {
  return `${location.origin}/invitations/${encodeURIComponent(token)}`;
}

export function InvitationsPage() {
  const canRead = useCan("invitations:read");
  const canWrite = useCan("invitations:write");
  const canReadRoles = useCan("roles:read");
  const page = useLocalPage(PAGE);
  const [status, setStatus] = useState<Status | "">("");
  const [inviting, setInviting] = useState(false);
  const [sent, setSent] = useState<SentInvitation | null>(null);
  const [resending, setResending] = useState<Invitation | null>(null);
  const [revoking, setRevoking] = useState<Invitation | null>(null);
  const invitations = useQuery({
    ...q.invitations.list.options({ ...page.input, status: status || undefined }),
    enabled: canRead,
    placeholderData: keepPreviousData,
  });
  const resend = useAction({ mutationFn: () => q.invitations.resend.call({ id: resending!.id }) }, {
    invalidates: [q.invitations.key()],
    success: (invitation) => `Invitation sent again to ${invitation.email}`,
    onSuccess: setSent,
  });
  const revoke = useAction({ mutationFn: () => q.invitations.revoke.call({ id: revoking!.id }) }, {
    invalidates: [q.invitations.key()],
    success: () => `Invitation of ${revoking?.email ?? ""} revoked`,
  });
  const open = (i: Invitation) => i.status === "pending" || i.status === "expired";

  const columns: Column<Invitation>[] = [
    { id: "email", header: "E-mail", cell: (i) => <strong>{i.email}</strong> },
    { id: "role", header: "Role", cell: (i) => <span className="badge">{i.role.name}</span> },
    { id: "status", header: "Status", cell: (i) => <span className={`badge badge--${STATUS_TONE[i.status]}`}>{i.status}</span> },
    { id: "expires", header: "Expires", cell: (i) => i.status === "pending" || i.status === "expired" ? <RelativeTime value={i.expiresAt} /> : <span className="faint">–</span> },
    { id: "sent", header: "Last sent", cell: (i) => <span><RelativeTime value={i.lastSentAt} />{i.sendCount > 1 && <span className="faint"> ({i.sendCount} times)</span>}</span> },
    { id: "mail", header: "Mail delivery", cell: (i) => <MailCell mail={i.mail} /> },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (i: Invitation) => open(i) && (
        <div className="row row--nowrap">
          <Button size="small" icon={<Send />} onClick={() => setResending(i)} aria-label={`Resend the invitation of ${i.email}`}>Resend</Button>
          <Button size="small" icon={<Ban />} onClick={() => setRevoking(i)} aria-label={`Revoke the invitation of ${i.email}`}>Revoke</Button>
        </div>
      ),
    }] : []),
  ];

  const inviteButton = canWrite && canReadRoles && <Button variant="primary" icon={<UserPlus />} onClick={() => setInviting(true)}>Invite someone</Button>;
  if (!canRead) return <MembersArea description="Invitations to join this organization."><Forbidden what="the invitations" /></MembersArea>;

  return (
    <MembersArea description="Invitations to join this organization, each with the role the person gets. A link works until it expires, is revoked or is replaced by a resend." actions={inviteButton}>
      {invitations.data?.smtpConfigured === false && (
        <div className="alert-box alert-box--warning" role="note" data-testid="no-smtp-note">
          <AlertTriangle aria-hidden="true" />
          <p>No e-mail goes out: this service has no SMTP server (SMTP_URL). After inviting or resending, copy the invitation link shown here and hand it over yourself. A resend gives a new link.</p>
        </div>
      )}
      {sent && <SentInvitationCard invitation={sent} onDismiss={() => setSent(null)} />}
      <Card title="Invitations" flush actions={
        <>
          <label htmlFor="invitation-status" className="visually-hidden">Status</label>
          <select id="invitation-status" className="select" value={status} onChange={(e) => { setStatus(e.target.value as Status | ""); page.onOffset(0); }}>
            <option value="">Every status</option>
            {STATUSES.map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </>
      }>
        <QueryTable
          query={invitations}
          what="the invitations"
          caption="Invitations"
          columns={columns}
          rowKey={(i) => i.id}
          page={page}
          pageLabel="Invitation pages"
          empty={<Empty title={status ? `No ${status} invitations` : "No invitations yet"} action={inviteButton}>Invite someone by e-mail: they choose a name and password on the invitation's page and join with the role you give.</Empty>}
        />
      </Card>
      {/* Mounted only while open: each opening starts from an empty form. */}
      {inviting && <InviteDialog onClose={() => setInviting(false)} onSent={(invitation) => { setSent(invitation); setInviting(false); }} />}
      <ConfirmDialog
        open={resending !== null}
        onClose={() => setResending(null)}
        danger={false}
        title={`Resend the invitation of ${resending?.email ?? ""}?`}
        confirmLabel="Resend invitation"
        action={resend}
      >
        <p>A new e-mail with a new link goes out, valid for 7 days. The link sent before stops working.</p>
      </ConfirmDialog>
      <ConfirmDialog
        open={revoking !== null}
        onClose={() => setRevoking(null)}
        title={`Revoke the invitation of ${revoking?.email ?? ""}?`}
        confirmLabel="Revoke invitation"
        action={revoke}
      >
        <p>The link stops working at once. You can invite the same address again later.</p>
      </ConfirmDialog>
    </MembersArea>
  );
}

/** How the invitation's latest mail stands: sent, waiting (with its failed attempts), failed, or not sent at all (no SMTP). */
function MailCell({ mail }: { mail: Invitation["mail"] }) {
  if (!mail) return <span className="faint">–</span>;
  if (mail.note) return <span className="badge badge--warning" title={mail.note}>not sent</span>;
  return (
    <span>
      <span className={`badge badge--${MAIL_TONE[mail.status]}`}>{mail.status}</span>
      {mail.status === "pending" && mail.attempts > 0 && <span className="faint"> attempt {mail.attempts} of {mail.maxAttempts} failed, trying again</span>}
      {mail.status === "failed" && <span className="faint"> after {mail.attempts} attempts: {mail.lastError}</span>}
    </span>
  );
}

function SentInvitationCard({ invitation, onDismiss }: { invitation: SentInvitation; onDismiss: () => void }) {
  const link = invitationLink(invitation.token);
  // A note on the mail means it cannot go out (no SMTP server): this link is the only way in.
  const unsent = Boolean(invitation.mail?.note);
  return (
    <section className="card new-secret" aria-labelledby="sent-invitation-title">
      <div className="card__header">
        <h2 id="sent-invitation-title">{unsent ? `Invitation created for ${invitation.email}` : `Invitation sent to ${invitation.email}`}</h2>
        <Button size="small" variant="ghost" onClick={onDismiss}>Done</Button>
      </div>
      <div className="card__body stack">
        <div className="alert-box alert-box--warning" role="note">
          <AlertTriangle aria-hidden="true" />
          {unsent
            ? <p>No e-mail was sent: the service has no SMTP server. Copy this link and hand it over to {invitation.email} yourself. It is shown here only this once, and whoever opens it can join as {invitation.role.name}.</p>
            : <p>The e-mail carries this link. It is shown here only this once: hand it over yourself only to {invitation.email}, since whoever opens it can join as {invitation.role.name}.</p>}
        </div>
        <div className="field">
          <span className="field__label">Invitation link</span>
          <div className="secret-box">
            <code data-testid="invitation-link">{link}</code>
            <CopyButton value={link} label="Copy link" />
          </div>
          <span className="field__hint">Valid until <RelativeTime value={invitation.expiresAt} />.</span>
        </div>
      </div>
    </section>
  );
}

function InviteDialog({ onClose, onSent }: { onClose: () => void; onSent: (invitation: SentInvitation) => void }) {
  const session = useSession();
  const roles = useQuery(q.roles.list.options({ limit: 200, offset: 0 }));
  const catalogue = useQuery(permissionCatalogueQuery());
  const [email, setEmail] = useState("");
  const [roleId, setRoleId] = useState("");
  const [days, setDays] = useState("7");
  const invite = useAction(q.invitations.create.mutation(), { invalidates: [q.invitations.key()], onSuccess: onSent });
  // Only roles whose every permission the inviter holds: the API refuses the others (403).
  const held = new Set(session.permissions);
  const offered = roles.data && catalogue.data
    ? roles.data.items.filter((r) => [...expandPermissions(r.permissions, catalogue.data.items)].every((p) => held.has(p)))
    : undefined;
  const chosen = roleId || offered?.find((r) => r.name === "viewer")?.id || offered?.[0]?.id || "";

  return (
    <Dialog open onClose={onClose} title="Invite someone">
      <form className="stack" onSubmit={invite.submit(() => ({ email: email.trim(), roleId: chosen, expiresInDays: Number(days) }))}>
        <div className="field">
          <label htmlFor="invite-email">E-mail</label>
          <input id="invite-email" className="input" type="email" required maxLength={320} value={email} onChange={(e) => setEmail(e.target.value)} placeholder="name@example.com" autoComplete="off" />
        </div>
        {roles.isError || catalogue.isError ? <ErrorBox error={roles.error ?? catalogue.error} /> : (
          <div className="field">
            <label htmlFor="invite-role">Role</label>
            <select id="invite-role" className="select" value={chosen} onChange={(e) => setRoleId(e.target.value)} disabled={!offered}>
              {offered?.map((r) => <option key={r.id} value={r.id}>{r.name}{r.system ? "" : " (custom)"}</option>)}
            </select>
            <span className="field__hint">{offered?.find((r) => r.id === chosen)?.description || "Roles offered: those whose permissions you hold yourself."}</span>
          </div>
        )}
        <div className="field">
          <label htmlFor="invite-days">Valid for (days)</label>
          <input id="invite-days" className="input" type="number" min={1} max={30} required value={days} onChange={(e) => setDays(e.target.value)} />
        </div>
        <FormFooter action={invite} onCancel={onClose} disabled={!email.trim() || !chosen} submitLabel="Send invitation" />
      </form>
    </Dialog>
  );
}
