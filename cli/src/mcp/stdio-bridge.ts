// `fleet mcp`: the service's MCP server (POST /api/v1/mcp, docs/mcp.md) served on stdio, for
// assistants that start their MCP servers as subprocesses. The tools are defined once, on the
// service: the bridge lists them there at start, offers them as they are (name, description,
// input schema, annotations), and forwards every call with the caller's credential, so
// permissions, organization, audit entries and refusals are the service's. `readOnly` narrows
// what the service offers to the read-only tools; nothing widens it.
import type { Readable, Writable } from "node:stream";
import { Client, StreamableHTTPClientTransport, type FetchLike, type Tool } from "@modelcontextprotocol/client";
import { McpServer, type CallToolResult, type StandardSchemaWithJSON } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";

export interface StdioBridgeOptions {
  /** the service's address (http://fleet.lan:3000) or its MCP endpoint (.../api/v1/mcp) */
  url: string;
  /** an API key (sent as X-API-Key) */
  apiKey?: string;
  /**
   * or an access token (Authorization: Bearer); a function is asked before every request, so
   * that a long-running bridge follows a session whose token the caller refreshes
   */
  token?: string | (() => string | Promise<string>);
  /** offer only the read-only tools, whatever the service offers */
  readOnly?: boolean;
  /** where the MCP messages come in and go out (default: the process's stdin and stdout) */
  stdin?: Readable;
  stdout?: Writable;
  /** the client name the service sees in its logs (default fleet-cli) */
  clientName?: string;
  version?: string;
}

export interface StdioBridge {
  /** the tools offered on stdio */
  tools: Tool[];
  /** resolves when stdin ends (the assistant went away) and the bridge has closed */
  closed: Promise<void>;
  close(): Promise<void>;
}

/** A failure to reach or use the service's MCP endpoint at start (the CLI's exit code reads `status`). */
export class McpBridgeError extends Error {
  constructor(message: string, readonly status?: number) {
    super(message);
    this.name = "McpBridgeError";
  }
}

const MCP_PATH = "/api/v1/mcp";

/** The endpoint for a service address or an endpoint URL. */
export function mcpEndpoint(url: string): URL {
  const endpoint = new URL(url);
  if (!endpoint.pathname.endsWith(MCP_PATH)) endpoint.pathname = endpoint.pathname.replace(/\/+$/, "") + MCP_PATH;
  return endpoint;
}

type Args = Record<string, unknown> | undefined;

/** The service's JSON Schema, advertised as it is; the service validates the arguments. */
function serviceInput(json: Record<string, unknown>): StandardSchemaWithJSON<Args> {
  return {
    "~standard": {
      version: 1,
      vendor: "fleet-cli",
      validate: (value: unknown) => ({ value: value as Args }),
      jsonSchema: { input: () => json, output: () => json },
    },
  };
}

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown; data?: { status?: unknown } } | null)?.status ?? (err as { data?: { status?: unknown } } | null)?.data?.status;
  return typeof status === "number" ? status : undefined;
}

/** fetch with the credential in every request's headers (the token asked for each time). */
function fetchWithCredential({ apiKey, token }: StdioBridgeOptions): FetchLike {
  return async (url, init) => {
    const headers = new Headers(init?.headers);
    if (apiKey) headers.set("x-api-key", apiKey);
    const bearer = typeof token === "function" ? await token() : token;
    if (bearer) headers.set("authorization", `Bearer ${bearer}`);
    return fetch(url, { ...init, headers });
  };
}

async function connect(options: StdioBridgeOptions): Promise<Client> {
  const client = new Client({ name: options.clientName ?? "fleet-cli", version: options.version ?? "1.0.0" });
  const transport = new StreamableHTTPClientTransport(mcpEndpoint(options.url), { fetch: fetchWithCredential(options) });
  try {
    await client.connect(transport);
    return client;
  } catch (err) {
    const status = statusOf(err);
    const reason = status === 401 ? "the service refused the credential (401)" : status === 403 ? "the credential may not use the service (403)" : (err as Error).message;
    throw new McpBridgeError(`Cannot open the MCP server at ${mcpEndpoint(options.url)}: ${reason}`, status);
  }
}

/** Serves the service's MCP tools on stdio until stdin ends. Rejects with McpBridgeError when the service cannot be used. */
export async function runStdioBridge(options: StdioBridgeOptions): Promise<StdioBridge> {
  const upstream = await connect(options);
  let tools: Tool[];
  try {
    ({ tools } = await upstream.listTools());
  } catch (err) {
    await upstream.close().catch(() => undefined);
    throw new McpBridgeError(`Cannot list the service's MCP tools: ${(err as Error).message}`, statusOf(err));
  }
  if (options.readOnly) tools = tools.filter((tool) => tool.annotations?.readOnlyHint === true);
  const server = upstream.getServerVersion();
  const instructions = upstream.getInstructions();

  const forward = async (name: string, args: Args): Promise<CallToolResult> => {
    try {
      return (await upstream.callTool({ name, arguments: args ?? {} })) as CallToolResult;
    } catch (err) {
      return { isError: true, content: [{ type: "text", text: `The service did not answer the call: ${(err as Error).message}` }] };
    }
  };
  const factory = () => {
    const local = new McpServer(
      { name: server?.name ?? "fleet-manager", version: server?.version ?? "1.0.0" },
      { capabilities: { tools: {} }, ...(instructions ? { instructions } : {}) },
    );
    for (const tool of tools) {
      local.registerTool(
        tool.name,
        { title: tool.title, description: tool.description, inputSchema: serviceInput(tool.inputSchema as Record<string, unknown>), annotations: tool.annotations },
        (args: Args) => forward(tool.name, args),
      );
    }
    return local;
  };

  const stdin = options.stdin ?? process.stdin;
  const handle = serveStdio(factory, { transport: new StdioServerTransport(stdin, options.stdout ?? process.stdout) });
  let closing: Promise<void> | null = null;
  const close = () => (closing ??= (async () => {
    await handle.close().catch(() => undefined);
    await upstream.close().catch(() => undefined);
  })());
  const closed = new Promise<void>((resolve) => {
    const end = () => void close().then(resolve);
    stdin.once("end", end);
    stdin.once("close", end);
  });
  return { tools, closed, close };
}
