// "Sign in with <provider>" for the browser console: the service is a confidential OpenID
// Connect client of OIDC_ISSUER (Authorization Code with PKCE S256, `state` and `nonce`), built
// on openid-client (by the author of jose: discovery, the authorization URL, the code exchange
// and every check of the ID token, its signature included). The code is exchanged here, server
// to server, and the sign-in ends in the same cookie session as the password sign-in: no
// provider token ever reaches the page. The HTTP side (cookies, redirects) is
// src/modules/auth/oidc-sign-in-route.ts.
//
// Between the redirect to the provider and its answer, the attempt is a database row (so any
// process can take the answer) named by the SHA-256 of its `state`, bound to the browser that
// started it by the PKCE code verifier, which only that browser holds (an HttpOnly cookie): the
// row keeps the verifier's hash alone. A row is taken once, by an atomic update, and lives
// minutes.
//
// The same way through the provider serves native clients (the `fleet` CLI, RFC 8252): what
// they asked for rides in `state` after a dot (`carry`, src/modules/auth/native-sign-in.ts),
// authenticated by the attempt row, which is named by the hash of the whole state.
import * as oidc from "openid-client";
import type { Config } from "../../config.js";
import type { Services } from "../../services.js";
import type { RequestInfo } from "../../trpc/context.js";
import { safeEqual, sha256Hex } from "../../lib/crypto.js";
import { perService } from "../../lib/per-service.js";
import { FederatedUserDisabled, recordOidcRefusal, userOfIdToken } from "./oidc.js";

export const OIDC_AUTHORIZE_PATH = "/api/v1/auth/oidc/authorize";
export const OIDC_CALLBACK_PATH = "/api/v1/auth/oidc/callback";
/** How long a browser has to come back from the provider. */
export const ATTEMPT_TTL_SECONDS = 600;
/** A discovered provider configuration is used this long before the discovery document is read again. */
const DISCOVERY_TTL_MS = 60 * 60_000;

export interface BrowserSignInSettings {
  issuer: string;
  clientId: string;
  clientSecret: string;
  authMethod: "client_secret_basic" | "client_secret_post";
  providerName: string;
  scopes: string;
  publicUrl: string | null;
}

/** The console's provider sign-in, when OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are all set. */
export function browserSignInSettings(config: Config): BrowserSignInSettings | null {
  if (!config.OIDC_ISSUER || !config.OIDC_CLIENT_ID || !config.OIDC_CLIENT_SECRET) return null;
  return {
    issuer: config.OIDC_ISSUER,
    clientId: config.OIDC_CLIENT_ID,
    clientSecret: config.OIDC_CLIENT_SECRET,
    authMethod: config.OIDC_CLIENT_AUTH_METHOD,
    providerName: config.OIDC_PROVIDER_NAME ?? new URL(config.OIDC_ISSUER).hostname,
    scopes: config.OIDC_SCOPES.split(/\s+/).join(" "),
    publicUrl: config.PUBLIC_URL ?? null,
  };
}

/** How a browser can sign in here (the sign-in page's buttons). */
export function signInMethods(config: Config) {
  const settings = browserSignInSettings(config);
  return { password: true as const, oidc: settings ? { name: settings.providerName, startUrl: OIDC_AUTHORIZE_PATH } : null };
}

/**
 * Why a browser sign-in ended on the sign-in page; the page shows a sentence for each
 * (web/src/auth/sign-in-errors.ts). The code is all the URL carries: never a detail.
 */
export type OidcSignInError =
  | "not_configured"
  | "invalid_next"
  | "unavailable"
  | "denied"
  | "provider_error"
  | "state_mismatch"
  | "state_used"
  | "state_expired"
  | "invalid_response"
  | "user_disabled"
  | "account_conflict"
  | "no_email"
  | "server_error";

export class SignInRefused extends Error {
  constructor(
    readonly code: OidcSignInError,
    /** for the log and the audit trail: what went wrong, never a token, code or secret */
    readonly reason: string,
    /** the console path the browser asked for, when the attempt was known */
    readonly returnTo?: string,
  ) {
    super(reason);
  }
}

// The provider's configuration (its discovery document and our client's credentials), read
// at first use, not at start: a provider that is down must not keep the service from starting,
// and the password sign-in keeps working meanwhile. Concurrent first uses share one request.
const discovered = perService((_services: Services) => ({ value: null as { config: oidc.Configuration; at: number } | null, pending: null as Promise<oidc.Configuration> | null }));

async function providerConfiguration(services: Services, settings: BrowserSignInSettings): Promise<oidc.Configuration> {
  const cache = discovered(services);
  if (cache.value && Date.now() - cache.value.at < DISCOVERY_TTL_MS) return cache.value.config;
  cache.pending ??= (async () => {
    const auth = settings.authMethod === "client_secret_post" ? oidc.ClientSecretPost(settings.clientSecret) : oidc.ClientSecretBasic(settings.clientSecret);
    // An http:// issuer is the operator's explicit choice (a provider inside the network or on
    // loopback); openid-client refuses plain HTTP unless told. enableNonRepudiationChecks: the
    // ID token's signature is checked against the provider's keys too, not only trusted
    // because it came over the back channel (which, over plain HTTP, proves little).
    const insecure = new URL(settings.issuer).protocol === "http:";
    const config = await oidc.discovery(new URL(settings.issuer), settings.clientId, undefined, auth, {
      execute: [...(insecure ? [oidc.allowInsecureRequests] : []), oidc.enableNonRepudiationChecks],
      timeout: 10,
    });
    cache.value = { config, at: Date.now() };
    return config;
  })().finally(() => (cache.pending = null));
  try {
    return await cache.pending;
  } catch (err) {
    services.logger.warn({ issuer: settings.issuer, err: describeError(err) }, "OIDC discovery failed");
    throw new SignInRefused("unavailable", "the provider's discovery document cannot be read");
  }
}

/** What may be logged of an openid-client failure: its kind and code, never a token or the provider's free text. */
function describeError(err: unknown) {
  const e = err as { name?: string; code?: string; message?: string; error?: string; status?: number; cause?: { code?: string } };
  return { name: e?.name, code: e?.code ?? e?.cause?.code, message: e?.message, providerError: e?.error, status: e?.status };
}

/**
 * Starts a sign-in: the attempt row, and the provider's authorization URL the browser is sent
 * to. `verifier` goes into the browser's cookie and nowhere else.
 */
export async function beginBrowserSignIn(services: Services, input: { returnTo: string; origin: string; carry?: string }) {
  const settings = browserSignInSettings(services.config);
  if (!settings) throw new SignInRefused("not_configured", "sign-in with a provider is not configured");
  const config = await providerConfiguration(services, settings);
  const verifier = oidc.randomPKCECodeVerifier();
  const state = input.carry ? `${oidc.randomState()}.${input.carry}` : oidc.randomState();
  const nonce = oidc.randomNonce();
  const redirectUri = `${settings.publicUrl ?? input.origin}${OIDC_CALLBACK_PATH}`;
  const now = new Date();
  // Expired attempts go as new ones come (one indexed, set-based delete): no job needed.
  await services.prisma.oidcSignInAttempt.deleteMany({ where: { expiresAt: { lt: now } } });
  await services.prisma.oidcSignInAttempt.create({
    data: {
      stateHash: sha256Hex(state),
      verifierHash: sha256Hex(verifier),
      nonce,
      redirectUri,
      returnTo: input.returnTo,
      expiresAt: new Date(now.getTime() + ATTEMPT_TTL_SECONDS * 1000),
    },
  });
  const authorizationUrl = oidc.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: settings.scopes,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: "S256",
    state,
    nonce,
  });
  return { authorizationUrl, verifier };
}

/** What a state handed out by beginBrowserSignIn carries after its dot (null: nothing). */
export const carriedIn = (state: string): string | null => (state.includes(".") ? state.slice(state.indexOf(".") + 1) : null);

/**
 * The provider's answer (the callback's query) and the verifier from the browser's cookie:
 * the attempt is taken, the code exchanged, the ID token checked (signature, issuer, audience,
 * expiry, nonce), and the user found or provisioned exactly as POST /auth/oidc does; the caller
 * opens the session (a cookie session, or a native client's). Any refusal is a SignInRefused,
 * audited as a failed sign-in. `carried`: what beginBrowserSignIn's `carry` put in the state,
 * authentic since the attempt was found by the state's hash.
 */
export async function completeBrowserSignIn(services: Services, request: RequestInfo, input: { query: URLSearchParams; verifier: string | null }) {
  const settings = browserSignInSettings(services.config);
  if (!settings) throw new SignInRefused("not_configured", "sign-in with a provider is not configured");
  const refuse = async (code: OidcSignInError, reason: string, returnTo?: string) => {
    await recordOidcRefusal(services, request, reason);
    return new SignInRefused(code, reason, returnTo);
  };

  const state = input.query.get("state");
  const attempt = state ? await services.prisma.oidcSignInAttempt.findUnique({ where: { stateHash: sha256Hex(state) } }) : null;
  if (!state || !attempt) throw await refuse("state_mismatch", "the answer names no sign-in attempt of this service");
  // The answer came to a browser other than the one that started the attempt (a forged
  // callback link, say): refused, and the attempt stays for its own browser.
  if (!input.verifier || !safeEqual(sha256Hex(input.verifier), attempt.verifierHash)) {
    throw await refuse("state_mismatch", "the sign-in attempt belongs to another browser");
  }
  if (attempt.consumedAt) throw await refuse("state_used", "the sign-in attempt was already used");
  const now = new Date();
  if (attempt.expiresAt <= now) throw await refuse("state_expired", "the sign-in attempt expired");
  const taken = await services.prisma.oidcSignInAttempt.updateMany({ where: { id: attempt.id, consumedAt: null }, data: { consumedAt: now } });
  if (taken.count !== 1) throw await refuse("state_used", "the sign-in attempt was already used");
  const { returnTo } = attempt;

  const providerError = input.query.get("error");
  if (providerError !== null) {
    // The provider's own code only (a fixed vocabulary), not its free-text description.
    const code = /^[a-z_]{1,64}$/.test(providerError) ? providerError : "unknown";
    throw await refuse(code === "access_denied" ? "denied" : "provider_error", `the provider answered ${code}`, returnTo);
  }

  const config = await providerConfiguration(services, settings).catch((err: SignInRefused) => {
    throw new SignInRefused(err.code, err.reason, returnTo);
  });
  // The token request must repeat the redirect_uri of the authorization request: openid-client
  // takes it from the URL given here, so that URL is the stored one with the provider's answer.
  const callbackUrl = new URL(attempt.redirectUri);
  callbackUrl.search = input.query.toString();
  let claims;
  try {
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: input.verifier,
      expectedState: state,
      expectedNonce: attempt.nonce,
      idTokenExpected: true,
    });
    claims = tokens.claims();
  } catch (err) {
    services.logger.warn({ requestId: request.requestId, err: describeError(err) }, "OIDC code exchange refused");
    const [code, reason] = exchangeFailure(err);
    throw await refuse(code, reason, returnTo);
  }
  if (!claims) throw await refuse("invalid_response", "the provider answered without an ID token", returnTo);

  let user;
  try {
    user = await userOfIdToken(services, request, settings.issuer, claims);
  } catch (err) {
    // userOfIdToken audited the refusal already.
    const code = err instanceof FederatedUserDisabled ? "user_disabled"
      : (err as { code?: string }).code === "CONFLICT" ? "account_conflict"
      : (err as { code?: string }).code === "BAD_REQUEST" ? "no_email"
      : null;
    if (code === null) throw err;
    throw new SignInRefused(code, (err as Error).message, returnTo);
  }
  return { user, returnTo, carried: carriedIn(state) };
}

/** A failed code exchange, as the sign-in page's code and the audit's reason. */
function exchangeFailure(err: unknown): [OidcSignInError, string] {
  if (err instanceof oidc.ResponseBodyError) {
    // The token endpoint said no (invalid_grant: the code was used or expired; invalid_client:
    // our credentials) or failed on its side.
    return err.status >= 500 ? ["unavailable", `the token endpoint failed (${err.status})`] : ["provider_error", `the token endpoint refused: ${/^[a-z_]{1,64}$/.test(err.error) ? err.error : "error"}`];
  }
  if (err instanceof oidc.ClientError) {
    if (err.code === "OAUTH_RESPONSE_IS_NOT_CONFORM" || err.code === "OAUTH_RESPONSE_IS_NOT_JSON") return ["unavailable", "the token endpoint answered out of protocol"];
    // A claim that did not match (nonce, iss, aud, ...) is named by the cause openid-client keeps.
    const claim = (err.cause as { cause?: { claim?: unknown } } | undefined)?.cause?.claim;
    return ["invalid_response", `the ID token was refused: ${err.message}${typeof claim === "string" && /^[a-z_]{1,32}$/.test(claim) ? ` (${claim})` : ""}`];
  }
  // fetch failures and timeouts
  return ["unavailable", "the token endpoint cannot be reached"];
}
