// The REST facade: trpc-to-openapi's express adapter over the procedures, mounted last under
// /api/v1 (it never calls next() for a path it serves), with two corrections of the adapter
// (3.3) made here, once for every operation:
//
// * path parameters are percent-decoded before the procedure sees them
//   (`/organizations/by-slug/my%20org` is the slug "my org", `/devices/{id}/labels/env%2Fstage`
//   the key "env/stage"), as express decodes `req.params`; the adapter hands them over as they
//   are in the URL (upstream: mcampa/trpc-to-openapi#166). The request boundary
//   (storable-input.ts) has already refused a segment that does not decode.
// * error bodies are the documented `{ message, code, data, issues? }` (restErrorBody): the
//   adapter replaces the message of every validation error by "Input validation failed" and
//   adds zod's raw issues beside the formatter's `data.issues`.
import type { NextFunction, Request, RequestHandler, Response } from "express";
import { createOpenApiExpressMiddleware } from "trpc-to-openapi";
import type { Services } from "../services.js";
import { procedureMetas, type AppRouter } from "../trpc/router.js";
import { createContextFactory, noteRequestOfError, successStatusOf } from "../trpc/context.js";
import { restErrorBody } from "./error-response.js";

type Caller = ReturnType<AppRouter["createCaller"]>;
type Input = Record<string, unknown> | undefined;

function decodeOr(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** The router as the adapter gets it: its callers decode the path parameters of each procedure's input. */
function decodingPathParameters(router: AppRouter): AppRouter {
  const parameters = new Map(procedureMetas(router).flatMap(([path, meta]) => {
    const names = [...(meta.openapi?.path ?? "").matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    return names.length ? [[path, names] as const] : [];
  }));
  const decoded = (input: Input, names: readonly string[]): Input => {
    if (!input || typeof input !== "object") return input;
    const out = { ...input };
    for (const name of names) if (typeof out[name] === "string") out[name] = decodeOr(out[name]);
    return out;
  };
  // The adapter walks the caller by the procedure's path ("devices.get") and calls it with the input.
  const at = (caller: Caller, path: string[]): unknown =>
    new Proxy(() => undefined, {
      get: (_target, key) => (typeof key === "string" ? at(caller, [...path, key]) : undefined),
      apply: (_target, _self, [input]: [Input]) => {
        const procedure = path.reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], caller) as (input: Input) => unknown;
        const names = parameters.get(path.join("."));
        return procedure(names ? decoded(input, names) : input);
      },
    });
  return { ...router, createCaller: ((ctx: Parameters<AppRouter["createCaller"]>[0]) => at(router.createCaller(ctx), [])) as AppRouter["createCaller"] };
}

/** Error bodies the adapter writes, rewritten to the documented body; only while the adapter answers. */
function documentedErrorBodies(req: Request, res: Response, next: NextFunction, handler: RequestHandler) {
  const end = res.end;
  const restore = () => void (res.end = end);
  res.end = function (this: Response, chunk?: unknown, ...rest: unknown[]) {
    restore();
    if (res.statusCode >= 400 && typeof chunk === "string") {
      try {
        chunk = JSON.stringify(restErrorBody(JSON.parse(chunk)));
      } catch {
        // not the adapter's JSON: sent as it is
      }
    }
    return (end as (...args: unknown[]) => Response).call(this, chunk, ...rest);
  } as Response["end"];
  return handler(req, res, (err?: unknown) => {
    restore();
    next(err);
  });
}

export function restFacade(services: Services, router: AppRouter): RequestHandler {
  const statuses = new Map(procedureMetas(router).flatMap(([path, meta]) => (meta.successStatus ? [[path, meta.successStatus] as const] : [])));
  const handler = createOpenApiExpressMiddleware({
    router: decodingPathParameters(router),
    createContext: createContextFactory(services),
    maxBodySize: services.config.BODY_LIMIT_BYTES,
    onError: noteRequestOfError,
    responseMeta: ({ paths, errors, ctx }) => {
      if (errors.length > 0 || !paths || paths.length !== 1) return {};
      const status = successStatusOf(ctx) ?? statuses.get(paths[0]);
      return status ? { status } : {};
    },
  }) as unknown as RequestHandler;
  return (req, res, next) => documentedErrorBodies(req, res, next, handler);
}
