// The browser's way through the OpenID Connect provider (src/modules/federation/browser-sign-in.ts
// does the protocol): plain express routes, since both answer with a navigation, not JSON.
//
//   GET /api/v1/auth/oidc/authorize?next=/devices  -> 302 to the provider, with a short-lived
//       cookie holding the PKCE code verifier
//   GET /api/v1/auth/oidc/callback?code&state       -> the console session's cookie, and a page
//       that opens `next`; any refusal -> 302 /sign-in?error=<code>
//
// SameSite, which decides what the browser sends back:
// * The provider sends the browser back with a cross-site navigation. A SameSite=Strict cookie
//   is not sent on it, a Lax one is (top-level GET): the verifier cookie is Lax, HttpOnly,
//   limited to the callback's path and to the attempt's lifetime.
// * The session cookie (Strict, src/trpc/session-cookie.ts) set on the callback's answer is
//   stored, but a 302 from there continues the cross-site navigation: measured in Chromium, the
//   console page it opened was then requested without the cookie. So the callback answers a
//   small page of our own that moves on with <meta http-equiv="refresh"> (no script: the CSP
//   allows only our own script files): a navigation our page starts is same-site, and the
//   cookie goes with it (test/browser/auth/oidc-sign-in.test.ts checks that request).
//
// A native client (the `fleet` CLI, RFC 8252) takes the same two routes: authorize with its
// loopback redirect_uri, code_challenge (S256) and state, and the callback then sends the
// browser to that loopback address with a one-time code (or `error`) instead of signing the
// browser in; the code is exchanged at POST /auth/oidc/token (./native-sign-in.ts).
import express, { type Request, type Response, type Router } from "express";
import { parse, serialize } from "cookie";
import type { Services } from "../../services.js";
import { requestInfoOf } from "../../trpc/context.js";
import { setSessionCookie } from "../../trpc/session-cookie.js";
import {
  ATTEMPT_TTL_SECONDS,
  OIDC_CALLBACK_PATH,
  SignInRefused,
  beginBrowserSignIn,
  browserSignInSettings,
  carriedIn,
  completeBrowserSignIn,
  type OidcSignInError,
} from "../federation/browser-sign-in.js";
import { consoleReturnPath } from "../../http/console.js";
import type { ExtraPaths } from "../../http/docs.js";
import { sendRestError } from "../../http/error-response.js";
import { startCookieSession } from "./service.js";
import { carryOf, issueNativeCode, loopbackAnswer, nativeRequestCarried, nativeRequestOf, NATIVE_CODE_TTL_SECONDS, type NativeRequest } from "./native-sign-in.js";

const ATTEMPT_COOKIE = "fm_oidc";

function attemptCookie(res: Response, value: string, maxAge: number): void {
  res.append("Set-Cookie", serialize(ATTEMPT_COOKIE, value, {
    httpOnly: true,
    sameSite: "lax",
    path: OIDC_CALLBACK_PATH,
    secure: res.req.secure,
    maxAge,
  }));
}

/** The sign-in page, saying why (and keeping the page asked for, so that trying again leads there). */
function toSignIn(res: Response, code: OidcSignInError, returnTo?: string): void {
  const query = new URLSearchParams({ error: code });
  if (returnTo && returnTo !== "/") query.set("next", returnTo);
  res.setHeader("Cache-Control", "no-store");
  res.redirect(302, `/sign-in?${query}`);
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** Moves the browser on to `path` (a checked console path) by a navigation of our own page
 *  (its icon named, or the browser asks for /favicon.ico, which is not there). */
function continuePage(path: string): string {
  const href = escapeHtml(path);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=${href}"><link rel="icon" href="/favicon.svg" type="image/svg+xml"><title>Signed in - Fleet Manager</title></head>
<body><p>Signed in. <a href="${href}">Continue</a></p></body></html>`;
}

/** A native client's refusal goes back to its loopback address, as OAuth's `error` with its `state`. */
function toNativeClient(res: Response, native: NativeRequest, code: OidcSignInError): void {
  res.setHeader("Cache-Control", "no-store");
  res.redirect(302, loopbackAnswer(native, { error: code, state: native.state }));
}

/** `native`: the native client whose attempt it was, once known to be authentic. */
function refusal(services: Services, req: Request, res: Response, err: unknown, native: NativeRequest | null = null): void {
  const code = err instanceof SignInRefused ? err.code : "server_error";
  if (!(err instanceof SignInRefused)) {
    services.logger.error({ err: { message: (err as Error)?.message, stack: (err as Error)?.stack }, requestId: requestInfoOf(req).requestId }, "OIDC sign-in failed");
  }
  if (native) return toNativeClient(res, native, code);
  toSignIn(res, code, err instanceof SignInRefused ? err.returnTo : undefined);
}

export function oidcSignInRoutes(services: Services): Router {
  const r = express.Router();

  r.get("/auth/oidc/authorize", async (req, res) => {
    let native: NativeRequest | null;
    try {
      native = nativeRequestOf(req.query as Record<string, unknown>);
    } catch (err) {
      // An invalid redirect_uri is never redirected to (RFC 6749 4.1.2.1): the browser is told.
      res.setHeader("Cache-Control", "no-store");
      return sendRestError(services, res, requestInfoOf(req), err);
    }
    const next = typeof req.query.next === "string" ? req.query.next : undefined;
    const returnTo = native ? "/" : consoleReturnPath(next);
    if (returnTo === null) return toSignIn(res, "invalid_next");
    const settings = browserSignInSettings(services.config);
    if (!settings) return native ? toNativeClient(res, native, "not_configured") : toSignIn(res, "not_configured", returnTo);
    // The verifier cookie must be set on the host the provider sends the browser back to.
    const origin = `${req.protocol}://${req.host}`;
    if (settings.publicUrl && settings.publicUrl !== origin) return void res.redirect(302, settings.publicUrl + req.originalUrl);
    try {
      const { authorizationUrl, verifier } = await beginBrowserSignIn(services, { returnTo, origin, carry: native ? carryOf(native) : undefined });
      attemptCookie(res, verifier, ATTEMPT_TTL_SECONDS);
      res.setHeader("Cache-Control", "no-store");
      res.redirect(302, authorizationUrl.href);
    } catch (err) {
      refusal(services, req, res, err instanceof SignInRefused ? new SignInRefused(err.code, err.reason, returnTo) : err, native);
    }
  });

  r.get("/auth/oidc/callback", async (req, res) => {
    const verifier = typeof req.headers.cookie === "string" ? parse(req.headers.cookie)[ATTEMPT_COOKIE] ?? null : null;
    // Whatever happens, the attempt is over for this browser.
    attemptCookie(res, "", 0);
    const query = new URL(req.originalUrl, "http://callback.invalid").searchParams;
    const request = requestInfoOf(req);
    try {
      const { user, returnTo, carried } = await completeBrowserSignIn(services, request, { query, verifier });
      res.setHeader("Cache-Control", "no-store");
      const native = nativeRequestCarried(carried);
      if (native) return res.redirect(302, await issueNativeCode(services, request, user, native));
      const session = await startCookieSession(services, request, user, undefined, "via OIDC");
      setSessionCookie(res, session.secret, session.expiresAt);
      res.type("html").send(continuePage(returnTo));
    } catch (err) {
      // The attempt is known (and so its state authentic) once a refusal names its returnTo.
      const known = err instanceof SignInRefused ? err.returnTo !== undefined : true;
      const state = query.get("state");
      refusal(services, req, res, err, known && state ? nativeRequestCarried(carriedIn(state)) : null);
    }
  });
  return r;
}

const signInPage = {
  description: "to the console's sign-in page: `Location: /sign-in?error=<code>[&next=<path>]`. The code says why " +
    "(not_configured, invalid_next, unavailable, denied, provider_error, state_mismatch, state_used, state_expired, " +
    "invalid_response, user_disabled, account_conflict, no_email, server_error); the page shows a sentence for it.",
  headers: { Location: { schema: { type: "string" } } },
};

export const oidcSignInOpenApiPaths: ExtraPaths = {
  "/auth/oidc/authorize": {
    get: {
      operationId: "auth-oidc-authorize",
      tags: ["Authentication"],
      summary: "Start signing a browser in with the OpenID Connect provider (a navigation, not an API call)",
      description: "For the web console's \"Sign in with <provider>\" (GET /auth/providers says whether it is configured). " +
        "Redirects to the provider's authorization endpoint (Authorization Code with PKCE S256, `state` and `nonce`) " +
        "and sets the `fm_oidc` cookie (HttpOnly, SameSite=Lax, path /api/v1/auth/oidc/callback, 10 minutes) that " +
        "binds the attempt to this browser. With PUBLIC_URL set, a request that reached the service at another address is first sent there. " +
        "A native client (the fleet CLI, RFC 8252) adds `redirect_uri` (its loopback address), `code_challenge`, `code_challenge_method=S256` and `state`: " +
        "the callback then sends the browser to `redirect_uri` with a one-time `code` and the same `state` (or `error=<code>` and `state`), " +
        "and the client exchanges the code at POST /auth/oidc/token.",
      security: [],
      parameters: [
        {
          name: "next",
          in: "query",
          required: false,
          description: "The console path to open once signed in (default /). Only a path of this console: another site or an API path is refused.",
          schema: { type: "string", maxLength: 2000 },
        },
        {
          name: "redirect_uri",
          in: "query",
          required: false,
          description: "Native client: its loopback callback, `http://127.0.0.1:<port>/<path>` or `http://[::1]:<port>/<path>`, any port (not `localhost`, not https, no fragment).",
          schema: { type: "string", maxLength: 2000 },
        },
        { name: "code_challenge", in: "query", required: false, description: "Native client: base64url SHA-256 of its PKCE code verifier (43 characters).", schema: { type: "string", pattern: "^[A-Za-z0-9_-]{43}$" } },
        { name: "code_challenge_method", in: "query", required: false, description: "Native client: `S256` (the only method accepted).", schema: { type: "string", enum: ["S256"] } },
        { name: "state", in: "query", required: false, description: "Native client: a random value (16 to 256 visible ASCII characters) given back on its loopback callback, which the client checks.", schema: { type: "string", minLength: 16, maxLength: 256 } },
      ],
      responses: {
        302: {
          description: "To the provider's authorization endpoint; or, when refused, " + signInPage.description + " (a native client: to its `redirect_uri` with `error=<code>` and `state`)",
          headers: { Location: { schema: { type: "string" } }, "Set-Cookie": { schema: { type: "string" }, description: "fm_oidc=<PKCE code verifier>" } },
        },
        400: {
          description: "A native client's parameter is missing or invalid (a redirect_uri that is not a loopback http address, a code_challenge_method other than S256, ...): the error body names it in `issues`; nothing is redirected to.",
          content: { "application/json": { schema: { type: "object" } } },
        },
      },
    },
  },
  "/auth/oidc/callback": {
    get: {
      operationId: "auth-oidc-callback",
      tags: ["Authentication"],
      summary: "The provider's answer: exchange the code and sign the browser in with the session cookie (or send a native client its one-time code)",
      description: "The redirect URI to register at the provider: `<PUBLIC_URL or the address the browser used>/api/v1/auth/oidc/callback`. " +
        "Takes the attempt named by `state` once (it must belong to this browser: the fm_oidc cookie), exchanges the code " +
        "(with the PKCE verifier and the client's credentials), verifies the ID token (signature, issuer, audience, expiry, nonce), " +
        "finds, links or creates the user as POST /auth/oidc does (group mappings applied) and opens a console session; " +
        "for a native client's attempt, a session that only POST /auth/oidc/token activates, and a redirect to the client's loopback address with the one-time code. " +
        "Every sign-in and every refusal is audited as `auth.login`.",
      security: [],
      parameters: [
        { name: "code", in: "query", required: false, schema: { type: "string" } },
        { name: "state", in: "query", required: false, schema: { type: "string" } },
        { name: "error", in: "query", required: false, description: "the provider's refusal (access_denied, ...)", schema: { type: "string" } },
      ],
      responses: {
        200: {
          description: "Signed in: the `fm_session` cookie (as POST /auth/session sets it) and a small HTML page that opens `next` " +
            "(a same-site navigation, so that the SameSite=Strict cookie goes with it).",
          headers: { "Set-Cookie": { schema: { type: "string" } } },
          content: { "text/html": { schema: { type: "string" } } },
        },
        302: {
          description: `Refused: ${signInPage.description}. For a native client's attempt: to its loopback redirect_uri with \`code\` (one-time, ` +
            `${NATIVE_CODE_TTL_SECONDS} s, for POST /auth/oidc/token) and its \`state\`, or with \`error=<code>\` and \`state\`.`,
          headers: signInPage.headers,
        },
      },
    },
  },
};
