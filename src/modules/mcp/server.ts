// One MCP server per HTTP request (the SDK's per-request factory, docs/mcp.md): the tools of
// tools.ts, each call made through tRPC's server-side caller with the context the REST facade
// builds from the same express request, so authentication, permissions, tenant scoping, the
// audit entry and the error answer are the REST call's. Arguments are handed to the procedure
// as they came: the procedure validates them, and a refusal reads as the REST answer would.
import type { Request, Response } from "express";
import type { CallToolResult, McpServer, StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import type { Services } from "../../services.js";
import { onFirstUse } from "../../lib/on-first-use.js";
import { createContextFactory } from "../../trpc/context.js";
import { appRouter } from "../../trpc/router.js";
import { restErrorAnswer } from "../../http/error-response.js";
import { mcpTools, type McpTool } from "./tools.js";

export const MCP_SERVER_NAME = "fleet-manager";
const MCP_SERVER_VERSION = "1.0.0";

const INSTRUCTIONS =
  "Tools of the Fleet Manager API, one per operation, named after its procedure (devices_list, deployments_get). " +
  "Each call runs as the caller's API key or session, within its permissions and organization; a refusal is the API's " +
  "error body ({ status, code, message }). Lists page with limit and offset.";

type Args = Record<string, unknown> | undefined;

let cachedTools: McpTool[] | null = null;
/** The tools of the service's router, derived once per process. */
export function serviceTools(): McpTool[] {
  cachedTools ??= mcpTools();
  return cachedTools;
}

/**
 * The tool's JSON Schema for tools/list, and a validation that passes the arguments on as they
 * are: the procedure validates them (the API's 400, naming each field).
 */
function procedureInput(json: Record<string, unknown>): StandardSchemaWithJSON<Args> {
  return {
    "~standard": {
      version: 1,
      vendor: "fleet-manager",
      validate: (value: unknown) => ({ value: value as Args }),
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}

const text = (value: unknown) => JSON.stringify(value ?? null);
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** Calls the procedure as the request's caller; its answer or its refusal as a tool result. */
export async function callProcedure(services: Services, req: Request, res: Response, tool: McpTool, args: Args): Promise<CallToolResult> {
  const ctx = createContextFactory(services)({ req, res });
  const caller = appRouter.createCaller(ctx) as unknown as Record<string, unknown>;
  const procedure = tool.procedure.split(".").reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], caller) as (input: unknown) => Promise<unknown>;
  try {
    const data = await procedure(args ?? {});
    return { content: [{ type: "text", text: text(data) }], ...(isRecord(data) ? { structuredContent: data } : {}) };
  } catch (err) {
    const { status, body } = restErrorAnswer(services, ctx.request, err, tool.procedure);
    const answer = { status, ...body };
    return { isError: true, content: [{ type: "text", text: text(answer) }], structuredContent: answer };
  }
}

export type McpSdk = typeof import("@modelcontextprotocol/server");

/**
 * The MCP SDK, loaded on the first MCP request: a service nobody asks over MCP does not hold it
 * (~5 MB of heap, with its schemas; docs/benchmarks.md, "What the embedded default holds").
 */
export const loadMcpSdk: () => Promise<McpSdk> = onFirstUse(() => import("@modelcontextprotocol/server"));

/**
 * The MCP server for one request: every tool registered; the mutating ones disabled (neither
 * listed nor callable) unless MCP_ALLOW_MUTATIONS is set.
 */
export function mcpServerFor({ McpServer }: McpSdk, services: Services, req: Request, res: Response): McpServer {
  const server = new McpServer({ name: MCP_SERVER_NAME, version: MCP_SERVER_VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  for (const tool of serviceTools()) {
    const registered = server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: procedureInput(tool.inputSchema), annotations: tool.annotations },
      (args: Args) => callProcedure(services, req, res, tool, args),
    );
    if (tool.mutation && !services.config.MCP_ALLOW_MUTATIONS) registered.disable();
  }
  return server;
}
