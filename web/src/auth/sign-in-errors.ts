// What the sign-in page says when a sign-in through the identity provider came back refused
// (/sign-in?error=<code>, set by the service's callback, src/modules/auth/oidc-sign-in-route.ts). The codes
// are the service's own type: a new one without a sentence here fails the type check.
import type { OidcSignInError } from "../../../src/modules/federation/browser-sign-in";

const SENTENCES: Record<OidcSignInError, (provider: string) => string> = {
  not_configured: () => "Sign-in with an identity provider is not set up on this service. Use your e-mail and password.",
  invalid_next: () => "The sign-in link pointed outside the console, so it was not followed. Sign in again from here.",
  unavailable: (p) => `${p} cannot be reached right now. Try again in a moment.`,
  denied: (p) => `Sign-in was cancelled at ${p}.`,
  provider_error: (p) => `${p} did not complete the sign-in. Try again; if it keeps failing, ask your administrator.`,
  state_mismatch: () => "This sign-in was started in another browser or tab. Start again from this page.",
  state_used: () => "This sign-in was already completed once and cannot be used again. Start again from this page.",
  state_expired: () => "The sign-in took too long and expired. Start again from this page.",
  invalid_response: (p) => `The answer from ${p} could not be verified, so you were not signed in. If this keeps happening, ask your administrator.`,
  user_disabled: () => "Your account is disabled. Ask an administrator to enable it.",
  account_conflict: (p) => `An account with your e-mail address already exists and cannot be linked to your ${p} identity. Ask an administrator.`,
  no_email: (p) => `${p} did not share your e-mail address, so no account could be set up for you.`,
  server_error: () => "Something went wrong on our side while signing you in. Try again.",
};

/** The sentence for `code`; an unknown code (an old link, a hand-edited URL) still says something true. */
export function signInErrorSentence(code: string, provider: string | undefined): string {
  const sentence = (SENTENCES as Record<string, ((provider: string) => string) | undefined>)[code];
  if (!sentence) return "Signing in did not complete. Try again.";
  const text = sentence(provider ?? "the identity provider");
  return text.charAt(0).toUpperCase() + text.slice(1);
}
