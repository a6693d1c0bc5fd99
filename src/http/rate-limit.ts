// The door of the API surfaces (/api/v1, /trpc): the per-source-address budget (per minute)
// for requests that present no credential (sign-in, enrollment, invitations), checked before
// any work. Requests with a credential pass on to authentication, which spends the caller's
// budget or, for a credential that proves no caller, the address's
// (src/trpc/caller-budgets.ts). An address that has spent its budget is refused (429) here,
// before any work, whatever it presents, until its window ends.
import type { NextFunction, Request, Response } from "express";
import type { Services } from "../services.js";
import { requestIdOf, sourceIpOf } from "../trpc/context.js";
import { errorBody } from "../trpc/errors.js";
import { presentsCredential, sourceKeyOf, spendSourceBudget, tooManyRequestsMessage } from "../trpc/caller-budgets.js";

/** 429 in the REST facade's error shape, before any procedure runs. */
function sendTooManyRequests(req: Request, res: Response, retryAfterSeconds: number) {
  res.setHeader("Retry-After", String(retryAfterSeconds));
  res.status(429).json(errorBody(requestIdOf(req), 429, "TOO_MANY_REQUESTS", tooManyRequestsMessage(retryAfterSeconds)));
}

/** Whether the limiter would refuse this request at once (its source address has spent its budget). */
export function sourceBlocked(services: Services, req: Request): boolean {
  return services.config.RATE_LIMIT_PER_SOURCE > 0 && services.rateLimits.blockedSources.retryAfter(sourceKeyOf(sourceIpOf(req))) !== null;
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
