// Request budgets for the API surfaces (/api/v1, /trpc), all per minute:
// * per caller once authenticated (`limitCaller`): the API key, the user across all their
//   sessions and tokens, or the device whatever token it signs; a fresh token or a second
//   sign-in does not buy a fresh budget;
// * per source address for everything else: requests that present no credential (sign-in,
//   enrollment, invitations), checked before any work, and credentials that prove no caller
//   (`chargeUnprovenCredential`: refused, or sent to a public operation). Requests with a
//   valid credential do not spend it: a fleet behind one NAT or carrier-grade NAT address is
//   thousands of callers, each with its own budget, not one. An address that has spent its
//   budget is refused (429) before any work, whatever it presents, until its window ends.
import type { NextFunction, Request, Response } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../services.js";
import { consume, RateLimited } from "../lib/rate-limit.js";
import type { IncomingHttpHeaders } from "node:http";
import { requestIdOf, sourceIpOf } from "../trpc/context.js";
import { errorBody } from "../trpc/errors.js";
import { sessionCookieOf } from "../trpc/session-cookie.js";
import type { Principal } from "../trpc/principal.js";
import type { DevicePrincipal } from "../trpc/device-auth.js";

const tooManyRequestsMessage = (retryAfterSeconds: number) => `Too many requests; retry after ${retryAfterSeconds} s`;

/** 429 in the REST facade's error shape, before any procedure runs. */
function sendTooManyRequests(req: Request, res: Response, retryAfterSeconds: number) {
  res.setHeader("Retry-After", String(retryAfterSeconds));
  res.status(429).json(errorBody(requestIdOf(req), 429, "TOO_MANY_REQUESTS", tooManyRequestsMessage(retryAfterSeconds)));
}

/** Whether a request presents a credential (API key, session or device token), valid or not. */
function presentsCredential(headers: IncomingHttpHeaders): boolean {
  return headers.authorization !== undefined || headers["x-api-key"] !== undefined || sessionCookieOf(headers) !== null;
}

function sourceKeyOf(sourceIp: string | null): string {
  return sourceIp ?? "unknown";
}

/**
 * Spends one request of the source address's budget; once spent, the address is blocked in
 * this process until its window ends. Resolves with the seconds to wait when over budget,
 * null otherwise; a failing limiter store lets the request through.
 */
async function spendSourceBudget(services: Services, source: string): Promise<number | null> {
  const { rateLimits, logger } = services;
  try {
    await consume(rateLimits.source, source);
    return null;
  } catch (err) {
    if (err instanceof RateLimited) {
      rateLimits.blockedSources.block(source, err.retryAfterSeconds);
      return err.retryAfterSeconds;
    }
    // A failing limiter store must not take the API down with it.
    logger.warn({ err: (err as Error).message }, "rate limiter unavailable");
    return null;
  }
}

export function rateLimitMiddleware(services: Services) {
  const { config, rateLimits } = services;
  return async (req: Request, res: Response, next: NextFunction) => {
    if (config.RATE_LIMIT_PER_SOURCE <= 0) return next();
    const source = sourceKeyOf(sourceIpOf(req));
    const blockedFor = rateLimits.blockedSources.retryAfter(source);
    if (blockedFor !== null) return sendTooManyRequests(req, res, blockedFor);
    if (presentsCredential(req.headers)) return next(); // budgeted by who it is, or charged when refused
    const wait = await spendSourceBudget(services, source);
    if (wait !== null) return sendTooManyRequests(req, res, wait);
    next();
  };
}

/**
 * A credential that proves no caller (refused, or presented to a public operation, which
 * ignores it) spends its source address's budget; a request without any credential has spent
 * it already, in the middleware. Over budget: a TOO_MANY_REQUESTS TRPCError (429,
 * Retry-After on `res`) replaces the answer, and the address is refused before any work
 * until its window ends.
 */
export async function chargeUnprovenCredential(services: Services, headers: IncomingHttpHeaders, sourceIp: string | null, res: Response | null): Promise<void> {
  if (services.config.RATE_LIMIT_PER_SOURCE <= 0 || !presentsCredential(headers)) return;
  const wait = await spendSourceBudget(services, sourceKeyOf(sourceIp));
  if (wait !== null) throw tooManyRequests(res, wait);
}

function tooManyRequests(res: Response | null, retryAfterSeconds: number, cause?: Error) {
  if (res && !res.headersSent) res.setHeader("Retry-After", String(retryAfterSeconds));
  return new TRPCError({ code: "TOO_MANY_REQUESTS", message: tooManyRequestsMessage(retryAfterSeconds), cause });
}

type Caller = Pick<Principal, "kind" | "apiKeyId" | "userId"> | Pick<DevicePrincipal, "kind" | "deviceId">;

/**
 * Spends one request of an authenticated caller's budget: RATE_LIMIT_PER_CREDENTIAL for an
 * API key or a user (all their sessions), RATE_LIMIT_PER_DEVICE for a device. Over budget: a
 * TOO_MANY_REQUESTS TRPCError (429), with Retry-After set on `res`. A failing limiter store
 * lets the request through.
 */
export async function limitCaller(services: Services, caller: Caller, res: Response | null): Promise<void> {
  const { config, rateLimits } = services;
  const [perMinute, limiter, key] = caller.kind === "device"
    ? [config.RATE_LIMIT_PER_DEVICE, rateLimits.device, caller.deviceId]
    : [config.RATE_LIMIT_PER_CREDENTIAL, rateLimits.credential, caller.kind === "api_key" ? `key:${caller.apiKeyId}` : `user:${caller.userId}`];
  if (perMinute <= 0) return;
  try {
    await consume(limiter, key);
  } catch (err) {
    if (!(err instanceof RateLimited)) {
      services.logger.warn({ err: (err as Error).message }, "rate limiter unavailable");
      return;
    }
    throw tooManyRequests(res, err.retryAfterSeconds, err);
  }
}
