// Sign-in: e-mail and password (the service sets the HttpOnly session cookie), then the page
// that was asked for. A wrong password says so without saying which part was wrong (the API's
// own answer); a throttled sign-in says how long to wait.
import { useState, type FormEvent } from "react";
import { useNavigate, useSearch } from "@tanstack/react-router";
import { useQueryClient } from "@tanstack/react-query";
import { LogIn } from "lucide-react";
import { messageOf, statusOf } from "../api/client";
import { q } from "../api/query";
import { safeNext } from "../app/routes";
import { Button } from "../ui/Button";
import "./sign-in.css";

export function SignInPage() {
  const { next, reason } = useSearch({ from: "/sign-in" });
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  async function submit(event: FormEvent) {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await q.auth.signIn.call({ email: email.trim(), password });
    } catch (err) {
      const status = statusOf(err);
      setError(status === 401 ? "Wrong e-mail or password." : messageOf(err));
      setBusy(false);
      return;
    }
    queryClient.clear();
    await navigate({ to: safeNext(next) });
  }

  return (
    <div className="sign-in">
      <form className="sign-in__card card" onSubmit={submit} aria-labelledby="sign-in-title" noValidate>
        <div className="sign-in__brand">
          <img src="/favicon.svg" alt="" width={36} height={36} />
          <h1 id="sign-in-title">Sign in to Fleet Manager</h1>
        </div>
        {reason === "expired" && !error && (
          <div className="alert-box alert-box--info" role="status">
            <p>Your session has ended. Sign in again to continue where you were.</p>
          </div>
        )}
        {error && (
          <div className="alert-box alert-box--error" role="alert">
            <p>{error}</p>
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
        <Button type="submit" variant="primary" icon={<LogIn />} busy={busy} disabled={!email || !password}>
          Sign in
        </Button>
      </form>
    </div>
  );
}
