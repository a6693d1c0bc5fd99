// Error answers written outside the two adapters, in the very shapes the adapters give: the
// REST facade's (`restErrorBody`, to which the facade's own answers are rewritten too,
// src/http/rest-facade.ts) and tRPC's own envelope (`{ error }`, or one per call of a batch). Both run the error through
// the error formatter (src/trpc/init.ts), so the message, the masking of internal errors, the
// log line and `data.requestId` are the same as everywhere else. Used by the lean agent route
// and by the request boundary (storable-input.ts).
import type { Request, Response } from "express";
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { getErrorShape, transformTRPCResponse } from "@trpc/server/unstable-core-do-not-import";
import { ZodError } from "zod";
import type { Services } from "../services.js";
import type { Context, RequestInfo } from "../trpc/context.js";
import { invalidInputMessage, translateDatabaseError, type InputIssue } from "../trpc/errors.js";
import { t } from "../trpc/init.js";

/** Any failure as the TRPCError the adapters would have made of it. */
function asTrpcError(err: unknown): TRPCError {
  if (err instanceof TRPCError) return err;
  if (err instanceof ZodError) return new TRPCError({ code: "BAD_REQUEST", message: "Invalid input", cause: err });
  return translateDatabaseError(err) ?? new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: err instanceof Error ? err : new Error(String(err)) });
}

function shapeOf(services: Services, request: RequestInfo, error: TRPCError, type: "query" | "mutation", path: string | undefined) {
  // The formatter logs internal errors and reads the request id from this context.
  const ctx = { services, request } as unknown as Context;
  return getErrorShape({ config: t._config, error, type, path, input: undefined, ctx });
}

/** One write: status line, the headers set so far (request id, helmet) and the body. */
export function sendJson(res: Response, status: number, body: unknown) {
  const json = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}

/** What the error formatter (src/trpc/init.ts) makes of every error. */
interface ErrorShape {
  message: string;
  data: { code: string; httpStatus: number; requestId?: string; issues?: InputIssue[] };
}

/**
 * The REST body of an error: `{ message, code, data: { code, httpStatus, requestId }, issues? }`,
 * the invalid fields once, at the top, and named in the message. tRPC clients read the same
 * issues in `data.issues`, where the formatter puts them.
 */
export function restErrorBody(shape: ErrorShape) {
  const { issues, ...data } = shape.data;
  return { message: issues ? invalidInputMessage(issues) : shape.message, code: data.code, data, ...(issues ? { issues } : {}) };
}

/** The REST facade's error answer, for errors written outside it. */
export function restErrorAnswer(services: Services, request: RequestInfo, err: unknown, procedurePath?: string): { status: number; body: object } {
  const error = asTrpcError(err);
  const shape = shapeOf(services, request, error, "mutation", procedurePath) as ErrorShape;
  return { status: getHTTPStatusCodeFromError(error), body: restErrorBody(shape) };
}

export function sendRestError(services: Services, res: Response, request: RequestInfo, err: unknown, procedurePath?: string) {
  const { status, body } = restErrorAnswer(services, request, err, procedurePath);
  sendJson(res, status, body);
}

/**
 * tRPC's answer to a request refused as a whole: `{ error }`, or for a batch one `{ error }`
 * per call, each the error `errorOfCall` gives for that call (by its index in the batch).
 */
export function sendTrpcError(services: Services, req: Request, res: Response, request: RequestInfo, errorOfCall: (call: number) => unknown) {
  const url = new URL(req.originalUrl, "http://localhost");
  const procedures = decodeURIComponentOr(url.pathname.replace(/^\/trpc\/?/, ""));
  const type = req.method === "GET" ? "query" : "mutation";
  const errors = (url.searchParams.get("batch") === "1" ? procedures.split(",") : [procedures]).map((path, call) => ({ path, error: asTrpcError(errorOfCall(call)) }));
  const entries = errors.map(({ path, error }) => transformTRPCResponse(t._config, { error: shapeOf(services, request, error, type, path) }));
  // as tRPC does: the calls' status when they agree, 207 otherwise
  const statuses = new Set(errors.map(({ error }) => getHTTPStatusCodeFromError(error)));
  const status = statuses.size === 1 ? [...statuses][0] : 207;
  sendJson(res, status, url.searchParams.get("batch") === "1" ? entries : entries[0]);
}

function decodeURIComponentOr(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
