// The request budgets that authentication spends (all per minute; the limiters are
// src/lib/rate-limit.ts, the express middleware that guards the door is src/http/rate-limit.ts):
// * per caller once authenticated (`limitCaller`): the API key, the user across all their
//   sessions and tokens, or the device whatever token it signs; a fresh token or a second
//   sign-in does not buy a fresh budget;
// * per source address for credentials that prove no caller (`chargeUnprovenCredential`:
//   refused, or sent to a public operation). Requests with a valid credential do not spend it:
//   a fleet behind one NAT or carrier-grade NAT address is thousands of callers, each with its
//   own budget, not one. An address that has spent its budget is refused (429) before any
//   work, whatever it presents, until its window ends.
import type { Response } from "express";
import type { IncomingHttpHeaders } from "node:http";
import { TRPCError } from "@trpc/server";
import type { Services } from "../services.js";
import { consume, isBlocked, RateLimited } from "../lib/rate-limit.js";
import { sessionCookieOf } from "./session-cookie.js";
import type { Principal } from "./principal.js";
import type { DevicePrincipal } from "./device-auth.js";

export const tooManyRequestsMessage = (retryAfterSeconds: number) => `Too many requests; retry after ${retryAfterSeconds} s`;

/** Whether a request presents a credential (API key, session or device token), valid or not. */
export function presentsCredential(headers: IncomingHttpHeaders): boolean {
  return headers.authorization !== undefined || headers["x-api-key"] !== undefined || sessionCookieOf(headers) !== null;
}

/** The key of a source address's budget. */
export function sourceKeyOf(sourceIp: string | null): string {
  return sourceIp ?? "unknown";
}

/**
 * Spends one request of the source address's budget; once spent, the address is blocked in
 * this process until its window ends. Resolves with the seconds to wait when over budget,
 * null otherwise; a failing limiter store lets the request through.
 */
export async function spendSourceBudget(services: Services, source: string): Promise<number | null> {
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

/** The caller's budget: requests per minute, its limiter, and the caller's key there. */
function budgetOf({ config, rateLimits }: Services, caller: Caller) {
  return caller.kind === "device"
    ? [config.RATE_LIMIT_PER_DEVICE, rateLimits.device, caller.deviceId] as const
    : [config.RATE_LIMIT_PER_CREDENTIAL, rateLimits.credential, caller.kind === "api_key" ? `key:${caller.apiKeyId}` : `user:${caller.userId}`] as const;
}

/**
 * 429 (Retry-After on `res`) when the caller's budget is already spent, without spending a
 * request: for a route whose request is charged later by the procedure it calls (the MCP
 * server's tool calls). A failing limiter store lets the request through.
 */
export async function refuseSpentCaller(services: Services, caller: Caller, res: Response | null): Promise<void> {
  const [perMinute, limiter, key] = budgetOf(services, caller);
  if (perMinute <= 0) return;
  const wait = await isBlocked(limiter, key).catch(() => null);
  if (wait !== null) throw tooManyRequests(res, wait);
}

/**
 * Spends one request of an authenticated caller's budget: RATE_LIMIT_PER_CREDENTIAL for an
 * API key or a user (all their sessions), RATE_LIMIT_PER_DEVICE for a device. Over budget: a
 * TOO_MANY_REQUESTS TRPCError (429), with Retry-After set on `res`. A failing limiter store
 * lets the request through.
 */
export async function limitCaller(services: Services, caller: Caller, res: Response | null): Promise<void> {
  const [perMinute, limiter, key] = budgetOf(services, caller);
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
