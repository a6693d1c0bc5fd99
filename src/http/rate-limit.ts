// Per-source and per-credential request budgets for the API surfaces (/api/v1, /trpc).
// The credential bucket is keyed by a hash of the presented header, so it applies before any
// database work and a flood of bogus keys is still capped by the source budget.
import type { NextFunction, Request, Response } from "express";
import type { Services } from "../services.js";
import { sha256Hex } from "../lib/crypto.js";
import { consume, RateLimited } from "../lib/rate-limit.js";

export function sendTooManyRequests(res: Response, retryAfterSeconds: number) {
  res.setHeader("Retry-After", String(retryAfterSeconds));
  res.status(429).json({ code: "TOO_MANY_REQUESTS", message: `Too many requests; retry after ${retryAfterSeconds} s` });
}

export function rateLimitMiddleware(services: Services) {
  const { config, rateLimits, logger } = services;
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      if (config.RATE_LIMIT_PER_SOURCE > 0) await consume(rateLimits.source, req.ip ?? "unknown");
      const credential = req.headers["x-api-key"] ?? req.headers.authorization;
      if (config.RATE_LIMIT_PER_CREDENTIAL > 0 && typeof credential === "string" && credential) {
        await consume(rateLimits.credential, sha256Hex(credential).slice(0, 32));
      }
      next();
    } catch (err) {
      if (err instanceof RateLimited) return sendTooManyRequests(res, err.retryAfterSeconds);
      // A failing limiter store must not take the API down with it.
      logger.warn({ err: (err as Error).message }, "rate limiter unavailable");
      next();
    }
  };
}
