// The public page an invitation link opens (/invitations/<token>), outside the signed-in
// area: who invites, to which organization and with which role; the invited person chooses a
// name and a password (or, having an account already, gives its password), accepts, and is
// signed in with the same cookie session as the sign-in page, landing on the overview.
import { useState, type FormEvent } from "react";
import { useNavigate, useParams } from "@tanstack/react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { UserCheck } from "lucide-react";
import { isApiError, messageOf, statusOf, type ApiErrorData } from "../api/client";
import { q } from "../api/query";
import { Button } from "../ui/Button";
import { ErrorBox } from "../ui/states";
import { RelativeTime } from "../ui/time";
import "../auth/sign-in.css";

/** The API's complaint about one field (its 400 names the field in `issues`). */
function fieldProblem(error: unknown, field: string): string | undefined {
  if (!isApiError(error)) return undefined;
  return (error.data as ApiErrorData | undefined)?.issues?.find((i) => i.path.at(-1) === field)?.message;
}

export function AcceptInvitationPage() {
  const { token } = useParams({ from: "/invitations/$token" });
  const invitation = useQuery({ ...q.invitations.publicGet.options({ token }), retry: false });
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    const existing = invitation.data!.userExists;
    setBusy(true);
    setError(null);
    try {
      await q.invitations.publicAccept.call({ token, password, ...(existing ? {} : { name: name.trim() }) });
      await q.auth.signIn.call({ email: invitation.data!.email, password });
    } catch (err) {
      setError(err);
      setBusy(false);
      return;
    }
    queryClient.clear();
    await navigate({ to: "/" });
  }

  let body;
  if (invitation.isPending) {
    body = <div className="state" role="status"><span className="spinner" aria-hidden="true" /><span>Reading the invitation…</span></div>;
  } else if (invitation.isError) {
    const status = statusOf(invitation.error);
    body = (
      <div className="alert-box alert-box--error" role="alert">
        <p>
          {status === 404 ? "This invitation link is not valid: it was revoked, or replaced by a newer one. Ask whoever invited you to send it again."
            : messageOf(invitation.error)}
        </p>
      </div>
    );
  } else {
    const { email, organization, role, expiresAt, userExists } = invitation.data;
    const nameProblem = fieldProblem(error, "name");
    const passwordProblem = fieldProblem(error, "password");
    body = (
      <>
        <p>
          You are invited to join <strong>{organization.name}</strong> as <strong>{role.name}</strong>
          {role.description && <span className="muted"> ({role.description})</span>}.
          The invitation expires <RelativeTime value={expiresAt} />.
        </p>
        <div className="field">
          <span className="field__label">E-mail</span>
          <span>{email}</span>
        </div>
        {!userExists && (
          <div className="field">
            <label htmlFor="invitee-name">Your name</label>
            <input id="invitee-name" className="input" required maxLength={100} autoComplete="name" value={name} onChange={(e) => setName(e.target.value)} aria-invalid={nameProblem ? true : undefined} aria-describedby={nameProblem ? "invitee-name-problem" : undefined} />
            {nameProblem && <span id="invitee-name-problem" className="field__error">{nameProblem}</span>}
          </div>
        )}
        <div className="field">
          <label htmlFor="invitee-password">{userExists ? "Password of your account" : "Choose a password"}</label>
          <input id="invitee-password" className="input" type="password" required autoComplete={userExists ? "current-password" : "new-password"} value={password} onChange={(e) => setPassword(e.target.value)} aria-invalid={passwordProblem ? true : undefined} aria-describedby="invitee-password-hint" />
          <span id="invitee-password-hint" className={passwordProblem ? "field__error" : "field__hint"}>
            {passwordProblem ?? (userExists ? `An account with ${email} exists: its password proves it is yours.` : "At least 12 characters.")}
          </span>
        </div>
        {error != null && !nameProblem && !passwordProblem && <ErrorBox error={error} />}
        <Button type="submit" variant="primary" icon={<UserCheck />} busy={busy} disabled={(!userExists && !name.trim()) || !password}>
          Accept and sign in
        </Button>
      </>
    );
  }

  return (
    <div className="sign-in">
      <form className="sign-in__card card" onSubmit={submit} aria-labelledby="invitation-title" noValidate>
        <div className="sign-in__brand">
          <img src="/favicon.svg" alt="" width={36} height={36} />
          <h1 id="invitation-title">Join {invitation.data?.organization.name ?? "Fleet Manager"}</h1>
        </div>
        {body}
      </form>
    </div>
  );
}
