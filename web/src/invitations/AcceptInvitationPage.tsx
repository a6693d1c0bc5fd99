// The public page an invitation link opens (/invitations/<token>), outside the signed-in
// area: who invites, to which organization and with which role; the invited person chooses a
// name and a password (or, having an account already, gives its password), accepts, and is
// signed in with the same cookie session as the sign-in page, landing on the overview.
import { useState } from "react";
import { useNavigate, useParams } from "@tanstack/react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { UserCheck } from "lucide-react";
import { messageOf, statusOf } from "../api/client";
import { q } from "../api/query";
import { FormFooter } from "../ui/FormFooter";
import { RelativeTime } from "../ui/time";
import { useAction } from "../ui/useAction";
import "../auth/sign-in.css";

/** The fields of this form the API's 400 may name in `issues`. */
const fieldOf = (_message: string, path?: readonly (string | number)[]) => {
  const field = path?.at(-1);
  return field === "name" || field === "password" ? field : null;
};

export function AcceptInvitationPage() {
  const { token } = useParams({ from: "/invitations/$token" });
  const invitation = useQuery({ ...q.invitations.publicGet.options({ token }), retry: false });
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  // Busy until the overview is on its way: the new member is signed in with the same password.
  const accept = useAction({
    mutationFn: async ({ email, ...input }: { token: string; password: string; name?: string; email: string }) => {
      await q.invitations.publicAccept.call(input);
      await q.auth.signIn.call({ email, password: input.password });
    },
  }, {
    fieldOf,
    onSuccess: async () => {
      queryClient.clear();
      await navigate({ to: "/" });
    },
  });
  const submit = accept.submit(() => ({ token, password, email: invitation.data!.email, ...(invitation.data!.userExists ? {} : { name: name.trim() }) }));

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
    const nameProblem = accept.fieldErrors.name;
    const passwordProblem = accept.fieldErrors.password;
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
        {/* The card's one full-width button (a column), no Cancel. */}
        <FormFooter action={accept} className="stack" icon={<UserCheck />} disabled={(!userExists && !name.trim()) || !password} submitLabel="Accept and sign in" />
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
