// The OpenAPI document and a human docs page (Swagger UI from the npm package, no CDN).
import express, { type Router } from "express";
import { createRequire } from "node:module";
import path from "node:path";
import { generateOpenApiDocument } from "trpc-to-openapi";
import { procedureMetas, type AppRouter } from "../trpc/router.js";

const require = createRequire(import.meta.url);
const swaggerDir = path.dirname(require.resolve("swagger-ui-dist/package.json"));

/** The error body of every operation, for the path items of the plain express routes. */
export const errorResponse = (description: string) => ({
  description,
  content: {
    "application/json": {
      schema: {
        type: "object",
        properties: {
          code: { type: "string" },
          message: { type: "string" },
          data: {
            type: "object",
            properties: { code: { type: "string" }, httpStatus: { type: "number" }, requestId: { type: "string" }, issues: { type: "array", items: { type: "object" } } },
          },
        },
      },
    },
  },
});

/** Extra path items for the plain express routes (downloads, streams), merged into the document. */
export type ExtraPaths = Record<string, Record<string, unknown>>;

export function buildOpenApiDocument(appRouter: AppRouter, extraPaths: ExtraPaths = {}) {
  const document = generateOpenApiDocument(appRouter, {
    title: "Fleet Manager API",
    description:
      "Multi-tenant management of edge device fleets. Authenticate with `X-API-Key: <key>` or " +
      "`Authorization: Bearer <access token>` from `POST /api/v1/auth/login`. Errors are JSON: " +
      "`{ code, message, data: { requestId, issues? } }`.",
    version: "1.0.0",
    baseUrl: "/api/v1",
    securitySchemes: {
      ApiKey: { type: "apiKey", in: "header", name: "X-API-Key" },
      Bearer: { type: "http", scheme: "bearer", bearerFormat: "JWT" },
    },
    paths: extraPaths as never,
  });
  documentSuccessStatuses(appRouter, document);
  return document;
}

/**
 * trpc-to-openapi documents every success as 200; procedures that answer 201 or 202
 * (`meta.successStatus`, applied by the REST adapter's responseMeta in src/app.ts) get their
 * success response moved under the status a client actually receives.
 */
function documentSuccessStatuses(appRouter: AppRouter, document: ReturnType<typeof generateOpenApiDocument>) {
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
<link rel="stylesheet" href="/api/v1/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/api/v1/docs/assets/swagger-ui-bundle.js"></script>
<script src="/api/v1/docs/init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: "/api/v1/openapi.json", dom_id: "#swagger-ui", persistAuthorization: true });`;

export function docsRouter(document: unknown): Router {
  const r = express.Router();
  const json = JSON.stringify(document);
  r.get("/openapi.json", (_req, res) => res.type("application/json").send(json));
  r.get("/docs", (_req, res) => res.type("html").send(PAGE));
  r.get("/docs/init.js", (_req, res) => res.type("application/javascript").send(INIT));
  r.use("/docs/assets", express.static(swaggerDir, { index: false, maxAge: "1d" }));
  return r;
}
