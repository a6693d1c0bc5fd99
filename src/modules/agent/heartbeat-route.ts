// POST /api/v1/agent/heartbeat without the REST facade: the heartbeat is the one operation
// every device calls all the time, and under load express routing plus trpc-to-openapi (a
// fetch Request, a tRPC caller and context per call, co-body, response through setHeader)
// cost more CPU than authentication and the database together (docs/benchmarks.md).
//
// What stays the same as every other operation:
// * mounted (src/http/routes.ts) under /api/v1 after the request id, helmet, CORS and the /api/v1 rate limiter,
//   so its security headers, request log and rate limits are those of the REST facade;
// * the body rules of the facade: no body = `{}`, a body must be application/json (415),
//   at most BODY_LIMIT_BYTES (413), valid JSON (400 PARSE_ERROR), no string PostgreSQL cannot
//   store (400): the request boundary (src/http/storable-input.ts) read and checked it; then the device token
//   (401/403, refusals of a known device audited), then the zod schema `heartbeatInput`
//   (400 naming every field in `message` and `issues[].path`);
// * error bodies are the error formatter's shape with the facade's additions
//   (`sendRestError`, src/http/error-response.ts): `{ message, code, data: { code, httpStatus,
//   requestId }, issues? }`, internal errors masked and logged;
// * the handler is the procedure's (`handleHeartbeat`) and the answer is checked against
//   `heartbeatOutput`. The tRPC procedure `agent.heartbeat` stays: it documents this path in
//   openapi.json (no second path item) and serves tRPC clients.
//
// The usual heartbeat is answered by the app's front door (src/http/front-door.ts), which runs
// `heartbeatAnswer` after the same request id, headers, rate limits and request boundary; this
// express route answers the others (no body, gzip, chunked, a CORS origin, tracing on).
import type { Request, RequestHandler, Response } from "express";
import { TRPCError } from "@trpc/server";
import type { Services } from "../../services.js";
import { authenticateDeviceRequest, markDecommissioned } from "../../trpc/device-auth.js";
import { requestInfoOf, type RequestInfo } from "../../trpc/context.js";
import { handleHeartbeat } from "./heartbeat.js";
import { heartbeatInput, heartbeatOutput } from "./schemas.js";
import { jsonBodyOf } from "../../http/storable-input.js";
import { sendJson, sendRestError } from "../../http/error-response.js";

export const AGENT_HEARTBEAT_PATH = "/agent/heartbeat";
/** the tRPC path, as audit entries of refused device tokens name it */
export const HEARTBEAT_PROCEDURE = "agent.heartbeat";

/** The heartbeat after the request boundary: device token, input, the write; the checked answer, or the error to answer. */
export function heartbeatAnswer(services: Services) {
  return async (req: Request, res: Response, request: RequestInfo, body: unknown): Promise<unknown> => {
    // the heartbeat statement re-checks the certificate
    const device = await authenticateDeviceRequest(services, request, req.headers, HEARTBEAT_PROCEDURE, res, { recheck: false });
    const input = heartbeatInput.parse(body ?? {});
    const answer = await handleHeartbeat(services, device, input, request.sourceIp).catch((err: unknown) => {
      markDecommissioned(res, err);
      throw err;
    });
    try {
      return heartbeatOutput.parse(answer);
    } catch (err) {
      // like tRPC's output validation: the caller sees a masked 500
      throw new TRPCError({ code: "INTERNAL_SERVER_ERROR", message: "Output validation failed", cause: err });
    }
  };
}

export function agentHeartbeatRoute(services: Services): RequestHandler {
  const answer = heartbeatAnswer(services);
  return async (req, res) => {
    const request = requestInfoOf(req);
    try {
      sendJson(res, 200, await answer(req, res, request, jsonBodyOf(req)));
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      sendRestError(services, res, request, err, HEARTBEAT_PROCEDURE);
    }
  };
}
