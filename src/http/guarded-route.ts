// A plain express route (downloads, streams) behind the same gate as the procedures:
// authenticateRequest() and denyAccess() from src/trpc/procedures.ts (refusals and denials
// are audited alike), can() for permissions, zod for the JSON body, and the REST facade's
// error body { code, message, data: { code, httpStatus, requestId }, issues? } (sendRestError).
import type { Request, RequestHandler, Response } from "express";
import type { z } from "zod";
import type { Services } from "../services.js";
import { assertSuperAdmin, authenticateRequest, denyAccess } from "../trpc/procedures.js";
import { requestInfoOf, type RequestInfo } from "../trpc/context.js";
import type { Permission } from "../trpc/permissions.js";
import { can, type Principal } from "../trpc/principal.js";
import { jsonBodyOf } from "./storable-input.js";
import { sendRestError } from "./error-response.js";

export interface RouteAccess {
  permission?: Permission;
  superAdmin?: boolean;
}

export interface RouteContext<I> {
  principal: Principal;
  request: RequestInfo;
  input: I;
  req: Request;
  res: Response;
}

/**
 * The gate for routes that answer on their own (streams): the caller, or a TRPCError
 * (401/403, audited like the procedures' refusals).
 */
export async function authorizeRequest(services: Services, req: Request, access: RouteAccess, label: string): Promise<Principal> {
  const request = requestInfoOf(req);
  const principal = await authenticateRequest(services, request, req.headers, label, req.res ?? null);
  const gate = { services, request };
  if (access.superAdmin) await assertSuperAdmin(gate, principal, label);
  if (access.permission && !can(principal, access.permission)) await denyAccess(gate, principal, label, `Missing permission ${access.permission}`);
  return principal;
}

/** A JSON-body route: authentication, then access, then input validation, then the handler. */
export function guardedJsonRoute<S extends z.ZodType>(
  services: Services,
  route: { label: string; access: RouteAccess; body: S },
  handler: (ctx: RouteContext<z.infer<S>>) => Promise<void>,
): RequestHandler {
  return async (req, res) => {
    const request = requestInfoOf(req);
    try {
      const principal = await authorizeRequest(services, req, route.access, route.label);
      const body = jsonBodyOf(req); // read, size-limited and checked by the request boundary
      const input = route.body.parse(body ?? {});
      await handler({ principal, request, input, req, res });
    } catch (err) {
      sendRouteError(services, res, request, err);
    }
  };
}

function sendRouteError(services: Services, res: Response, request: RequestInfo, err: unknown) {
  if (res.headersSent) {
    // Mid-stream failure: the client must not mistake a truncated file for a complete one.
    services.logger.error({ err: (err as Error)?.message, requestId: request.requestId }, "stream failed");
    res.destroy(err instanceof Error ? err : undefined);
    return;
  }
  sendRestError(services, res, request, err);
}
