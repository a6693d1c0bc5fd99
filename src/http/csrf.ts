// Cross-site request forgery: a browser attaches the console's session cookie to whatever
// request a page makes, so a state-changing request that would authenticate by that cookie
// must prove it comes from the service's own origin. SameSite=Strict already keeps the cookie
// off cross-site requests in current browsers; this check is the second, server-side lock
// (older browsers, same-site sibling origins). Requests with X-API-Key or Authorization are not
// at risk (a page cannot add those headers to a cross-origin request without CORS allowing
// it) and pass untouched, as do reads (GET, HEAD, OPTIONS), which change nothing.
// The console's sign-in is checked too, so that no other site can sign a browser in.
import type { NextFunction, Request, Response } from "express";
import { requestIdOf } from "../trpc/context.js";
import { errorBody } from "../trpc/errors.js";
import { sessionCookieOf } from "../trpc/session-cookie.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The console's sign-in, on either surface (a tRPC batch names its procedures separated by commas). */
function isCookieSignIn(req: Request): boolean {
  const path = req.originalUrl.split("?")[0];
  return path === "/api/v1/auth/session" || (path.startsWith("/trpc/") && path.slice(6).split(",").includes("auth.signIn"));
}

/** The request comes from a page of this service: the browser says so, or its Origin is ours. */
function fromOwnOrigin(req: Request): boolean {
  const site = req.headers["sec-fetch-site"];
  if (typeof site === "string") return site === "same-origin";
  const origin = req.headers.origin;
  if (typeof origin !== "string") return false; // every browser sends one of the two on a POST
  try {
    // req.host honours TRUST_PROXY_HOPS (X-Forwarded-Host behind a trusted proxy).
    return new URL(origin).host === req.host;
  } catch {
    return false;
  }
}

export function csrfGuard(req: Request, res: Response, next: NextFunction) {
  if (SAFE_METHODS.has(req.method)) return next();
  const byCookie = !req.headers["x-api-key"] && !req.headers.authorization && sessionCookieOf(req.headers) !== null;
  if (!byCookie && !isCookieSignIn(req)) return next();
  if (fromOwnOrigin(req)) return next();
  res.status(403).json(errorBody(requestIdOf(req), 403, "FORBIDDEN",
    "Cross-site request refused: a request signed in by the console's cookie must come from the console's own origin"));
}
