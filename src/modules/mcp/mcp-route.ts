// POST /api/v1/mcp: the MCP server over streamable HTTP (docs/mcp.md). A plain express route,
// authenticated like the API (X-API-Key, Authorization: Bearer, or the console's session
// cookie; a refused credential is the API's 401, audited alike) and inside the API's rate
// limits: one request of the caller's budget per HTTP request, as a REST call. A tools/call is
// charged by the procedure it calls, so here it is only refused (429) once the budget is spent.
// The SDK serves the exchange statelessly from a per-request server (server.ts): GET and
// DELETE, the session operations of the 2025 protocol, answer 405; a 2025-era POST is answered
// in the transport's JSON response mode (one JSON body, not an event stream).
import express, { type Request as ExpressRequest, type Response as ExpressResponse, type Router } from "express";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { Services } from "../../services.js";
import { requestInfoOf } from "../../trpc/context.js";
import { AuthFailure, authenticate } from "../../trpc/auth.js";
import { authenticateRequest } from "../../trpc/procedures.js";
import { refuseSpentCaller } from "../../trpc/caller-budgets.js";
import type { Principal } from "../../trpc/principal.js";
import { jsonBodyOf } from "../../http/storable-input.js";
import { sendRestError } from "../../http/error-response.js";
import { errorResponse, type ExtraPaths } from "../../http/docs.js";
import { loadMcpSdk, mcpServerFor, type McpSdk } from "./server.js";

export const MCP_PATH = "/mcp";
const LABEL = "mcp";

/** Request headers the SDK never sees: hop-by-hop ones, the body's length (it is re-encoded) and the credentials. */
const WITHHELD_HEADERS = new Set([
  "authorization", "x-api-key", "cookie", "proxy-authorization",
  "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade", "expect", "content-length", "host",
]);

/** Whether a JSON-RPC body (one message or a batch) calls a tool. */
function callsATool(body: unknown): boolean {
  const messages = Array.isArray(body) ? body : [body];
  return messages.some((m) => typeof m === "object" && m !== null && (m as { method?: unknown }).method === "tools/call");
}

/**
 * The caller, or the API's refusal (401/403, audited, the source's budget charged). A tools/call
 * is not charged here: the procedure it calls authenticates again and charges its request.
 */
async function authenticateCaller(services: Services, req: ExpressRequest, res: ExpressResponse): Promise<Principal> {
  const request = requestInfoOf(req);
  if (callsATool(req.body)) {
    let principal: Principal | null = null;
    try {
      principal = await authenticate(services, req.headers);
    } catch (err) {
      if (!(err instanceof AuthFailure)) throw err;
    }
    if (principal) {
      await refuseSpentCaller(services, principal, res); // over budget: the API's 429, not a tool error
      return principal;
    }
  }
  return authenticateRequest(services, request, req.headers, LABEL, res);
}

/** The web-standard request the SDK serves, its JSON body the one the request boundary read. */
function toWebRequest(req: ExpressRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || WITHHELD_HEADERS.has(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const body = req.body === undefined || req.method === "GET" || req.method === "HEAD" ? undefined : JSON.stringify(req.body);
  return new Request(new URL(req.originalUrl, "http://localhost"), { method: req.method, headers, body, signal });
}

async function sendWebResponse(res: ExpressResponse, answer: Response): Promise<void> {
  res.status(answer.status);
  answer.headers.forEach((value, name) => res.setHeader(name, value));
  if (!answer.body) return void res.end();
  await pipeline(Readable.fromWeb(answer.body as import("node:stream/web").ReadableStream), res);
}

/**
 * A 2025-era POST (no per-request envelope: the `initialize` handshake, or a bare `tools/call`
 * from curl) served as the SDK's stateless fallback would, but with the transport's JSON
 * response mode: the answer is one `application/json` body that `jq` reads, never an event
 * stream (no tool sends anything before its result, so a stream would carry nothing more).
 * The transport still requires the client to accept both media types (406 otherwise).
 */
async function answerAsJson(
  sdk: McpSdk, server: ReturnType<typeof mcpServerFor>, request: Request, parsedBody: unknown, maxRequestBodySize: number, onerror: (err: Error) => void,
): Promise<Response> {
  const transport = new sdk.WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize });
  transport.onerror = onerror;
  await server.connect(transport);
  try {
    return await transport.handleRequest(request, { parsedBody });
  } finally {
    await transport.close();
    await server.close();
  }
}

export function mcpRoutes(services: Services): Router {
  const r = express.Router();
  r.all(MCP_PATH, async (req, res) => {
    const request = requestInfoOf(req);
    const gone = new AbortController();
    res.on("close", () => gone.abort());
    try {
      await authenticateCaller(services, req, res);
      jsonBodyOf(req); // a body that is not JSON: 415
      const sdk = await loadMcpSdk();
      const webRequest = toWebRequest(req, gone.signal);
      const maxRequestBodySize = services.config.BODY_LIMIT_BYTES;
      const onerror = (err: Error) => services.logger.debug({ err: err.message, requestId: request.requestId }, "mcp request refused");
      if (req.method === "POST" && (await sdk.isLegacyRequest(webRequest, req.body, { maxRequestBodySize }))) {
        await sendWebResponse(res, await answerAsJson(sdk, mcpServerFor(sdk, services, req, res), webRequest, req.body, maxRequestBodySize, onerror));
        return;
      }
      const handler = sdk.createMcpHandler(() => mcpServerFor(sdk, services, req, res), { maxRequestBodySize, onerror });
      try {
        await sendWebResponse(res, await handler.fetch(webRequest, { parsedBody: req.body }));
      } finally {
        await handler.close();
      }
    } catch (err) {
      if (res.headersSent) return void res.destroy();
      sendRestError(services, res, request, err, LABEL);
    }
  });
  return r;
}

/** GET and DELETE, the 2025 protocol's session operations: 405 here. */
const sessionOperation = (operationId: string, method: string, what: string) => ({
  operationId,
  tags: ["MCP"],
  summary: `The MCP server's ${method}: 405 (stateless serving keeps no sessions to ${what})`,
  security: [{ ApiKey: [] }, { Bearer: [] }],
  responses: { 405: { description: "Method not allowed" }, 401: errorResponse("Authentication missing or invalid") },
});

export const mcpOpenApiPaths: ExtraPaths = {
  [MCP_PATH]: {
    post: {
      operationId: "mcp-request",
      tags: ["MCP"],
      summary: "The MCP server (Model Context Protocol, streamable HTTP): the API's operations as tools",
      description:
        "One JSON-RPC message (or batch) of the Model Context Protocol per request, served statelessly (docs/mcp.md). Tools are the " +
        "API's operations, named after their procedures (devices_list); read-only ones always, mutating ones only when the service runs " +
        "with MCP_ALLOW_MUTATIONS. Every call runs as the caller (permissions, organization, audit entry, error answer of the REST call); " +
        "a refused call is a tool error holding the API's error body. Counts against the caller's rate limit like any request.",
      security: [{ ApiKey: [] }, { Bearer: [] }],
      requestBody: { required: true, content: { "application/json": { schema: { type: "object", description: "A JSON-RPC 2.0 message of the MCP" } } } },
      responses: {
        200: {
          description: "The JSON-RPC answer (JSON, or Server-Sent Events when the client accepts them and the server streams)",
          content: { "application/json": { schema: { type: "object" } }, "text/event-stream": { schema: { type: "string" } } },
        },
        202: { description: "A notification or response accepted" },
        401: errorResponse("Authentication missing or invalid"),
        415: errorResponse("The body is not JSON"),
        429: errorResponse("Too many requests"),
      },
    },
    get: sessionOperation("mcp-stream", "GET", "stream on"),
    delete: sessionOperation("mcp-end-session", "DELETE", "end"),
  },
};
