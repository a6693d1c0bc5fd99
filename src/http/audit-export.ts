// POST /api/v1/audit/export: the audit log as CSV or JSON, streamed from keyset pages
// (src/modules/audit/pages.ts) so that no export is ever held in memory. Same filters and
// tenant scope as GET /audit; needs audit:read. The export itself is audited.
import type { RequestHandler } from "express";
import { z } from "zod";
import type { Services } from "../services.js";
import { writeAudit } from "../trpc/audit.js";
import { AUDIT_CSV_COLUMNS, auditFilterFields, toAuditEntryDto } from "../modules/audit/schemas.js";
import { auditWhere } from "../modules/audit/service.js";
import { auditPages } from "../modules/audit/pages.js";
import { downloadFileName, streamDownload } from "./download.js";
import { guardedJsonRoute } from "./guarded-route.js";
import { downloadPathItem } from "./download-openapi.js";

export const AUDIT_EXPORT_MAX = 1_000_000;

export const auditExportInput = z.object({
  ...auditFilterFields,
  format: z.enum(["csv", "json"]).default("json"),
  maxRecords: z.number().int().min(1).max(AUDIT_EXPORT_MAX).default(100_000).describe("newest entries first, at most this many"),
});

export function auditExportRoute(services: Services): RequestHandler {
  return guardedJsonRoute(services, { label: "audit.export", access: { permission: "audit:read" }, body: auditExportInput }, async ({ principal, request, input, res }) => {
    const { format, maxRecords, ...filters } = input;
    const where = auditWhere(principal, filters);
    await writeAudit(services.prisma, request, principal, { action: "audit.export", outcome: "success", entityType: "audit", changes: input });
    await streamDownload(
      res,
      { format, fileName: downloadFileName("audit-log", format), columns: AUDIT_CSV_COLUMNS, toJson: toAuditEntryDto },
      auditPages(services.prisma, where, maxRecords),
    );
  });
}

export const auditExportPath = {
  "/audit/export": downloadPathItem({
    operationId: "audit-export",
    tag: "Audit",
    summary: "Export the audit log as CSV or JSON (streamed, newest first)",
    description: "Requires audit:read. Same filters and organization scope as GET /audit, in the JSON body. The file is streamed page by page.",
    body: auditExportInput,
    fileBase: "audit-log",
  }),
};
