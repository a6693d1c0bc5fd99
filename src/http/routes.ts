// Plain express routes for what a procedure cannot answer (file downloads, event streams),
// and their OpenAPI path items so that the document lists every operation. They use the
// same authenticate/permission/audit functions as procedures.
import type { ExtraPaths } from "./docs.js";
import { pkiOpenApiPaths } from "./pki-routes.js";
import { usersExportOpenApiPaths } from "./users-export.js";
import { applicationIconOpenApiPaths } from "./application-icon.js";

import { logStreamOpenApiPaths } from "./log-stream.js";
import { realtimeOpenApiPaths } from "./realtime.js";
import { exportOpenApiPaths } from "./export-routes.js";
import { marketplaceProgressOpenApiPaths } from "../modules/marketplace/progress-route.js";
import { oidcSignInOpenApiPaths } from "./oidc-sign-in.js";

export const extraOpenApiPaths: ExtraPaths = { ...pkiOpenApiPaths, ...usersExportOpenApiPaths, ...applicationIconOpenApiPaths, ...logStreamOpenApiPaths, ...realtimeOpenApiPaths, ...exportOpenApiPaths, ...marketplaceProgressOpenApiPaths, ...oidcSignInOpenApiPaths };
