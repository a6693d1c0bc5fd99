// The OpenAPI document and a human docs page (Swagger UI from the npm package, no CDN).
import express, { type Router } from "express";
import { createRequire } from "node:module";
import path from "node:path";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { procedureMetas, type AppRouter } from "../trpc/router.js";

const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve("swagger-ui-dist/package.json"));

/**
 * The error body of every operation (the error formatter, src/trpc/init.ts, builds it;
 * src/http/rest-facade.ts puts the invalid fields at the top), declared once as
 * `components.schemas.Error`.
 */
const ERROR_SCHEMA = {
  type: "object",
  required: ["code", "message", "data"],
  properties: {
    code: { type: "string", description: "The error code, e.g. BAD_REQUEST, NOT_FOUND, CONFLICT, TOO_MANY_REQUESTS" },
    message: { type: "string", description: "What went wrong; never internal details. Invalid input names every invalid field: `Invalid input: commonName: required; limit: must be a number`" },
    issues: {
      type: "array",
      description: "Invalid input only: one entry per invalid field, `path` naming it",
      items: {
        type: "object",
        required: ["path", "message", "code"],
        properties: { path: { type: "array", items: { type: "string" } }, message: { type: "string" }, code: { type: "string" } },
      },
    },
    data: {
      type: "object",
      required: ["code", "httpStatus"],
      properties: {
        code: { type: "string" },
        httpStatus: { type: "integer" },
        requestId: { type: "string", description: "The X-Request-Id of the request, for support and logs" },
      },
    },
  },
} as const;

/** An error response of the document: its description and the one error body. */
export const errorResponse = (description: string) => ({
  description,
  content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

/** Extra path items for the plain express routes (downloads, streams), merged into the document. */
export type ExtraPaths = Record<string, Record<string, unknown>>;

export function buildOpenApiDocument(appRouter: AppRouter, extraPaths: ExtraPaths = {}) {
  const document = generateOpenApiDocument(appRouter, {
    title: "Fleet Manager API",
    description:
      "Multi-tenant management of edge device fleets. Authenticate with `X-API-Key: <key>` or " +
      "`Authorization: Bearer <access token>` from `POST /api/v1/auth/login`. Errors are JSON: " +
      "`{ code, message, issues?, data: { requestId } }`; `message` names every invalid field.",
    version: "1.0.0",
    baseUrl: "/api/v1",
    securitySchemes: {
      ApiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
      Bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
    },
    paths: extraPaths as never,
  });
  documentSuccessStatuses(appRouter, document);
  documentErrors(appRouter, document);
  return document;
}

type Document = ReturnType<typeof generateOpenApiDocument>;
type Responses = Record<string, unknown>;

/** What each error status means when an operation says nothing more specific. */
const ERROR_MEANINGS: Record<string, string> = {
  400: "Invalid input: `issues` names every invalid field",
  401: "Authentication missing or invalid",
  403: "Authenticated, but missing the permission (or the organization is suspended)",
  404: "Not found, or another organization's (tenants never see each other's resources)",
  409: "Conflict with the current state or a unique name; the message says which",
  429: "Request budget spent (per API key, user, device or source address); retry after `Retry-After` seconds",
  500: "Internal server error (masked; logged with the request id)",
  503: "The database (or another service this operation needs) is unavailable; retry later",
};
const WRITES = new Set(["post", "put", "patch", "delete"]);

/**
 * trpc-to-openapi declares its own error body (without `data`) and a fixed set of statuses
 * (no 404 for POST, never 409, 429 or 503), with one description per status shared by all
 * operations. Here every error response gets the body the service sends and its own
 * description, and every operation the statuses it can answer: 429, 500 and 503 everywhere
 * (every /api/v1 request is rate-limited, can fail, and needs the database), 404 wherever the
 * path names a resource, 409 on writes (unique names and state checks). Operations that list
 * their own `errorResponses` keep exactly those, with their descriptions, plus 429, 500 and 503.
 */
function documentErrors(appRouter: AppRouter, document: Document) {
  const own = new Map<string, Record<string, string>>();
  for (const [, meta] of procedureMetas(appRouter)) {
    const listed = meta?.openapi?.errorResponses;
    if (!meta?.openapi || !listed) continue;
    const descriptions = Array.isArray(listed) ? Object.fromEntries(listed.map((status) => [String(status), ERROR_MEANINGS[status] ?? "Error"])) : listed;
    own.set(`${meta.openapi.method.toLowerCase()} ${meta.openapi.path}`, descriptions as Record<string, string>);
  }
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, operation] of Object.entries(item as Record<string, { responses?: Responses }>)) {
      const responses = operation?.responses;
      if (!responses || typeof responses !== "object") continue;
      const listed = own.get(`${method} ${path}`);
      const statuses = new Set(Object.keys(responses).filter((status) => Number(status) >= 400));
      if (!listed) {
        if (path.includes("{")) statuses.add("404");
        if (WRITES.has(method)) statuses.add("409");
      }
      statuses.add("429").add("500").add("503");
      // Successes first, then the errors in order of status.
      const successes = Object.entries(responses).filter(([status]) => !statuses.has(status));
      const previous = { ...responses };
      for (const status of Object.keys(responses)) delete responses[status];
      Object.assign(responses, Object.fromEntries(successes));
      for (const status of [...statuses].sort()) {
        const existing = previous[status] as { description?: string; content?: Record<string, { schema?: { $ref?: string } }> } | undefined;
        // trpc-to-openapi's descriptions are one per status for all operations; a plain express
        // route (src/http/routes.ts) says in its own words what its errors mean.
        const generated = existing?.content?.["application/json"]?.schema?.$ref?.startsWith("#/components/schemas/error.") ?? false;
        const ownWords = generated ? undefined : existing?.description;
        responses[status] = errorResponse(listed?.[status] ?? ownWords ?? ERROR_MEANINGS[status] ?? "Error");
      }
    }
  }
  const schemas = ((document.components ??= {}).schemas ??= {}) as Record<string, unknown>;
  for (const name of Object.keys(schemas)) if (name.startsWith("error.")) delete schemas[name];
  schemas.Error = ERROR_SCHEMA;
}

/**
 * trpc-to-openapi documents every success as 200; procedures that answer 201 or 202
 * (`meta.successStatus`, applied by the REST adapter's responseMeta in src/app.ts) get their
 * success response moved under the status a client actually receives.
 */
function documentSuccessStatuses(appRouter: AppRouter, document: Document) {
  for (const [, meta] of procedureMetas(appRouter)) {
    if (!meta?.openapi || !meta.successStatus) continue;
    const operation = document.paths?.[meta.openapi.path]?.[meta.openapi.method.toLowerCase() as "get"];
    const responses = operation?.responses as Record<string, unknown> | undefined;
    if (!responses?.["200"]) continue;
    responses[String(meta.successStatus)] = responses["200"];
    delete responses["200"];
  }
}

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Fleet Manager API</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/api/v1/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/api/v1/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/v1/docs/init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: "/api/v1/openapi.json", dom_id: "#swagger-ui", persistAuthorization: true });`;

/**
 * The REST paths the document will hold (its `paths` keys): every procedure's and every plain
 * route's, known without building the document.
 */
export function documentedRestPaths(appRouter: AppRouter, extraPaths: ExtraPaths): string[] {
  const procedurePaths = procedureMetas(appRouter).flatMap(([, meta]) => (meta.openapi ? [meta.openapi.path] : []));
  return [...new Set([...procedurePaths, ...Object.keys(extraPaths)])];
}

/**
 * /openapi.json and the docs page. The document is built on its first request, not at start:
 * turning ~250 procedures' zod schemas into JSON Schema costs ~0.7 s of CPU and memory that
 * most processes (a device-facing worker, a test's service) never need.
 */
export function docsRouter(buildDocument: () => unknown): Router {
  const r = express.Router();
  let json: string | undefined;
  r.get("/openapi.json", (_req, res) => res.type("application/json").send((json ??= JSON.stringify(buildDocument()))));
  r.get("/docs", (_req, res) => res.type("html").send(PAGE));
  r.get("/docs/init.js", (_req, res) => res.type("application/javascript").send(INIT));
  r.use("/docs/assets", express.static(swaggerDir, { index: false, maxAge: "1d" }));
  return r;
}
