// The REST facade: the procedures under /api/v1 by their `meta.openapi` method and path,
// mounted last (it never calls next() for a path it does not serve: 404). It is
// trpc-to-openapi's node-http adapter (3.3, `createOpenApiNodeHttpHandler`), step for step,
// with what that adapter spent per call and never used taken out, and two corrections made
// once for every operation:
//
// * the adapter built a Fetch `Request` (headers copied, a body stream, an AbortController and
//   a `close` listener) on every call only to hand its `signal` to createContext, which does
//   not read it; it looked the route up by testing every path template of the method in turn
//   (now: the templates whose segment count and first segment can match are tested, in the
//   same order); it recomputed each procedure's input schema, its unwrapping and the zod
//   coercion of its fields on every call (now once per procedure, at its first call, when the
//   adapter did it first); and it called the procedure through a caller proxy per call (now
//   the procedure itself, with the options the caller passes it). Profiles of GET
//   /roles/permissions: docs/benchmarks.md, "Management reads".
// * path parameters are percent-decoded before the procedure sees them
//   (`/organizations/by-slug/my%20org` is the slug "my org", `/devices/{id}/labels/env%2Fstage`
//   the key "env/stage"), as express decodes `req.params`; the adapter hands them over as they
//   are in the URL (upstream: mcampa/trpc-to-openapi#166). The request boundary
//   (storable-input.ts) has already refused a segment that does not decode.
// * error bodies are the documented `{ message, code, data, issues? }` (restErrorBody): the
//   adapter replaces the message of every validation error by "Input validation failed" and
//   adds zod's raw issues beside the formatter's `data.issues`.
//
// What stays as it was: the body is what the request boundary read (`req.body`), or none; a
// POST/PUT/PATCH needs a `Content-Type` starting with application/json (415); the query
// string is express's `req.query`, a parameter given once is a value and an array field takes
// a single value as an array of one; number, boolean, bigint and date fields are coerced
// (zod's coerce, set on the schema as the adapter sets it); the success status is the
// procedure's (`answerCreated`, `meta.successStatus`); every error goes through the error
// formatter with `onError` noting the request id. Authentication, permissions, tenant
// scoping, input and output validation and audit are the procedures' own, unchanged.
import type { Request, RequestHandler, Response } from "express";
import { TRPCError, type AnyProcedure } from "@trpc/server";
import { getErrorShape } from "@trpc/server/unstable-core-do-not-import";
import { generateOpenApiDocument, getInputOutputParsers, unwrapZodType, coerceSchema, normalizePath, getPathRegExp } from "trpc-to-openapi";
import { ZodArray } from "zod/v4";
import type { Services } from "../services.js";
import { procedureMetas, type AppRouter } from "../trpc/router.js";
import { createContextFactory, noteRequestOfError, successStatusOf } from "../trpc/context.js";
import { restErrorBody } from "./error-response.js";

type Input = Record<string, unknown> | undefined;

/** trpc-to-openapi's TRPC_ERROR_CODE_HTTP_STATUS */
const HTTP_STATUS: Record<string, number> = {
  PARSE_ERROR: 400, BAD_REQUEST: 400, NOT_FOUND: 404, INTERNAL_SERVER_ERROR: 500, UNAUTHORIZED: 401, FORBIDDEN: 403,
  TIMEOUT: 408, CONFLICT: 409, CLIENT_CLOSED_REQUEST: 499, PRECONDITION_FAILED: 412, PAYLOAD_TOO_LARGE: 413,
  METHOD_NOT_SUPPORTED: 405, UNSUPPORTED_MEDIA_TYPE: 415, TOO_MANY_REQUESTS: 429, UNPROCESSABLE_CONTENT: 422,
  NOT_IMPLEMENTED: 501, BAD_GATEWAY: 502, SERVICE_UNAVAILABLE: 503, GATEWAY_TIMEOUT: 504, PAYMENT_REQUIRED: 402,
  PRECONDITION_REQUIRED: 428,
};

function decodeOr(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/** trpc-to-openapi's getErrorFromUnknown */
function errorFromUnknown(cause: unknown): TRPCError {
  if (cause instanceof Error && cause.name === "TRPCError") return cause as TRPCError;
  const error = new TRPCError({ message: "Internal server error", code: "INTERNAL_SERVER_ERROR", cause: cause instanceof Error ? cause : undefined });
  if (cause instanceof Error && cause.stack) error.stack = cause.stack;
  return error;
}

/** A documented operation: its template and what its calls need, computed at its first call. */
interface Operation {
  path: string;
  procedure: AnyProcedure;
  type: "query" | "mutation";
  re: RegExp;
  /** the template's segment count and first segment (lowercase), when its static parts are plain words: a cheap pre-test */
  segments: number | null;
  first: string | null;
  prepared?: { takesInput: boolean; arrayKeys: string[] };
}

const PLAIN_TEMPLATE = /^(\/([A-Za-z0-9_-]+|\{[^}/]+\}))*$/;

/** The operations by method, in the adapter's order (the router's procedures). */
function operationTable(router: AppRouter): Map<string, Operation[]> {
  const table = new Map<string, Operation[]>();
  for (const [path, procedure] of Object.entries(router._def.procedures as unknown as Record<string, AnyProcedure>)) {
    const openapi = (procedure._def.meta as { openapi?: { method: string; path: string; enabled?: boolean } } | undefined)?.openapi;
    if (!openapi || openapi.enabled === false) continue;
    const type = procedure._def.type;
    if (type === "subscription") continue;
    const template = normalizePath(openapi.path);
    const plain = PLAIN_TEMPLATE.test(template);
    const parts = template.split("/");
    const first = plain && parts[1] !== undefined && !parts[1].startsWith("{") ? parts[1].toLowerCase() : null;
    const list = table.get(openapi.method) ?? [];
    list.push({ path, procedure, type, re: getPathRegExp(template), segments: plain ? parts.length : null, first });
    table.set(openapi.method, list);
  }
  return table;
}

function findOperation(table: Map<string, Operation[]>, method: string, path: string): { operation: Operation; pathInput: Record<string, string> } | undefined {
  const list = table.get(method);
  if (!list) return undefined;
  const parts = path.split("/");
  const first = (parts[1] ?? "").toLowerCase();
  for (const operation of list) {
    if (operation.segments !== null && (operation.segments !== parts.length || (operation.first !== null && operation.first !== first))) continue;
    const match = operation.re.exec(path);
    if (match) return { operation, pathInput: { ...match.groups } };
  }
  return undefined;
}

/** The adapter's per-procedure work, done once: the input schema unwrapped, its fields coerced, which of them are arrays. */
function prepare(operation: Operation): NonNullable<Operation["prepared"]> {
  if (operation.prepared) return operation.prepared;
  const { inputParser } = getInputOutputParsers(operation.procedure as Parameters<typeof getInputOutputParsers>[0]);
  const schema = unwrapZodType(inputParser, true) as { _zod?: { def?: { type?: string } }; shape?: Record<string, unknown> };
  const kind = schema?._zod?.def?.type;
  const takesInput = !(kind === "void" || kind === "undefined" || kind === "never");
  const arrayKeys: string[] = [];
  if (kind === "object") {
    for (const [key, shape] of Object.entries(schema.shape ?? {})) {
      const s = shape as { _zod?: { def?: { type?: string } }; unwrap?: () => unknown };
      if (shape instanceof ZodArray || (s._zod?.def?.type === "optional" && s.unwrap!() instanceof ZodArray)) arrayKeys.push(key);
    }
    coerceSchema(schema as Parameters<typeof coerceSchema>[0]);
  }
  operation.prepared = { takesInput, arrayKeys };
  return operation.prepared;
}

/** A path the WHATWG URL parser gives back unchanged (no dot segment, nothing it would encode). */
const PLAIN_PATH = /^\/[A-Za-z0-9_~!$&'()*+,;=:@/%-]*$/;

function pathnameOf(url: string): string {
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  if (PLAIN_PATH.test(path) && !/%2e/i.test(path)) return path;
  return new URL(url.startsWith("/") ? `http://127.0.0.1${url}` : url).pathname;
}

/** trpc-to-openapi's getQuery over express's `req.query`: a parameter given once is its value. */
function queryOf(req: Request): Record<string, unknown> {
  const query: Record<string, unknown> = {};
  const parsed = req.query as Record<string, unknown>;
  for (const key of Object.keys(parsed)) {
    const value = parsed[key];
    if (value) query[key] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  }
  return query;
}

/** The body the request boundary read (storable-input.ts), or none (the adapter's getBody, which reads no body itself here). */
function readBody(req: Request): unknown {
  if ("body" in req) return req.body;
  (req as { body?: unknown }).body = undefined;
  return undefined;
}

/**
 * Routers the OpenAPI generator accepted in this process. The check is a whole document's
 * generation (about 1 s of CPU); a test process creates an app per test file on the same router.
 */
const CHECKED_ROUTERS = new WeakSet<object>();

export function restFacade(services: Services, router: AppRouter): RequestHandler {
  // as the adapter does outside production: a router the OpenAPI generator refuses fails at start
  if (process.env.NODE_ENV !== "production" && !CHECKED_ROUTERS.has(router)) {
    generateOpenApiDocument(router, { title: "", version: "", baseUrl: "" });
    CHECKED_ROUTERS.add(router);
  }
  const table = operationTable(router);
  const statuses = new Map(procedureMetas(router).flatMap(([path, meta]) => (meta.successStatus ? [[path, meta.successStatus] as const] : [])));
  const createContext = createContextFactory(services);
  const send = (res: Response, status: number, body: unknown) => {
    res.statusCode = status;
    res.setHeader("Content-Type", "application/json");
    res.end(JSON.stringify(body));
  };

  return async (req, res) => {
    const method = req.method;
    let input: Input;
    let ctx: ReturnType<typeof createContext> | undefined;
    const found = findOperation(table, method, normalizePath(pathnameOf(req.url)));
    const operation = found?.operation;
    try {
      if (!found || !operation) {
        if (method === "HEAD") return send(res, 204, undefined);
        throw new TRPCError({ message: "Not found", code: "NOT_FOUND" });
      }
      const contentType = req.headers["content-type"];
      const useBody = method !== "GET" && method !== "DELETE";
      if (useBody && !contentType?.startsWith("application/json")) {
        throw new TRPCError({ code: "UNSUPPORTED_MEDIA_TYPE", message: contentType ? `Unsupported content-type "${contentType}` : "Missing content-type header" });
      }
      const { takesInput, arrayKeys } = prepare(operation);
      if (takesInput) {
        // the body the request boundary read (storable-input.ts), or none
        const body = useBody ? readBody(req) : queryOf(req);
        const pathInput = found.pathInput;
        for (const name of Object.keys(pathInput)) pathInput[name] = decodeOr(pathInput[name]);
        input = { ...(body as object), ...pathInput };
        if (!useBody) for (const key of arrayKeys) if (input[key] !== undefined && !Array.isArray(input[key])) input[key] = [input[key]];
      }
      ctx = createContext({ req, res });
      const callInput = input;
      const data = await operation.procedure({ path: operation.path, getRawInput: async () => callInput, ctx, type: operation.type, signal: undefined, batchIndex: 0 });
      send(res, successStatusOf(ctx) ?? statuses.get(operation.path) ?? 200, data);
    } catch (cause) {
      const error = errorFromUnknown(cause);
      noteRequestOfError({ error, req });
      const shape = getErrorShape({ config: router._def._config, error, type: operation?.type ?? "unknown", path: operation?.path, input, ctx });
      const validation = error.code === "BAD_REQUEST" && error.cause instanceof Error && error.cause.name === "ZodError";
      const message = validation ? "Input validation failed" : (shape?.message ?? error.message ?? "An error occurred");
      send(res, HTTP_STATUS[error.code] ?? 500, restErrorBody({ ...shape, message } as Parameters<typeof restErrorBody>[0]));
    }
  };
}
