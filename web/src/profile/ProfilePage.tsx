// The signed-in person: who they are, where they act, with which role and permissions.
// (Editing the profile, the password and the sessions come with the administration pages.)
import { useSession } from "../app/session";
import { Card, PageHeader } from "../ui/Card";

export function ProfilePage() {
  const session = useSession();
  return (
    <>
      <PageHeader title="Profile" description="Your account and what you may do in this organization." />
      <div className="grid grid--2">
        <Card title="Account">
          <dl className="facts">
            <dt>Name</dt>
            <dd>{session.name}</dd>
            <dt>E-mail</dt>
            <dd>{session.email}</dd>
            <dt>Organization</dt>
            <dd>{session.organization.name} <span className="faint mono">{session.organization.slug}</span></dd>
            <dt>Role</dt>
            <dd>{session.role ?? (session.isSuperAdmin ? "Super Admin (not a member)" : "none")}</dd>
            {session.isSuperAdmin && (
              <>
                <dt>Platform</dt>
                <dd><span className="badge badge--accent">Super Admin</span></dd>
              </>
            )}
          </dl>
        </Card>
        <Card title="Permissions here">
          <ul className="chips" aria-label="Permissions">
            {session.permissions.map((p) => (
              <li key={p} className="chip">{p}</li>
            ))}
          </ul>
        </Card>
      </div>
    </>
  );
}
