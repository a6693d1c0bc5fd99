// The browser console's credential: an HttpOnly, SameSite=Strict cookie that names one of the
// server-side sessions bearer tokens use too (so logout, password changes, disabling the user
// and the session list treat both alike). Scripts in the page never see it; the cookie holds
// a random secret, stored as SHA-256 in Session.cookieTokenHash.
//
// Only /trpc and /api/v1 authenticate with it (through authenticate(), src/trpc/auth.ts), and
// a state-changing request that does must come from the console's own origin
// (src/http/csrf.ts). The agent routes never read it: devices sign their own tokens.
import type { IncomingHttpHeaders } from "node:http";
import type { Response } from "express";
import { parse, serialize } from "cookie";

export const SESSION_COOKIE = "fm_session";
export const SESSION_COOKIE_PREFIX = "fmc_";
/**
 * Beside the session cookie, with the same life: a flag scripts may read ("1", no secret), so
 * that the console asks who is signed in only when someone may be. Without it, every visit
 * while signed out would begin with a 401 (an error in the browser's console).
 */
export const SIGNED_IN_COOKIE = "fm_signed_in";

/** The session secret the request carries in its cookie, if any. */
export function sessionCookieOf(headers: IncomingHttpHeaders): string | null {
  const header = headers.cookie;
  if (typeof header !== "string" || !header.includes(SESSION_COOKIE)) return null;
  const value = parse(header)[SESSION_COOKIE];
  return value && value.startsWith(SESSION_COOKIE_PREFIX) ? value : null;
}

function attributes(res: Response) {
  // Secure whenever the browser reached us over HTTPS (directly or through a trusted proxy);
  // over plain HTTP on a LAN a Secure cookie would never come back.
  return { httpOnly: true, sameSite: "strict" as const, path: "/", secure: res.req?.secure === true };
}

export function setSessionCookie(res: Response, secret: string, expiresAt: Date): void {
  res.append("Set-Cookie", serialize(SESSION_COOKIE, secret, { ...attributes(res), expires: expiresAt }));
  res.append("Set-Cookie", serialize(SIGNED_IN_COOKIE, "1", { ...attributes(res), httpOnly: false, expires: expiresAt }));
}

export function clearSessionCookie(res: Response): void {
  res.append("Set-Cookie", serialize(SESSION_COOKIE, "", { ...attributes(res), expires: new Date(0) }));
  res.append("Set-Cookie", serialize(SIGNED_IN_COOKIE, "", { ...attributes(res), httpOnly: false, expires: new Date(0) }));
}
