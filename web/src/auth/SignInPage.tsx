// Sign-in: e-mail and password (the service sets the HttpOnly session cookie), then the page
// that was asked for. A wrong password says so without saying which part was wrong (the API's
// own answer); a throttled sign-in says how long to wait.
// "Sign in with <provider>" when the service has one (GET /auth/providers): a plain link, since
// the service itself walks the browser through the provider and back (src/modules/auth/oidc-sign-in-route.ts);
// a refusal comes back here as ?error=<code>, shown as a sentence. Below the form: where the first
// start's password is kept (src/first-start.ts), for whoever just started the service.
import { useState } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { useQuery, useQueryClient } from "@tanstack/react-query";
import { KeyRound, LogIn } from "lucide-react";
import { messageOf, statusOf } from "../api/client";
import { q } from "../api/query";
import { safeNext } from "../app/routes";
import { Button } from "../ui/Button";
import { useAction } from "../ui/useAction";
import { signInErrorSentence } from "./sign-in-errors";
import "./sign-in.css";

export function SignInPage() {
  const { next, reason, error: providerError } = useSearch({ from: "/sign-in" });
  const methods = useQuery(q.auth.providers.options());
  const oidc = methods.data?.oidc ?? null;
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  // Busy until the page asked for is on its way; what the signed-out page read is dropped first.
  const signIn = useAction(q.auth.signIn.mutation(), {
    onSuccess: async () => {
      queryClient.clear();
      await navigate({ to: safeNext(next) });
    },
  });
  // The refusal as a sentence of this page (not an ErrorBox): a wrong password says only that.
  const error = signIn.error == null ? null : statusOf(signIn.error) === 401 ? "Wrong e-mail or password." : messageOf(signIn.error);

  return (
    <div className="sign-in">
      <form className="sign-in__card card" onSubmit={signIn.submit(() => ({ email: email.trim(), password }))} aria-labelledby="sign-in-title" noValidate>
        <div className="sign-in__brand">
          <img src="/favicon.svg" alt="" width={36} height={36} />
          <h1 id="sign-in-title">Sign in to Fleet Manager</h1>
        </div>
        {reason === "expired" && !error && !providerError && (
          <div className="alert-box alert-box--info" role="status">
            <p>Your session has ended. Sign in again to continue where you were.</p>
          </div>
        )}
        {(error || providerError) && (
          <div className="alert-box alert-box--error" role="alert">
            <p>{error ?? signInErrorSentence(providerError!, oidc?.name)}</p>
          </div>
        )}
        <div className="field">
          <label htmlFor="email">E-mail</label>
          <input id="email" className="input" type="email" autoComplete="username" required value={email} onChange={(e) => setEmail(e.target.value)} autoFocus />
        </div>
        <div className="field">
          <label htmlFor="password">Password</label>
          <input id="password" className="input" type="password" autoComplete="current-password" required value={password} onChange={(e) => setPassword(e.target.value)} />
        </div>
        <Button type="submit" variant="primary" icon={<LogIn />} busy={signIn.isPending} disabled={!email || !password}>
          Sign in
        </Button>
        <p className="sign-in__hint">
          First start? The Super Admin&rsquo;s e-mail and generated password were printed where the service started,
          and are kept in <code>first-start.txt</code> in its data directory (<code>DATA_DIR</code>, <code>./data</code> by
          default) until that admin changes the password.
        </p>
        {oidc && (
          <>
            <div className="sign-in__divider">or</div>
            <a className="btn" href={`${oidc.startUrl}?${new URLSearchParams({ next: safeNext(next) })}`}>
              <KeyRound aria-hidden="true" />
              Sign in with {oidc.name}
            </a>
          </>
        )}
      </form>
    </div>
  );
}
