// The OpenAPI document as the service serves it at /api/v1/openapi.json (src/app.ts builds it
// from the same two inputs), written out for test/fixtures/openapi.json. Indented so that a
// change shows as a readable diff; key order is kept, so equal text means an equal document.
import { fileURLToPath } from "node:url";
import { appRouter } from "../../src/trpc/router.js";
import { buildOpenApiDocument } from "../../src/http/docs.js";
import { extraOpenApiPaths } from "../../src/http/routes.js";

export const OPENAPI_FIXTURE = fileURLToPath(new URL("../fixtures/openapi.json", import.meta.url));

export function currentOpenApiText(): string {
  return JSON.stringify(buildOpenApiDocument(appRouter, extraOpenApiPaths), null, 2) + "\n";
}
