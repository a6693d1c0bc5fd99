// The MCP tools, derived once from the router's procedures (docs/mcp.md): every procedure with
// a REST operation is a tool, its name the procedure's path ("devices.list" -> devices_list),
// its description the operation's summary and description, its input schema the procedure's
// zod input as JSON Schema, its annotations from the procedure type and REST method (a query
// reads; DELETE destroys; PUT and DELETE are idempotent), refined by `meta.mcp`. Left out:
// procedures marked `mcp: false`, subscriptions, the public operations (sign-in, token
// exchange, invitation links: an MCP caller has signed in already) and the device operations
// under /agent (a device's certificate, not a person's key, calls them).
import { z } from "zod";
import type { McpHints, Meta } from "../../trpc/init.js";
import { appRouter, type AppRouter } from "../../trpc/router.js";

export interface ToolAnnotations {
  title?: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint?: boolean;
}

export interface McpTool {
  /** the tool's name: the procedure path with "_" for "." */
  name: string;
  /** the procedure it calls ("devices.list") */
  procedure: string;
  /** a mutation: offered only when MCP_ALLOW_MUTATIONS is set */
  mutation: boolean;
  title?: string;
  description: string;
  /** JSON Schema of the arguments (always an object schema) */
  inputSchema: Record<string, unknown>;
  annotations: ToolAnnotations;
}

interface ProcedureDef {
  type: "query" | "mutation" | "subscription";
  inputs: z.ZodType[];
  meta?: Meta;
}

const EMPTY_OBJECT = { type: "object", properties: {} } as const;

/** The tool name of a procedure path: MCP clients accept [A-Za-z0-9_-]{1,64}. */
export const toolNameOf = (procedure: string) => procedure.replace(/\./g, "_");

/** The arguments' JSON Schema: what a caller sends (io "input"), as an object schema. */
function inputSchemaOf(inputs: z.ZodType[]): Record<string, unknown> {
  if (inputs.length === 0) return { ...EMPTY_OBJECT };
  const schema = inputs.length === 1 ? inputs[0] : inputs.reduce((a, b) => z.intersection(a, b));
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
  delete json.$schema;
  return json.type === "object" ? json : { ...EMPTY_OBJECT };
}

function isOffered(def: ProcedureDef): boolean {
  const meta = def.meta;
  if (!meta?.openapi || meta.mcp === false || def.type === "subscription") return false;
  if (meta.openapi.protect === false) return false; // public: sign-in, token exchange, invitation links
  return !meta.openapi.path.startsWith("/agent/"); // the device's own operations
}

function annotationsOf(def: ProcedureDef, hints: McpHints): ToolAnnotations {
  const method = def.meta?.openapi?.method;
  const query = def.type === "query";
  const readOnly = hints.readOnly ?? query;
  return {
    ...(def.meta?.openapi?.summary ? { title: def.meta.openapi.summary } : {}),
    readOnlyHint: readOnly,
    destructiveHint: readOnly ? false : hints.destructive ?? method === "DELETE",
    idempotentHint: hints.idempotent ?? (readOnly || method === "PUT" || method === "DELETE"),
    ...(hints.openWorld !== undefined ? { openWorldHint: hints.openWorld } : {}),
  };
}

function descriptionOf(def: ProcedureDef): string {
  const openapi = def.meta!.openapi!;
  const rest = `REST: ${openapi.method} /api/v1${openapi.path}`;
  return [openapi.summary, openapi.description, rest].filter(Boolean).join("\n\n");
}

/** The tools of a router's procedures, in router order. */
export function mcpTools(router: AppRouter = appRouter): McpTool[] {
  const procedures = router._def.procedures as unknown as Record<string, { _def: ProcedureDef }>;
  return Object.entries(procedures)
    .filter(([, p]) => isOffered(p._def))
    .map(([path, { _def: def }]) => {
      const hints = (def.meta?.mcp || {}) as McpHints;
      return {
        name: toolNameOf(path),
        procedure: path,
        mutation: def.type === "mutation",
        title: def.meta?.openapi?.summary,
        description: descriptionOf(def),
        inputSchema: inputSchemaOf(def.inputs),
        annotations: annotationsOf(def, hints),
      };
    });
}
