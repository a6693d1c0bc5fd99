// POST /api/v1/audit/export: the audit log as CSV or JSON, streamed from keyset pages
// (pages.ts) so that no export is ever held in memory. Same filters and
// tenant scope as GET /audit; needs audit:read. The export itself is audited.
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { writeAudit } from "../../trpc/audit.js";
import { AUDIT_CSV_COLUMNS, auditFilterFields, toAuditEntryDto } from "./schemas.js";
import { auditWhere } from "./service.js";
import { auditPages } from "./pages.js";
import { downloadFileName, streamDownload } from "../../http/download.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { downloadPathItem } from "../../http/download-openapi.js";
import type { ExtraPaths } from "../../http/docs.js";

export const AUDIT_EXPORT_MAX = 1_000_000;

export const auditExportInput = z.object({
  ...auditFilterFields,
  format: z.enum(["csv", "json"]).default("json"),
  maxRecords: z.number().int().min(1).max(AUDIT_EXPORT_MAX).default(100_000).describe("newest entries first, at most this many"),
});

export function auditExportRoutes(services: Services): Router {
  const r = express.Router();
  r.post("/audit/export", guardedJsonRoute(services, { label: "audit.export", access: { permission: "audit:read" }, body: auditExportInput }, async ({ principal, request, input, res }) => {
    const { format, maxRecords, ...filters } = input;
    const where = auditWhere(principal, filters);
    await writeAudit(services.prisma, request, principal, { action: "audit.export", outcome: "success", entityType: "audit", changes: input });
    await streamDownload(
      res,
      { format, fileName: downloadFileName("audit-log", format), columns: AUDIT_CSV_COLUMNS, toJson: toAuditEntryDto },
      auditPages(services.prisma, where, maxRecords),
    );
  }));
  return r;
}

export const auditExportOpenApiPaths: ExtraPaths = {
  "/audit/export": downloadPathItem({
    operationId: "audit-export",
    tag: "Audit",
    summary: "Export the audit log as CSV or JSON (streamed, newest first)",
    description: "Requires audit:read. Same filters and organization scope as GET /audit, in the JSON body. The file is streamed page by page.",
    body: auditExportInput,
    fileBase: "audit-log",
  }),
};
