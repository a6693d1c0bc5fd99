// Plain express routes for what a procedure cannot answer (file downloads, event streams),
// and their OpenAPI path items so that the document lists every operation. They use the
// same authenticate/permission/audit functions as procedures.
import type { ExtraPaths } from "./docs.js";

export const extraOpenApiPaths: ExtraPaths = {};
