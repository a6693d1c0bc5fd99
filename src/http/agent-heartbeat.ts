// POST /api/v1/agent/heartbeat without the REST facade: the heartbeat is the one operation
// every device calls all the time, and under load express routing plus trpc-to-openapi (a
// fetch Request, a tRPC caller and context per call, co-body, response through setHeader)
// cost more CPU than authentication and the database together (docs/benchmarks.md).
//
// What stays the same as every other operation:
// * mounted under /api/v1 after the request id, helmet, CORS and the /api/v1 rate limiter,
//   so its security headers, request log and rate limits are those of the REST facade;
// * the body rules of the facade: no body = `{}`, a body must be application/json (415),
//   at most BODY_LIMIT_BYTES (413), valid JSON (400 PARSE_ERROR); then the device token
//   (401/403, refusals of a known device audited), then the zod schema `heartbeatInput`
//   (400 "Input validation failed" naming every field in `data.issues[].path`);
// * error bodies are the error formatter's shape with the facade's additions (same
//   function trpc-to-openapi calls): `{ message, code, data: { code, httpStatus, requestId,
//   issues? }, issues? }`, internal errors masked and logged;
// * the handler is the procedure's (`handleHeartbeat`) and the answer is checked against
//   `heartbeatOutput`. The tRPC procedure `agent.heartbeat` stays: it documents this path in
//   openapi.json (no second path item) and serves tRPC clients.
import type { Request, RequestHandler, Response } from "express";
import { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";
import { getErrorShape } from "@trpc/server/unstable-core-do-not-import";
import { ZodError } from "zod";
import type { Services } from "../services.js";
import { authenticateDeviceRequest } from "../trpc/device-auth.js";
import { requestInfoOf, type Context, type RequestInfo } from "../trpc/context.js";
import { translateDatabaseError } from "../trpc/errors.js";
import { t } from "../trpc/init.js";
import { handleHeartbeat } from "../modules/agent/heartbeat.js";
import { heartbeatInput, heartbeatOutput } from "../modules/agent/schemas.js";

export const AGENT_HEARTBEAT_PATH = "/agent/heartbeat";
/** the tRPC path, as audit entries of refused device tokens name it */
const PROCEDURE_PATH = "agent.heartbeat";

class BodyFailure extends Error {
  constructor(readonly code: "PARSE_ERROR" | "UNSUPPORTED_MEDIA_TYPE" | "PAYLOAD_TOO_LARGE", message: string) {
    super(message);
  }
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;

/** The JSON body, or undefined when there is none; the REST facade's rules and messages. */
function readJsonBody(req: Request, limit: number): Promise<unknown> {
  const length = Number(req.headers["content-length"] ?? 0);
  const chunked = req.headers["transfer-encoding"] !== undefined;
  if (!(length > 0) && !chunked) return Promise.resolve(undefined);
  const type = req.headers["content-type"];
  if (!type || !JSON_TYPE.test(type)) {
    return Promise.reject(new BodyFailure("UNSUPPORTED_MEDIA_TYPE", "Send the body as application/json"));
  }
  if (length > limit) return Promise.reject(new BodyFailure("PAYLOAD_TOO_LARGE", "Request body too large"));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.off("data", onData);
        req.resume(); // discard the rest
        reject(new BodyFailure("PAYLOAD_TOO_LARGE", "Request body too large"));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("error", reject);
    req.once("end", () => {
      if (size > limit) return;
      const text = chunks.length === 1 ? chunks[0].toString("utf8") : Buffer.concat(chunks).toString("utf8");
      if (text.trim() === "") return resolve(undefined);
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new BodyFailure("PARSE_ERROR", "Failed to parse request body"));
      }
    });
  });
}

function send(res: Response, status: number, body: unknown) {
  const json = JSON.stringify(body);
  // One write: status line, the headers set so far (request id, helmet) and the body.
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(json) });
  res.end(json);
}

/** The REST facade's error body for any failure (see trpc-to-openapi's node-http adapter, which this mirrors). */
function sendError(services: Services, res: Response, request: RequestInfo, err: unknown) {
  let error: TRPCError;
  if (err instanceof TRPCError) error = err;
  else if (err instanceof BodyFailure) error = new TRPCError({ code: err.code, message: err.message });
  else if (err instanceof ZodError) error = new TRPCError({ code: "BAD_REQUEST", message: "Input validation failed", cause: err });
  else error = translateDatabaseError(err) ?? new TRPCError({ code: "INTERNAL_SERVER_ERROR", cause: err instanceof Error ? err : new Error(String(err)) });
  // The formatter logs internal errors and reads the request id from this context.
  const ctx = { services, request } as unknown as Context;
  const shape = getErrorShape({ config: t._config, error, type: "mutation", path: PROCEDURE_PATH, input: undefined, ctx });
  const validation = error.code === "BAD_REQUEST" && error.cause instanceof ZodError ? error.cause : null;
  send(res, getHTTPStatusCodeFromError(error), {
    ...shape,
    message: validation ? "Input validation failed" : shape.message,
    code: error.code,
    ...(validation ? { issues: validation.issues } : {}),
  });
}

export function agentHeartbeatRoute(services: Services): RequestHandler {
  const limit = services.config.BODY_LIMIT_BYTES;
  return async (req, res) => {
    const request = requestInfoOf(req);
    try {
      const body = await readJsonBody(req, limit);
      // the heartbeat statement re-checks the certificate
      const device = await authenticateDeviceRequest(services, request, req.headers, PROCEDURE_PATH, res, { recheck: false });
      const input = heartbeatInput.parse(body ?? {});
      const answer = await handleHeartbeat(services, device, input, request.sourceIp);
      let output;
      try {
        output = heartbeatOutput.parse(answer);
      } catch (err) {
        // like tRPC's output validation: the caller sees a masked 500
        throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "Output validation failed", cause: err });
      }
      send(res, 200, output);
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      sendError(services, res, request, err);
    }
  };
}
