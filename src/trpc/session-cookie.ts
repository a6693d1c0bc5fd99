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
}

export function clearSessionCookie(res: Response): void {
  res.append("Set-Cookie", serialize(SESSION_COOKIE, "", { ...attributes(res), expires: new Date(0) }));
}
