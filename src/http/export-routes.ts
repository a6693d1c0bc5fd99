// The audit and activity downloads, mounted before the REST facade (src/app.ts) and listed
// in openapi.json through src/http/routes.ts.
import express, { type Router } from "express";
import type { Services } from "../services.js";
import { activityExportPath, activityExportRoute } from "./activity-export.js";
import { auditExportPath, auditExportRoute } from "./audit-export.js";

export function exportRoutes(services: Services): Router {
  const r = express.Router();
  r.post("/audit/export", auditExportRoute(services));
  r.post("/activity/export", activityExportRoute(services));
  return r;
}

export const exportOpenApiPaths = { ...auditExportPath, ...activityExportPath };
