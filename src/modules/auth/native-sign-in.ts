// Signing a native client (the `fleet` CLI) in through the browser and the OpenID Connect
// provider, as RFC 8252 (OAuth 2.0 for Native Apps) has it: the client opens the system browser
// on GET /auth/oidc/authorize with a loopback `redirect_uri` (http://127.0.0.1:<any port>/...),
// a PKCE `code_challenge` (S256) and its own `state`; the service signs the browser in at the
// provider exactly as for the console (src/modules/federation/browser-sign-in.ts), and instead of
// a cookie session it sends the browser to the loopback address with a one-time `code` and the
// client's `state`. The client exchanges the code with its PKCE verifier at POST
// /auth/oidc/token for the token pair a password sign-in gives (access + refresh).
//
// Where the pieces live, with no table of their own (the schema is not ours to change here):
// * Between authorize and callback, the client's request rides in the provider's `state`,
//   after a dot: the attempt row (OidcSignInAttempt) is named by the SHA-256 of the whole state,
//   so the callback trusts only a request it handed out itself.
// * The one-time code is stateless, single use all the same: at the callback the session row is
//   created dormant (startPendingSession: its refresh token hash is that of an activation secret
//   no one holds a token for, and it expires in 60 s), and the code is that session's id, the
//   activation secret, the challenge, the redirect URI and an expiry, encrypted and
//   authenticated (AES-256-GCM, the service's SecretBox). The exchange decrypts it, checks
//   expiry, redirect URI and verifier, and activates the session by one conditional update that
//   replaces the activation's hash: a second exchange of the same code finds it gone. A code
//   never exchanged leaves a session that dies within the minute and can issue nothing.
import crypto from "node:crypto";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { invalidField } from "../../trpc/errors.js";
import { activatePendingSession, startPendingSession, type TokenPair } from "./service.js";

/** How long the one-time code (and the dormant session behind it) lives. */
export const NATIVE_CODE_TTL_SECONDS = 60;
const CODE_PREFIX = "fmo_";
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/; // base64url of a SHA-256, unpadded (RFC 7636 4.2)
const CLIENT_STATE = /^[\x21-\x7e]{16,256}$/;

/** What a native client asked for at GET /auth/oidc/authorize. */
export interface NativeRequest {
  redirectUri: string;
  codeChallenge: string;
  state: string;
}

/**
 * Why `uri` is not a loopback redirect of a native client (RFC 8252 7.3: `http`, the loopback
 * IP literal, any port), or null. `localhost` is refused (RFC 8252 8.3: a name can resolve
 * elsewhere, or to the other IP family than the one the client listens on).
 */
export function loopbackRedirectProblem(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return "must be an absolute URL";
  }
  if (url.protocol !== "http:") return `must be an http:// loopback address (RFC 8252), not ${url.protocol}//`;
  if (url.hostname !== "127.0.0.1" && url.hostname !== "[::1]") return `must name the loopback address 127.0.0.1 or [::1] (with any port), not ${url.hostname}`;
  if (url.username || url.password) return "must not carry credentials";
  if (url.hash) return "must not have a fragment";
  return null;
}

/**
 * The native client's parameters of GET /auth/oidc/authorize: null when none is given (the
 * console's sign-in), a 400 naming the first invalid one, else the request.
 */
export function nativeRequestOf(query: Record<string, unknown>): NativeRequest | null {
  const names = ["redirect_uri", "code_challenge", "code_challenge_method", "state"] as const;
  if (names.every((n) => query[n] === undefined)) return null;
  const value = (name: (typeof names)[number]) => {
    const v = query[name];
    if (typeof v !== "string" || v === "") throw invalidField(name, `Required: a native client's sign-in needs redirect_uri, code_challenge, code_challenge_method=S256 and state`);
    return v;
  };
  const redirectUri = value("redirect_uri");
  const problem = redirectUri.length > 2000 ? "is too long" : loopbackRedirectProblem(redirectUri);
  if (problem) throw invalidField("redirect_uri", `redirect_uri ${problem}`);
  if (value("code_challenge_method") !== "S256") throw invalidField("code_challenge_method", "code_challenge_method must be S256 (plain is not accepted)");
  const codeChallenge = value("code_challenge");
  if (!CHALLENGE.test(codeChallenge)) throw invalidField("code_challenge", "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)");
  const state = value("state");
  if (!CLIENT_STATE.test(state)) throw invalidField("state", "state must be 16 to 256 visible ASCII characters (a random value the client checks on its callback)");
  return { redirectUri, codeChallenge, state };
}

/** The request, as beginBrowserSignIn carries it through the provider's `state`. */
export const carryOf = (native: NativeRequest): string =>
  Buffer.from(JSON.stringify([native.redirectUri, native.codeChallenge, native.state])).toString("base64url");

/**
 * The request carried in a state (completeBrowserSignIn's `carried`, authentic); null for the
 * console's. Checked again all the same: a refusal's answer reads it before the state is known
 * to be ours, and must go nowhere but to a loopback address.
 */
export function nativeRequestCarried(carried: string | null): NativeRequest | null {
  if (!carried) return null;
  try {
    const [redirectUri, codeChallenge, state] = JSON.parse(Buffer.from(carried, "base64url").toString("utf8")) as unknown[];
    return nativeRequestOf({ redirect_uri: redirectUri, code_challenge: codeChallenge, code_challenge_method: "S256", state });
  } catch {
    return null;
  }
}

/** The loopback address with `params` added to its query (the client's own query kept). */
export function loopbackAnswer(native: NativeRequest, params: Record<string, string>): string {
  const url = new URL(native.redirectUri);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

interface CodeContent {
  sid: string;
  act: string;
  ch: string;
  ru: string;
  exp: number;
}

/**
 * After the provider vouched for `user`: the dormant session and the loopback address the
 * browser goes to, with the one-time code and the client's state.
 */
export async function issueNativeCode(services: Services, request: RequestInfo, user: Parameters<typeof startPendingSession>[2], native: NativeRequest): Promise<string> {
  const pending = await startPendingSession(services, request, user, NATIVE_CODE_TTL_SECONDS, "via OIDC, for a native client (one-time code)");
  const content: CodeContent = { sid: pending.sessionId, act: pending.activation, ch: native.codeChallenge, ru: native.redirectUri, exp: pending.expiresAt.getTime() };
  const code = CODE_PREFIX + Buffer.from(services.secrets.encrypt(JSON.stringify(content))).toString("base64url");
  return loopbackAnswer(native, { code, state: native.state });
}

function openCode(services: Services, code: string): CodeContent | null {
  if (!code.startsWith(CODE_PREFIX)) return null;
  try {
    return JSON.parse(services.secrets.decrypt(Buffer.from(code.slice(CODE_PREFIX.length), "base64url").toString("utf8"))) as CodeContent;
  } catch {
    return null; // altered, or sealed by another key
  }
}

const expired = () => invalidField("code", `The code has expired (it is valid for ${NATIVE_CODE_TTL_SECONDS} s after the browser sign-in); sign in again`);

/**
 * POST /auth/oidc/token: the one-time code and the PKCE verifier for a token pair. Every
 * refusal is a 400 naming the field, and issues nothing.
 */
export async function exchangeNativeCode(services: Services, request: RequestInfo, input: { code: string; codeVerifier: string; redirectUri: string }): Promise<TokenPair> {
  const content = openCode(services, input.code);
  if (!content) throw invalidField("code", "Not a sign-in code of this service");
  if (content.exp <= Date.now()) throw expired();
  if (input.redirectUri !== content.ru) throw invalidField("redirectUri", "Not the redirect_uri the code was issued to");
  const challenge = crypto.createHash("sha256").update(input.codeVerifier).digest("base64url");
  if (challenge !== content.ch) throw invalidField("codeVerifier", "Does not match the code_challenge of the sign-in (PKCE S256)");
  const tokens = await activatePendingSession(services, request, { sessionId: content.sid, activation: content.act });
  if (tokens === "used") throw invalidField("code", "The code has already been used; sign in again");
  if (tokens === "ended") throw invalidField("code", "The session of this sign-in has ended (signed out, or the account was disabled)");
  if (tokens === "expired") throw expired();
  return tokens;
}
