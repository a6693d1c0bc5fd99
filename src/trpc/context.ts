// Per-request context. The principal is filled in by the authentication middleware; `db`
// is the Prisma client, or the interactive transaction of a mutation.
import type { Request, Response } from "express";
import type { DbTx } from "../db/client.js";
import type { Services } from "../services.js";
import type { Principal } from "./principal.js";

export interface RequestInfo {
  requestId: string;
  sourceIp: string | null;
  userAgent: string | null;
}

export interface Context {
  services: Services;
  db: DbTx;
  request: RequestInfo;
  headers: Request["headers"];
  res: Response | null;
  principal: Principal | null;
}

export function requestInfoOf(req: Request): RequestInfo {
  return {
    requestId: requestIdOf(req),
    sourceIp: sourceIpOf(req),
    userAgent: typeof req.headers["user-agent"] === "string" ? req.headers["user-agent"].slice(0, 500) : null,
  };
}

/** The caller's address: the client's as reported by trusted proxies (TRUST_PROXY_HOPS), else the peer's. */
export function sourceIpOf(req: Request): string | null {
  return req.ip ?? req.socket.remoteAddress ?? null;
}

export function requestIdOf(req: Request): string {
  return (req as Request & { id?: string }).id ?? "unknown";
}

// Errors raised before a request has its context (unknown path, wrong content type, unreadable
// body) reach the error formatter without one; the adapters' onError, which sees the request,
// notes its id here so that those error bodies carry it too.
const requestIdsOfEarlyErrors = new WeakMap<object, string>();

/** The adapters' `onError`: remembers the request id of an error the formatter may see without a context. */
export function noteRequestOfError({ error, req }: { error: object; req: Request }): void {
  requestIdsOfEarlyErrors.set(error, requestIdOf(req));
}

export function requestIdOfError(error: object): string | undefined {
  return requestIdsOfEarlyErrors.get(error);
}

export function createContextFactory(services: Services) {
  return ({ req, res }: { req: Request; res: Response }): Context => ({
    services,
    db: services.prisma,
    request: requestInfoOf(req),
    headers: req.headers,
    res,
    principal: null,
  });
}

/**
 * A success status that depends on the outcome (a PUT that created the resource answers 201,
 * one that replaced it 200): read by the REST adapter's responseMeta (src/app.ts) before the
 * procedure's fixed `meta.successStatus`. Only a successful answer uses it.
 */
export function answerCreated(ctx: { res: Response | null }): void {
  if (ctx.res) ctx.res.locals.successStatus = 201;
}

export function successStatusOf(ctx: unknown): number | undefined {
  const status = (ctx as Partial<Context> | undefined)?.res?.locals?.successStatus;
  return typeof status === "number" ? status : undefined;
}
