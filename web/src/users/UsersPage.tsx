// Every account of the platform, for Super Admins (/users is theirs to change: one account may
// belong to several organizations). List with search and status filter (in the URL), create,
// disable and enable (a disabled user's sessions and keys stop at once), mail a password reset
// link, and export what the filters show as CSV (POST /api/v1/users/export).
import { useEffect, useState } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { Ban, CheckCircle2, Download, KeyRound, Plus } from "lucide-react";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog, Dialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { Empty, Forbidden } from "../ui/states";
import { DateTime, formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import { useDebounced } from "../ui/useDebounced";
import { downloadExport } from "./export";
import type { UsersSearch } from "./search";
import { MailOutbox } from "./MailOutbox";
import "./platform.css";
import { counted } from "../../../src/lib/plural";

type User = RouterOutputs["users"]["list"]["items"][number];
type UserAction = { kind: "disable" | "enable" | "reset"; user: User };

const PAGE = 50;
export const PASSWORD_MIN_LENGTH = 12; // the API's rule (src/modules/users/schemas.ts), named next to the field

export function UsersPage() {
  const isSuperAdmin = useCan("platform:admin");
  if (!isSuperAdmin) return <><PageHeader title="Users" /><Forbidden what="the platform's users" /></>;
  return <UserList />;
}

function UserList() {
  const session = useSession();
  const search = useSearch({ from: "/app/platform/users" });
  const navigate = useNavigate({ from: "/platform/users" });
  const [text, setText] = useState(search.search ?? "");
  const typed = useDebounced(text.trim());
  const [creating, setCreating] = useState(false);
  const [action, setAction] = useState<UserAction | null>(null);

  const setSearch = (patch: Partial<UsersSearch>) =>
    navigate({ search: (prev) => ({ ...prev, ...patch, offset: "offset" in patch ? patch.offset : undefined }), replace: true });
  useEffect(() => {
    if ((search.search ?? "") !== typed) void setSearch({ search: typed || undefined });
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [typed]);

  const offset = search.offset ?? 0;
  const filters = { search: search.search, status: search.status };
  const users = useQuery({ ...q.users.list.options({ limit: PAGE, offset, ...filters }), placeholderData: keepPreviousData });
  const stats = useQuery(q.users.stats.options({}));
  const exportCsv = useAction({ mutationFn: () => downloadExport(filters) }, {
    success: (count) => `Exported ${counted(count, "user")} as CSV`,
    failure: "Could not export the users",
  });
  const act = useAction({
    mutationFn: async () => {
      const { kind, user } = action!;
      if (kind === "disable") await q.users.disable.call({ id: user.id });
      else if (kind === "enable") await q.users.enable.call({ id: user.id });
      else return q.users.resetPassword.call({ id: user.id });
    },
  }, {
    invalidates: [q.users.key(), q.mail.key()],
    success: (sent) => {
      const { kind, user } = action!;
      return sent ? resetSentence(user.email, sent) : `${user.email} ${kind}d`;
    },
  });

  const columns: Column<User>[] = [
    {
      id: "name",
      header: "User",
      cell: (u) => (
        <div className="who">
          <strong>{u.name}</strong>
          <span className="faint">{u.email}</span>
        </div>
      ),
    },
    {
      id: "status",
      header: "Status",
      cell: (u) => (
        <div className="badge-row">
          <span className={`badge badge--${u.status === "active" ? "success" : "danger"}`}>{u.status}</span>
          {u.isSuperAdmin && <span className="badge badge--accent">Super Admin</span>}
        </div>
      ),
    },
    { id: "orgs", header: "Organizations", cell: (u) => u.organizations.length ? u.organizations.map((m) => `${m.organizationName} (${m.roleName})`).join(", ") : <span className="faint">none</span> },
    { id: "login", header: "Last sign-in", cell: (u) => <RelativeTime value={u.lastLoginAt} /> },
    { id: "created", header: "Created", cell: (u) => <DateTime value={u.createdAt} /> },
    {
      id: "actions",
      header: "Actions",
      cell: (u) => u.id === session.userId ? <span className="faint">you</span> : (
        <div className="row">
          {u.status === "active"
            ? <Button size="small" icon={<Ban />} aria-label={`Disable ${u.email}`} onClick={() => setAction({ kind: "disable", user: u })}>Disable</Button>
            : <Button size="small" icon={<CheckCircle2 />} aria-label={`Enable ${u.email}`} onClick={() => setAction({ kind: "enable", user: u })}>Enable</Button>}
          {u.status === "active" && <Button size="small" icon={<KeyRound />} aria-label={`Reset password of ${u.email}`} onClick={() => setAction({ kind: "reset", user: u })}>Reset password</Button>}
        </div>
      ),
    },
  ];

  const filtered = !!search.search || !!search.status;
  return (
    <>
      <PageHeader
        title="Users"
        description={stats.data ? `${counted(stats.data.total, "account")} on the platform: ${stats.data.active} active, ${stats.data.disabled} disabled, ${counted(stats.data.superAdmins, "Super Admin")}.` : "Every account on the platform."}
        actions={
          <>
            <Button icon={<Download />} busy={exportCsv.isPending} onClick={() => void exportCsv.run()}>Export CSV</Button>
            <Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create user</Button>
          </>
        }
      />
      <div className="stack">
        <Card flush>
          <div className="toolbar">
            <div className="field platform-search">
              <label htmlFor="user-search">Search</label>
              <input id="user-search" className="input" type="search" maxLength={100} value={text} onChange={(e) => setText(e.target.value)} placeholder="Name or e-mail" />
            </div>
            <div className="field">
              <label htmlFor="user-status">Status</label>
              <select id="user-status" className="select" value={search.status ?? ""} onChange={(e) => void setSearch({ status: (e.target.value || undefined) as UsersSearch["status"] })}>
                <option value="">Any status</option>
                <option value="active">active</option>
                <option value="disabled">disabled</option>
              </select>
            </div>
          </div>
          <QueryTable
            query={users}
            what="the platform's users"
            caption="Users"
            columns={columns}
            rowKey={(u) => u.id}
            page={{ offset, limit: PAGE, onOffset: (o) => void setSearch({ offset: o }) }}
            pageLabel="User pages"
            filtered={filtered}
            noMatch="No user matches these filters"
            onClearFilters={() => { setText(""); void navigate({ search: {}, replace: true }); }}
            empty={<Empty title="No users yet" action={<Button variant="primary" icon={<Plus />} onClick={() => setCreating(true)}>Create user</Button>} />}
          />
        </Card>
        <MailOutbox />
      </div>
      {/* Mounted only while open: each opening starts from an empty form. */}
      {creating && <CreateUserDialog onClose={() => setCreating(false)} />}
      <ConfirmDialog
        open={action !== null}
        onClose={() => setAction(null)}
        danger={action?.kind === "disable"}
        title={action?.kind === "disable" ? `Disable ${action.user.email}?` : action?.kind === "enable" ? `Enable ${action.user.email}?` : `Reset the password of ${action?.user.email ?? ""}?`}
        confirmLabel={action?.kind === "disable" ? "Disable user" : action?.kind === "enable" ? "Enable user" : "Send reset link"}
        action={act}
      >
        {action?.kind === "disable" && <p>{action.user.name} can no longer sign in; their sessions and API keys stop at once. Nothing of theirs is deleted, and enabling them brings it back.</p>}
        {action?.kind === "enable" && <p>{action.user.name} can sign in again with their password or identity provider.</p>}
        {action?.kind === "reset" && <p>{action.user.name} receives an e-mail with a one-time link to choose a new password. Their current password keeps working until then.</p>}
      </ConfirmDialog>
    </>
  );
}

/** What became of a reset link: queued (the outbox sends it), sent, or not mailed at all (no SMTP_URL: the API's note says so). */
function resetSentence(email: string, sent: RouterOutputs["users"]["resetPassword"]): string {
  const valid = `valid until ${formatDateTime(sent.expiresAt)}`;
  if (sent.mail?.note) return `Reset link for ${email} not mailed (${valid}). ${sent.mail.note}`;
  if (sent.mail?.status === "sent") return `Reset link mailed to ${email}, ${valid}`;
  if (sent.mail?.status === "failed") return `Reset link for ${email} could not be mailed: ${sent.mail.lastError ?? "the mail server refused it"}`;
  return `Reset link for ${email} queued for mailing (see the mail outbox), ${valid}`;
}

function CreateUserDialog({ onClose }: { onClose: () => void }) {
  const [email, setEmail] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const create = useAction(q.users.create.mutation(), {
    invalidates: [q.users.key()],
    success: (user) => `User ${user.email} created`,
    onSuccess: onClose,
  });
  const passwordProblem = password && password.length < PASSWORD_MIN_LENGTH ? `At least ${PASSWORD_MIN_LENGTH} characters (${password.length} so far)` : undefined;

  return (
    <Dialog open onClose={onClose} title="Create a user">
      <form className="stack" onSubmit={create.submit(() => ({ email: email.trim(), name: name.trim(), password: password || undefined }), { valid: !passwordProblem })}>
        <div className="field">
          <label htmlFor="new-user-email">E-mail</label>
          <input id="new-user-email" className="input" type="email" required maxLength={320} value={email} onChange={(e) => setEmail(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="new-user-name">Name</label>
          <input id="new-user-name" className="input" required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="new-user-password">Password <span className="faint">(optional)</span></label>
          <input id="new-user-password" className="input" type="password" autoComplete="new-password" maxLength={1024} value={password} onChange={(e) => setPassword(e.target.value)} aria-invalid={!!passwordProblem} aria-describedby="new-user-password-hint" />
          <span id="new-user-password-hint" className={passwordProblem ? "field__error" : "field__hint"}>
            {passwordProblem ?? `At least ${PASSWORD_MIN_LENGTH} characters. Leave empty to mail them a link to choose one.`}
          </span>
        </div>
        <p className="field__hint">The account belongs to no organization yet: invite or add it where it should work.</p>
        <FormFooter action={create} onCancel={onClose} disabled={!email.trim() || !name.trim() || !!passwordProblem} submitLabel="Create user" />
      </form>
    </Dialog>
  );
}
