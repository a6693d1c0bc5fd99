// Request budgets for the API surfaces (/api/v1, /trpc). Two counts, both per minute:
// * per source address, before anything else (a flood of bogus credentials is capped here,
//   before any database work);
// * per caller once authenticated (`limitCaller`): the API key, the user across all their
//   sessions and tokens, or the device whatever token it signs; a fresh token or a second
//   sign-in does not buy a fresh budget.
import type { NextFunction, Request, Response } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../services.js";
import { consume, RateLimited } from "../lib/rate-limit.js";
import type { Principal } from "../trpc/principal.js";
import type { DevicePrincipal } from "../trpc/device-auth.js";

export function sendTooManyRequests(res: Response, retryAfterSeconds: number) {
  res.setHeader("Retry-After", String(retryAfterSeconds));
  res.status(429).json({ code: "TOO_MANY_REQUESTS", message: `Too many requests; retry after ${retryAfterSeconds} s` });
}

export function rateLimitMiddleware(services: Services) {
  const { config, rateLimits, logger } = services;
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (config.RATE_LIMIT_PER_SOURCE > 0) await consume(rateLimits.source, req.ip ?? "unknown");
      next();
    } catch (err) {
      if (err instanceof RateLimited) return sendTooManyRequests(res, err.retryAfterSeconds);
      // A failing limiter store must not take the API down with it.
      logger.warn({ err: (err as Error).message }, "rate limiter unavailable");
      next();
    }
  };
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
    if (res && !res.headersSent) res.setHeader("Retry-After", String(err.retryAfterSeconds));
    throw new TRPCError({ code: "TOO_MANY_REQUESTS", message: `Too many requests; retry after ${err.retryAfterSeconds} s`, cause: err });
  }
}
