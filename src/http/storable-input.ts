// The request boundary for strings PostgreSQL cannot store (a NUL character, an unpaired
// UTF-16 surrogate; src/lib/unstorable-strings.ts). Mounted once on /api/v1 and /trpc, after
// the rate limiter and the ingest gate, before everything else there (the lean agent route,
// tRPC, the plain routes, the REST facade), it checks what every way in hands to its handlers:
//
// * the path: each segment percent-decoded; a segment that is a parameter of a documented
//   route ("/devices/{id}") and holds a NUL or is not valid UTF-8 answers 400 naming the
//   parameter (`issues[].path: ["id"]`); a bad segment anywhere else names no route: 404;
// * the query string: every key and value (`["search"]`, `["level", 1]` when repeated); on
//   /trpc the `input` parameter is JSON and is checked as the input it is (`["name"]`, or
//   `["0", "name"]` in a batch);
// * a JSON body, read here once (body-parser: size limit, charset, gzip; @hapi/bourne: no
//   "__proto__" keys) and handed on as `req.body`, so no adapter reads it again; every string
//   value and object key is checked. A malformed body answers 400 saying where it breaks
//   (line, column and offset: src/lib/json-syntax.ts).
//
// A refusal is a 400 in the surface's own error shape (the REST facade's validation error, or
// tRPC's envelope with one entry per call of a batch), before authentication, audit, handler
// or any database work, so nothing is stored and nothing is logged but the request line.
// Exception, by declaration only: procedures list their lossy text fields in
// `meta.lossyText` (the agent's log messages, which may carry a process's binary output);
// there the characters become U+FFFD instead (docs/telemetry.md).
import express, { type NextFunction, type Request, type RequestHandler, type Response } from "express";
import { TRPCError } from "@trpc/server";
import bourne from "@hapi/bourne";
import { z } from "zod";
import type { Services } from "../services.js";
import type { Meta } from "../trpc/init.js";
import { requestInfoOf } from "../trpc/context.js";
import {
  findUnstorableString,
  matchesPattern,
  repairUnstorableText,
  unstorableProblemOf,
  type FieldPattern,
  type JsonPath,
} from "../lib/unstorable-strings.js";
import { jsonSyntaxMessage } from "../lib/json-syntax.js";
import { sendRestError, sendTrpcError } from "./error-response.js";
import { DeclaredOperations } from "./declared-operations.js";

const REST_PREFIX = "/api/v1";

/** A documented REST path ("/devices/{id}/logs"), split into segments; `{name}` is a parameter. */
interface PathTemplate {
  segments: string[];
}

const compileTemplate = (path: string): PathTemplate => ({ segments: path.split("/").slice(1) });
const parameterName = (segment: string) => /^\{(.+)\}$/.exec(segment)?.[1];

/** The parameter at `index` of the first template that `segments` (decoded) can match there. */
function parameterAt(templates: PathTemplate[], segments: (string | null)[], index: number): string | undefined {
  for (const { segments: template } of templates) {
    if (template.length !== segments.length) continue;
    const name = parameterName(template[index]);
    if (name && template.every((part, i) => i === index || parameterName(part) !== undefined || part === segments[i])) return name;
  }
  return undefined;
}

type Refusal = { status: 400; path: JsonPath; message: string } | { status: 404 };

function decodeOrNull(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null; // invalid percent-encoding, or bytes that are not UTF-8 ("%ED%A0%80", an encoded surrogate)
  }
}

/** A bad segment of the URL path: 400 naming the route's parameter there, else 404. */
function pathRefusal(pathname: string, templates: PathTemplate[]): Refusal | null {
  const rest = pathname.startsWith(`${REST_PREFIX}/`) ? pathname.slice(REST_PREFIX.length) : null;
  const segments = (rest ?? pathname).split("/").slice(1);
  const decoded = segments.map(decodeOrNull);
  for (const [index, segment] of decoded.entries()) {
    const problem = segment === null ? "is not valid percent-encoded UTF-8" : unstorableProblemOf(segment);
    if (!problem) continue;
    const name = rest !== null ? parameterAt(templates, decoded, index) : undefined;
    return name ? { status: 400, path: [name], message: problem } : { status: 404 };
  }
  return null;
}

/** A bad key or value of the query string; on /trpc the JSON `input` is checked as the input it is. */
function queryRefusal(search: string, trpc: boolean): Refusal | null {
  if (search.length <= 1) return null;
  const params = [...new URLSearchParams(search)];
  const counts = new Map<string, number>();
  for (const [key] of params) counts.set(key, (counts.get(key) ?? 0) + 1);
  const seen = new Map<string, number>();
  for (const [key, value] of params) {
    const occurrence = seen.get(key) ?? 0;
    seen.set(key, occurrence + 1);
    const keyProblem = unstorableProblemOf(key);
    if (keyProblem) return { status: 400, path: [key], message: `the key ${keyProblem}` };
    if (trpc && key === "input") {
      const input = parseJsonOr(value);
      if (input !== undefined) {
        const found = findUnstorableString(input);
        if (found) return { status: 400, path: found.path, message: found.problem };
        continue;
      }
    }
    const problem = unstorableProblemOf(value);
    // a repeated parameter is an array to the REST facade: named by position, as zod names it
    if (problem) return { status: 400, path: counts.get(key)! > 1 ? [key, occurrence] : [key], message: problem };
  }
  return null;
}

function isJson(text: string): boolean {
  return parseJsonOr(text) !== undefined;
}

function parseJsonOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined; // tRPC answers its own parse error
  }
}

/**
 * What the boundary refuses in a request target (path and query) of one of the two surfaces;
 * null when it is fine. Exported for the WebSocket upgrade, which express never sees.
 */
export function requestTargetRefusal(target: string, surface: "rest" | "trpc", templates: PathTemplate[] = []): Refusal | null {
  const queryStart = target.indexOf("?");
  const pathname = queryStart < 0 ? target : target.slice(0, queryStart);
  return pathRefusal(pathname, templates) ?? queryRefusal(queryStart < 0 ? "" : target.slice(queryStart), surface === "trpc");
}

/** The refusal as the error every surface answers with: a validation error naming the field, or not found. */
export function refusalError(refusal: Refusal): TRPCError {
  if (refusal.status === 404) return new TRPCError({ code: "NOT_FOUND", message: "Not found" });
  const issue = { code: "custom" as const, path: refusal.path, message: refusal.message, input: undefined };
  return new TRPCError({ code: "BAD_REQUEST", message: "Input validation failed", cause: new z.ZodRealError([issue]) });
}

/**
 * A refusal in a tRPC batch as each call answers it: the call whose input holds the string
 * gets the validation error naming the field in its own input (`["description"]`, as zod
 * would), every other call a 400 saying which call made the batch fail.
 */
function refusalOfCall(req: Request, refusal: Refusal): (call: number) => TRPCError {
  const batch = new URL(req.originalUrl, "http://localhost").searchParams.get("batch") === "1";
  const owner = batch && refusal.status === 400 && /^\d+$/.test(String(refusal.path[0])) ? Number(refusal.path[0]) : null;
  if (owner === null || refusal.status !== 400) return () => refusalError(refusal);
  const own = refusalError({ ...refusal, path: refusal.path.slice(1) });
  const others = new TRPCError({ code: "BAD_REQUEST", message: `Not run: call ${owner} of this batch holds a string that cannot be stored` });
  return (call) => (call === owner ? own : others);
}

/** The lossy text fields of this request's input, as patterns over its body. */
function lossyPatternsOf(req: Request, lossy: DeclaredOperations<FieldPattern[]>): FieldPattern[] {
  // A batch body is { "0": input, "1": input, ... }: each call's fields under its index.
  return lossy.of(req).flatMap(({ call, value }) => (call === null ? value : value.map((pattern) => [String(call), ...pattern])));
}

const hasBody = (req: Request) => Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;

/** The request's body failure as the adapters name it (same codes and messages as trpc-to-openapi). */
function bodyFailure(err: unknown): unknown {
  switch ((err as { type?: string }).type) {
    case "entity.too.large":
      return new TRPCError({ code: "PAYLOAD_TOO_LARGE", message: "Request body too large" });
    case "charset.unsupported":
    case "encoding.unsupported":
      return new TRPCError({ code: "UNSUPPORTED_MEDIA_TYPE", message: (err as Error).message });
    case "request.aborted":
    case "request.size.invalid":
      return new TRPCError({ code: "BAD_REQUEST", message: "The request body ended before its announced length" });
    default:
      return err;
  }
}

/**
 * The body the boundary read (undefined when the request has none); a 415 TRPCError when the
 * request carries a body that is not JSON. For the routes that take a body without an adapter.
 */
export function jsonBodyOf(req: Request): unknown {
  if (hasBody(req) && !req.is("application/json")) throw new TRPCError({ code: "UNSUPPORTED_MEDIA_TYPE", message: "Send the body as application/json" });
  return req.body;
}

/** The body text as the boundary parses it: bourne (no "__proto__" keys); a PARSE_ERROR saying where it breaks. */
function parsedBody(text: string): unknown {
  try {
    return text === "" ? undefined : bourne.parse(text, { protoAction: "error" });
  } catch {
    // bourne parses with JSON.parse, then refuses a "__proto__" key in what parsed
    const message = isJson(text) ? 'The body holds a "__proto__" key, which is refused' : jsonSyntaxMessage(text);
    throw new TRPCError({ code: "PARSE_ERROR", message });
  }
}

const RAW_BODY = Symbol("rawBody");

/** The bytes of the JSON body exactly as sent (a signature over the body is verified on them), while the request lasts. */
export function rawBodyOf(req: Request): Buffer | undefined {
  return (req as Request & { [RAW_BODY]?: Buffer })[RAW_BODY];
}

function keepRawBody(req: Request, _res: Response, buf: Buffer) {
  (req as Request & { [RAW_BODY]?: Buffer })[RAW_BODY] = buf;
}

/**
 * The boundary's reading of a UTF-8 JSON body already read (by the front door, front-door.ts,
 * for an operation that declares no lossy text): the text body-parser would have decoded (a
 * byte order mark dropped), the same parser, the same refusal of a string that cannot be
 * stored; kept as `req.body` and its bytes as `rawBodyOf(req)`. Throws the error the boundary
 * answers with. Text decoded from UTF-8 holds no unpaired surrogate and JSON no raw NUL, so
 * only a `\u` escape can bring either: a body without one needs no walk.
 */
export function storableJsonBodyOf(req: Request, bytes: Buffer): unknown {
  (req as Request & { [RAW_BODY]?: Buffer })[RAW_BODY] = bytes;
  const text = bytes.toString("utf8");
  const body = parsedBody(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  const found = text.includes("\\u") ? findUnstorableString(body) : null;
  if (found) throw refusalError({ status: 400, path: found.path, message: found.problem });
  req.body = body;
  return body;
}

export function storableInput(services: Services, routes: { restPaths: string[]; procedures: [string, Meta][] }): RequestHandler {
  const templates = routes.restPaths.map(compileTemplate);
  const lossy = new DeclaredOperations(routes.procedures, (meta) => (meta.lossyText?.length ? meta.lossyText : undefined));
  // body-parser reads the text (size limit, charset, gzip/deflate/br); bourne parses it,
  // refusing "__proto__" keys as the REST facade's reader (co-body) did.
  const readText = express.text({ type: () => true, limit: services.config.BODY_LIMIT_BYTES, verify: keepRawBody });
  return (req: Request, res: Response, next: NextFunction) => {
    const surface = req.baseUrl === "/trpc" ? "trpc" : "rest";
    const answer = (errorOfCall: (call: number) => unknown) => {
      const request = requestInfoOf(req);
      if (surface === "rest") sendRestError(services, res, request, errorOfCall(0));
      else sendTrpcError(services, req, res, request, errorOfCall);
    };
    const refuse = (refusal: Refusal) => answer(surface === "trpc" ? refusalOfCall(req, refusal) : () => refusalError(refusal));

    const target = requestTargetRefusal(req.originalUrl, surface, templates);
    if (target) return refuse(target);
    if (!hasBody(req) || !req.is("application/json")) return next(); // none, or not JSON: the route answers (415)
    readText(req, res, (err?: unknown) => {
      if (err) return answer(() => bodyFailure(err));
      try {
        req.body = parsedBody(req.body as string);
      } catch (parseError) {
        return answer(() => parseError);
      }
      const patterns = lossyPatternsOf(req, lossy);
      const found = findUnstorableString(req.body, patterns.length ? (path) => patterns.some((p) => matchesPattern(path, p)) : undefined);
      if (found) return refuse({ status: 400, path: found.path, message: found.problem });
      for (const pattern of patterns) repairUnstorableText(req.body, pattern);
      // tRPC takes a string body as its JSON text (any other value it serializes, but a
      // string it would take for the text itself).
      if (surface === "trpc" && req.body !== undefined) req.body = JSON.stringify(req.body);
      next();
    });
  };
}
