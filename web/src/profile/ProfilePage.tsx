// The signed-in person's own account: name, notification preferences, password (changing it
// signs out every other session, as the API does, and says how many), the open sessions with
// their device and last use (sign out one, or every other), the organizations they belong to,
// and what they may do here. Everything here is the person's own: no permission gates it.
import { useEffect, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { LogOut } from "lucide-react";
import { q } from "../api/query";
import type { RouterOutputs } from "../api/client";
import { sessionQuery, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { Card, PageHeader } from "../ui/Card";
import type { Column } from "../ui/DataTable";
import { ConfirmDialog } from "../ui/Dialog";
import { FormFooter } from "../ui/FormFooter";
import { QueryTable } from "../ui/QueryTable";
import { ErrorState, Loading } from "../ui/states";
import { formatDateTime, RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import "./profile.css";
import { counted } from "../../../src/lib/plural";

type Preferences = RouterOutputs["profile"]["getNotificationPreferences"];
type OpenSession = RouterOutputs["profile"]["sessions"]["items"][number];
const MIN_PASSWORD = 10;

export function ProfilePage() {
  const session = useSession();
  return (
    <>
      <PageHeader title="Profile" description="Your account, your sessions and what you may do in this organization." />
      {/* One gap between every card, the grid's and the ones below it alike. */}
      <div className="stack">
        <div className="grid grid--2">
          <AccountCard />
          <PasswordCard />
          <PreferencesCard />
          <OrganizationsCard />
        </div>
        <SessionsCard />
        <Card title="Permissions here">
          <ul className="chips" aria-label="Permissions">
            {session.permissions.map((p) => <li key={p} className="chip">{p}</li>)}
          </ul>
        </Card>
      </div>
    </>
  );
}

function AccountCard() {
  const session = useSession();
  const [name, setName] = useState(session.name);
  const save = useAction(q.profile.update.mutation(), { invalidates: [sessionQuery().queryKey, q.profile.key()], success: "Name saved" });
  useEffect(() => setName(session.name), [session.name]);
  const trimmed = name.trim();
  const problem = trimmed.length === 0 ? "A name is needed" : trimmed.length > 200 ? "At most 200 characters" : null;

  return (
    <Card title="Account">
      <form className="stack" onSubmit={save.submit(() => ({ name: trimmed }), { valid: !problem })} aria-label="Account">
        <div className="field">
          <label htmlFor="profile-name">Name</label>
          <input id="profile-name" className="input" value={name} onChange={(e) => setName(e.target.value)} autoComplete="name"
            aria-invalid={problem ? true : undefined} aria-describedby={problem ? "profile-name-error" : undefined} />
          {problem && <span id="profile-name-error" className="field__error">{problem}</span>}
        </div>
        <dl className="facts">
          <dt>E-mail</dt>
          <dd>{session.email}</dd>
          <dt>Organization</dt>
          <dd>{session.organization.name} <span className="faint mono">{session.organization.slug}</span></dd>
          <dt>Role</dt>
          <dd>{session.role ?? (session.isSuperAdmin ? "Super Admin (not a member)" : "none")}</dd>
          {session.isSuperAdmin && (<><dt>Platform</dt><dd><span className="badge badge--accent">Super Admin</span></dd></>)}
        </dl>
        <FormFooter action={save} inline={false} disabled={!!problem || trimmed === session.name} submitLabel="Save name" />
      </form>
    </Card>
  );
}

function PasswordCard() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [repeat, setRepeat] = useState("");
  const [done, setDone] = useState<number | null>(null);
  // The browser's session is this one: it stays signed in (its cookie names the session, not a
  // token); the answer's new access token is for bearer clients and not kept.
  const change = useAction(q.profile.changePassword.mutation(), {
    invalidates: [q.profile.sessions.key()],
    onSuccess: (result) => {
      setDone(result.sessionsEnded);
      setCurrent("");
      setNext("");
      setRepeat("");
    },
  });
  const nextProblem = next && next.length < MIN_PASSWORD ? `At least ${MIN_PASSWORD} characters` : next && next === current ? "Must differ from the current password" : null;
  const repeatProblem = repeat && repeat !== next ? "Does not match the new password" : null;
  const ready = !!current && next.length >= MIN_PASSWORD && !nextProblem && repeat === next;

  return (
    <Card title="Password">
      <form className="stack" onSubmit={change.submit(() => { setDone(null); return { currentPassword: current, newPassword: next }; }, { valid: ready })} aria-label="Change password">
        <p className="muted">Changing it signs you out everywhere else: every other session ends.</p>
        <div className="field">
          <label htmlFor="password-current">Current password</label>
          <input id="password-current" className="input" type="password" autoComplete="current-password" value={current} onChange={(e) => setCurrent(e.target.value)} />
        </div>
        <div className="field">
          <label htmlFor="password-new">New password</label>
          <input id="password-new" className="input" type="password" autoComplete="new-password" value={next} onChange={(e) => setNext(e.target.value)}
            aria-invalid={nextProblem ? true : undefined} aria-describedby="password-new-hint" />
          <span id="password-new-hint" className={nextProblem ? "field__error" : "field__hint"}>{nextProblem ?? `At least ${MIN_PASSWORD} characters`}</span>
        </div>
        <div className="field">
          <label htmlFor="password-repeat">New password again</label>
          <input id="password-repeat" className="input" type="password" autoComplete="new-password" value={repeat} onChange={(e) => setRepeat(e.target.value)}
            aria-invalid={repeatProblem ? true : undefined} aria-describedby={repeatProblem ? "password-repeat-error" : undefined} />
          {repeatProblem && <span id="password-repeat-error" className="field__error">{repeatProblem}</span>}
        </div>
        {done !== null && (
          <div className="alert-box alert-box--success" role="status">
            <p>Password changed. {done === 0 ? "No other session was open." : `${done} other session${done === 1 ? " was" : "s were"} signed out.`}</p>
          </div>
        )}
        <FormFooter action={change} inline={false} disabled={!ready} submitLabel="Change password" />
      </form>
    </Card>
  );
}

const CATEGORIES: { key: keyof Preferences["categories"]; label: string }[] = [
  { key: "alerts", label: "Alerts" },
  { key: "deployments", label: "Deployments" },
  { key: "devices", label: "Devices" },
  { key: "certificates", label: "Certificates" },
  { key: "security", label: "Security (sign-ins, password, sessions)" },
];

function PreferencesCard() {
  const stored = useQuery(q.profile.getNotificationPreferences.options());
  const [draft, setDraft] = useState<Preferences | null>(null);
  // A PUT replaces the whole document: quiet hours set through the API are sent back as they are.
  const save = useAction(q.profile.putNotificationPreferences.mutation(), {
    invalidates: [q.profile.getNotificationPreferences.key()],
    success: "Notification preferences saved",
  });
  useEffect(() => {
    if (stored.data) setDraft(stored.data);
  }, [stored.data]);

  if (stored.isError) return <Card title="Notifications"><ErrorState error={stored.error} retry={() => void stored.refetch()} /></Card>;
  if (!draft || !stored.data) return <Card title="Notifications"><Loading /></Card>;
  const changed = JSON.stringify(draft) !== JSON.stringify(stored.data);

  const check = (id: string, label: string, value: boolean, set: (v: boolean) => void) => (
    <label className="row profile-check" htmlFor={id}>
      <input id={id} type="checkbox" checked={value} onChange={(e) => set(e.target.checked)} />
      <span>{label}</span>
    </label>
  );

  return (
    <Card title="Notifications">
      <form className="stack" onSubmit={save.submit(() => draft)} aria-label="Notification preferences">
        <fieldset className="stack stack--tight profile-fieldset">
          <legend>How</legend>
          {check("pref-email", "By e-mail", draft.email, (email) => setDraft({ ...draft, email }))}
          {check("pref-in-app", "In the console", draft.inApp, (inApp) => setDraft({ ...draft, inApp }))}
        </fieldset>
        <fieldset className="stack stack--tight profile-fieldset">
          <legend>About</legend>
          {CATEGORIES.map((c) => check(`pref-${c.key}`, c.label, draft.categories[c.key], (v) => setDraft({ ...draft, categories: { ...draft.categories, [c.key]: v } })))}
        </fieldset>
        <div className="field">
          <label htmlFor="pref-digest">Digest</label>
          <select id="pref-digest" className="select" value={draft.digest} onChange={(e) => setDraft({ ...draft, digest: e.target.value as Preferences["digest"] })}>
            <option value="off">Off</option>
            <option value="daily">Daily</option>
            <option value="weekly">Weekly</option>
          </select>
        </div>
        {draft.quietHours && <p className="muted">Quiet hours {draft.quietHours.start}–{draft.quietHours.end} ({draft.quietHours.timezone}), set through the API, are kept.</p>}
        <FormFooter action={save} inline={false} disabled={!changed} submitLabel="Save preferences" />
      </form>
    </Card>
  );
}

function OrganizationsCard() {
  const orgs = useQuery(q.tenant.accessible.options({ limit: 200, offset: 0 }));
  // A Super Admin may switch into every organization: those they belong to have a role.
  const mine = orgs.data?.items.filter((o) => o.role !== null);
  return (
    <Card title="Your organizations">
      {orgs.isError ? <ErrorState error={orgs.error} retry={() => void orgs.refetch()} /> : !mine ? <Loading /> : mine.length === 0 ? (
        <p className="muted">You are not a member of any organization.</p>
      ) : (
        <ul className="profile-orgs" aria-label="Your organizations">
          {mine.map((o) => (
            <li key={o.id}>
              <span>{o.name} <span className="faint mono">{o.slug}</span></span>
              <span className="row">
                <span className="badge">{o.role}</span>
                {o.isCurrent && <span className="badge badge--accent">current</span>}
              </span>
            </li>
          ))}
        </ul>
      )}
    </Card>
  );
}

function SessionsCard() {
  const sessions = useQuery(q.profile.sessions.options({ limit: 50, offset: 0 }));
  const [confirmAll, setConfirmAll] = useState(false);
  const [ending, setEnding] = useState<OpenSession | null>(null);
  const others = sessions.data ? sessions.data.total - sessions.data.items.filter((s) => s.current).length : 0;
  const signedOut = { invalidates: [q.profile.sessions.key()], success: (result: { terminated: number }) => `${counted(result.terminated, "session")} signed out` };
  const endOthers = useAction({ mutationFn: () => q.profile.terminateSessions.call({}) }, signedOut);
  const endOne = useAction({ mutationFn: () => q.profile.terminateSessions.call({ id: ending!.id }) }, signedOut);

  const columns: Column<OpenSession>[] = [
    {
      id: "device",
      header: "Device",
      cell: (s) => (
        <div className="audit-actor">
          <span>{s.device} {s.current && <span className="badge badge--accent">this session</span>}</span>
          {s.userAgent && <span className="faint mono profile-ua">{s.userAgent}</span>}
        </div>
      ),
    },
    { id: "ip", header: "Address", cell: (s) => <span className="mono">{s.ipAddress ?? "—"}</span> },
    { id: "used", header: "Last used", className: "nowrap", cell: (s) => <RelativeTime value={s.lastUsedAt} /> },
    { id: "created", header: "Signed in", className: "nowrap", cell: (s) => <time dateTime={s.createdAt}>{formatDateTime(s.createdAt)}</time> },
    {
      id: "actions",
      header: "Actions",
      cell: (s) => !s.current && <Button size="small" icon={<LogOut />} onClick={() => setEnding(s)} aria-label={`Sign out ${s.device} (last used ${formatDateTime(s.lastUsedAt)})`}>Sign out</Button>,
    },
  ];

  return (
    <Card title="Sessions" flush actions={others > 0 && <Button icon={<LogOut />} onClick={() => setConfirmAll(true)}>Sign out other sessions</Button>}>
      <QueryTable query={sessions} what="your sessions" caption="Your sessions" columns={columns} rowKey={(s) => s.id} empty={<p className="muted">No open session.</p>} />
      <ConfirmDialog open={confirmAll} onClose={() => setConfirmAll(false)} title={`Sign out ${counted(others, "other session")}?`}
        confirmLabel="Sign out others" action={endOthers}>
        <p>Every browser and client signed in as you, except this one, must sign in again.</p>
      </ConfirmDialog>
      <ConfirmDialog open={!!ending} onClose={() => setEnding(null)} title="Sign out this session?" confirmLabel="Sign out session" action={endOne}>
        <p>{ending?.device}, last used {ending && formatDateTime(ending.lastUsedAt)}, must sign in again.</p>
      </ConfirmDialog>
    </Card>
  );
}
