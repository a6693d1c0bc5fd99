// Members of the organization: who they are, their role (changed here), when they joined and
// last signed in; removal asks first. The service refuses to demote or remove the last owner,
// and to hand out more than the person acting holds: its refusal is shown in the dialog.
import { useState } from "react";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { UserCog, UserMinus, UserPlus } from "lucide-react";
import { Link } from "@tanstack/react-router";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, ErrorBox, Forbidden } from "../ui/states";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { useLocalPage } from "../ui/useLocalPage";
import { MembersArea } from "./MembersTabs";

type Member = RouterOutputs["members"]["list"]["items"][number];

const PAGE = 50;

export function MembersPage() {
  const session = useSession();
  const canRead = useCan("members:read");
  const canWrite = useCan("members:write");
  const canReadRoles = useCan("roles:read");
  const canInvite = useCan("invitations:write");
  const orgId = session.organization.id;
  const page = useLocalPage(PAGE);
  const [search, setSearch] = useState("");
  const debounced = useDebounced(search.trim(), 300);
  const [changing, setChanging] = useState<Member | null>(null);
  const [removing, setRemoving] = useState<Member | null>(null);
  const members = useQuery({
    ...q.members.list.options({ orgId, ...page.input, search: debounced || undefined }),
    enabled: canRead,
    placeholderData: keepPreviousData,
  });
  const remove = useAction({ mutationFn: () => q.members.remove.call({ orgId, userId: removing!.userId }) }, {
    invalidates: [q.members.key(), q.apiKeys.key()],
    success: (result) => `${removing?.name ?? ""} removed${result.revokedApiKeys ? `; ${result.revokedApiKeys} of their API keys revoked` : ""}`,
  });

  const columns: Column<Member>[] = [
    {
      id: "name",
      header: "Member",
      cell: (m) => (
        <div className="stacked-cell">
          <strong>{m.name}{m.userId === session.userId && <span className="faint"> (you)</span>}</strong>
          <span className="faint">{m.email}</span>
        </div>
      ),
    },
    { id: "role", header: "Role", cell: (m) => <span className={`badge ${m.role.system ? "" : "badge--accent"}`}>{m.role.name}</span> },
    { id: "status", header: "Account", cell: (m) => <span className={`badge badge--${m.status === "active" ? "success" : "warning"}`}>{m.status}</span> },
    { id: "joined", header: "Joined", cell: (m) => <RelativeTime value={m.joinedAt} /> },
    { id: "lastLogin", header: "Last sign-in", cell: (m) => <RelativeTime value={m.lastLoginAt} /> },
    ...(canWrite ? [{
      id: "actions",
      header: "Actions",
      cell: (m: Member) => (
        <div className="row row--nowrap">
          {canReadRoles && <Button size="small" icon={<UserCog />} onClick={() => setChanging(m)} aria-label={`Change role of ${m.name}`}>Change role</Button>}
          <Button size="small" icon={<UserMinus />} onClick={() => setRemoving(m)} aria-label={`Remove ${m.name}`}>Remove</Button>
        </div>
      ),
    }] : []),
  ];

  if (!canRead) return <MembersArea description="People of this organization and what they may do."><Forbidden what="the members" /></MembersArea>;

  return (
    <MembersArea
      description="People of this organization and what they may do. A role change takes effect on the member's next request."
      actions={canInvite && <Link to="/members/invitations" className="btn btn--primary"><UserPlus aria-hidden="true" />Invite people</Link>}
    >
      <Card title="Members" flush actions={
        <>
          <label htmlFor="member-search" className="visually-hidden">Search members</label>
          <input id="member-search" className="input member-search" type="search" placeholder="Search by name or e-mail" value={search} onChange={(e) => { setSearch(e.target.value); page.onOffset(0); }} />
        </>
      }>
        <QueryTable
          query={members}
          what="the members"
          caption="Members"
          columns={columns}
          rowKey={(m) => m.userId}
          page={page}
          pageLabel="Member pages"
          empty={<Empty title={debounced ? "No member matches" : "No members"}>{debounced ? "Try another part of a name or e-mail address." : "Invite people to join this organization."}</Empty>}
        />
      </Card>
      {/* Mounted only while open: each opening starts from the member's own role. */}
      {changing && <ChangeRoleDialog member={changing} orgId={orgId} onClose={() => setChanging(null)} />}
      <ConfirmDialog
        open={removing !== null}
        onClose={() => setRemoving(null)}
        title={`Remove ${removing?.name ?? ""}?`}
        confirmLabel="Remove member"
        action={remove}
      >
        <p>{removing?.name} ({removing?.email}) loses access to this organization at once, and the API keys they created here are revoked. Their account stays; they can be invited again.</p>
      </ConfirmDialog>
    </MembersArea>
  );
}

function ChangeRoleDialog({ member, orgId, onClose }: { member: Member; orgId: string; onClose: () => void }) {
  const roles = useQuery(q.roles.list.options({ limit: 200, offset: 0 }));
  const [chosen, setChosen] = useState(member.roleId);
  const change = useAction(q.members.updateRole.mutation(), {
    invalidates: [q.members.key()],
    success: (updated) => `${updated.name} is now ${updated.role.name}`,
    onSuccess: onClose,
  });

  return (
    <Dialog open onClose={onClose} title={`Change the role of ${member.name}`}>
      <form className="stack" onSubmit={change.submit(() => ({ orgId, userId: member.userId, roleId: chosen }))}>
        {roles.isError ? <ErrorBox error={roles.error} /> : (
          <div className="field">
            <label htmlFor="member-role">Role</label>
            <select id="member-role" className="select" value={chosen} onChange={(e) => setChosen(e.target.value)} disabled={!roles.data}>
              {roles.data?.items.map((r) => <option key={r.id} value={r.id}>{r.name}{r.system ? "" : " (custom)"}</option>)}
            </select>
            <span className="field__hint">{roles.data?.items.find((r) => r.id === chosen)?.description}</span>
          </div>
        )}
        <FormFooter action={change} onCancel={onClose} disabled={!roles.data || chosen === member.roleId} submitLabel="Change role" />
      </form>
    </Dialog>
  );
}
