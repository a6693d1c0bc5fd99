// What the CLI's generated commands are made of: the service's OpenAPI document (every tRPC
// procedure's metadata: method, path, summary, zod input as JSON schema, tag) compiled into a
// small manifest of operations. `compileManifest` runs at build time (npm run openapi:snapshot
// writes cli/operations.json next to test/fixtures/openapi.json) and at run time for
// `fleet api sync`, which compiles the document a server serves now.
//
// Naming: the operationId `deployments-rollout-promote` is the command `fleet deployments
// rollout-promote`; `apiKeys-list` is `fleet api-keys list`. The first segment is the group (the
// router's module), the rest the command. Path parameters are positional arguments in path
// order; query parameters and the top-level fields of a JSON body are flags.

/** A JSON schema, as far as the compiler reads it. */
export interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
  default?: unknown;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  format?: string;
  $ref?: string;
}

/**
 * How a value is written on the command line:
 * string, integer, number, boolean: one value (a boolean flag takes no value);
 * list: repeatable or comma-separated scalars; map: repeatable `key=value`;
 * json: a JSON text (unions and nested structures; dotted flags cover objects with known fields).
 */
export type FieldKind = "string" | "integer" | "number" | "boolean" | "list" | "map" | "json";

export interface Field {
  /** the name in the API (query parameter or body property; dotted for a nested property) */
  name: string;
  /** the flag: --kebab-case of the name */
  flag: string;
  kind: FieldKind;
  /** for a list: the kind of its items */
  items?: "string" | "integer" | "number" | "boolean";
  required: boolean;
  description?: string;
  enum?: string[];
  default?: unknown;
}

export interface Operation {
  id: string;
  group: string;
  command: string;
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** relative to the API root (/api/v1) */
  path: string;
  summary: string;
  description?: string;
  /** the path parameters, in path order: positional arguments */
  args: Array<{ name: string; description?: string }>;
  query: Field[];
  /** the top-level and dotted fields of a JSON body; null: no JSON body */
  body: Field[] | null;
  /** a page of `{ items, total, hasMore }` with limit/offset: --all pages through it */
  paged: boolean;
  /** what the answer is: json, or a stream/file (event-stream, CSV, PEM, ...) printed as it comes */
  answers: "json" | "stream";
  authenticated: boolean;
}

export interface Manifest {
  /** the document's info.version */
  version: string;
  operations: Operation[];
}

const kebab = (text: string) => text.replace(/([a-z0-9])([A-Z])/g, "$1-$2").replace(/[_\s]+/g, "-").toLowerCase();

function typesOf(schema: JsonSchema): string[] {
  const own = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const variants = [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].flatMap(typesOf);
  return [...new Set([...own, ...variants])].filter((t) => t !== "null");
}

function enumOf(schema: JsonSchema): string[] | undefined {
  if (schema.enum) return schema.enum.filter((v): v is string => typeof v === "string");
  const variants = schema.anyOf ?? schema.oneOf;
  if (variants && variants.every((v) => v.enum || v.const !== undefined || v.type === "null")) {
    const values = variants.flatMap((v) => (v.enum ?? (v.const !== undefined ? [v.const] : [])));
    return values.filter((v): v is string => typeof v === "string");
  }
  return undefined;
}

const SCALARS = new Set(["string", "integer", "number", "boolean"]);

function scalarKind(types: string[]): Field["items"] | undefined {
  if (types.length !== 1) return types.every((t) => t === "integer" || t === "number") && types.length ? "number" : undefined;
  return SCALARS.has(types[0]) ? (types[0] as Field["items"]) : undefined;
}

function isMap(schema: JsonSchema): boolean {
  if (schema.properties || typeof schema.additionalProperties !== "object") return false;
  const values = typesOf(schema.additionalProperties);
  return values.length > 0 && values.every((t) => SCALARS.has(t));
}

function describe(schema: JsonSchema): Pick<Field, "description" | "enum" | "default"> {
  const out: Pick<Field, "description" | "enum" | "default"> = {};
  if (schema.description) out.description = schema.description;
  const values = enumOf(schema) ?? (schema.items ? enumOf(schema.items) : undefined);
  if (values?.length) out.enum = values;
  if (schema.default !== undefined && (typeof schema.default !== "object" || schema.default === null)) out.default = schema.default;
  return out;
}

/** The field (and, for an object with known fields, its dotted fields) a schema property becomes. */
function fieldsOf(name: string, schema: JsonSchema, required: boolean, depth = 0): Field[] {
  const flag = name.split(".").map(kebab).join(".");
  const types = typesOf(schema);
  const scalar = scalarKind(types);
  const info = describe(schema);
  if (scalar) return [{ name, flag, kind: scalar, required, ...info }];
  if (types.length === 1 && types[0] === "array" && schema.items) {
    const item = scalarKind(typesOf(schema.items));
    if (item) return [{ name, flag, kind: "list", items: item, required, ...info }];
    return [{ name, flag, kind: "json", required, ...info }];
  }
  if (types.length === 1 && types[0] === "object" && isMap(schema)) return [{ name, flag, kind: "map", required, ...info }];
  const own: Field = { name, flag, kind: "json", required, ...info };
  // an object with known fields: each scalar field is a dotted flag too (--retry.max-attempts 3)
  if (depth === 0 && types.length === 1 && types[0] === "object" && schema.properties && !schema.anyOf && !schema.oneOf) {
    const inner = Object.entries(schema.properties).flatMap(([key, sub]) => fieldsOf(`${name}.${key}`, sub, false, depth + 1)).filter((f) => f.kind !== "json");
    return [own, ...inner];
  }
  return [own];
}

interface OpenApiParameter {
  in: string;
  name: string;
  required?: boolean;
  description?: string;
  schema?: JsonSchema;
}

interface OpenApiOperation {
  operationId?: string;
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  parameters?: OpenApiParameter[];
  requestBody?: { content?: Record<string, { schema?: JsonSchema }> };
  responses?: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
}

export interface OpenApiDocument {
  info?: { version?: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** The manifest of every operation of the document that has an operationId. */
export function compileManifest(doc: OpenApiDocument): Manifest {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op?.operationId) continue;
      const [group, ...rest] = op.operationId.split("-");
      const params = op.parameters ?? [];
      const args = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => {
        const param = params.find((p) => p.in === "path" && p.name === m[1]);
        return { name: m[1], ...(param?.description ? { description: param.description } : {}) };
      });
      const query = params.filter((p) => p.in === "query").flatMap((p) => fieldsOf(p.name, p.schema ?? { type: "string" }, p.required ?? false));
      const jsonBody = op.requestBody?.content?.["application/json"]?.schema;
      const body = jsonBody
        ? Object.entries(jsonBody.properties ?? {}).flatMap(([name, schema]) => fieldsOf(name, schema, (jsonBody.required ?? []).includes(name)))
        : null;
      const ok = op.responses?.["200"]?.content ?? op.responses?.["201"]?.content ?? {};
      const okSchema = ok["application/json"]?.schema;
      const answers = ok["application/json"] || Object.keys(ok).length === 0 ? "json" : "stream";
      const paged = Boolean(okSchema?.properties?.items && okSchema.properties.total && query.some((q) => q.name === "limit") && query.some((q) => q.name === "offset"));
      operations.push({
        id: op.operationId,
        group: kebab(group),
        command: rest.length ? rest.map(kebab).join("-") : "call",
        method: method.toUpperCase() as Operation["method"],
        path,
        summary: op.summary ?? op.operationId,
        ...(op.description ? { description: op.description } : {}),
        args,
        query,
        body,
        paged,
        answers,
        authenticated: Boolean(op.security?.length),
      });
    }
  }
  return { version: doc.info?.version ?? "unknown", operations };
}

/** The text cli/operations.json holds for a document (one operation per line: small diffs). */
export function manifestText(manifest: Manifest): string {
  return `{\n  "version": ${JSON.stringify(manifest.version)},\n  "operations": [\n${manifest.operations.map((op) => `    ${JSON.stringify(op)}`).join(",\n")}\n  ]\n}\n`;
}
