// POST /api/v1/activity/export (spec operation 4): the activity feed as CSV or JSON, for
// Super Admins, streamed from keyset pages of the audit trail. `format` other than csv or
// json is a 400; the file comes with its Content-Type and a Content-Disposition name.
import express, { type Router } from "express";
import { z } from "zod";
import type { Services } from "../../services.js";
import { writeAudit } from "../../trpc/audit.js";
import { isoInstant } from "../../lib/iso-time.js";
import { auditPages } from "../audit/pages.js";
import { ACTIVITY_CSV_COLUMNS, activityTypesInput, toActivityItem, type ActivityItem } from "./schemas.js";
import { activityFilterWhere } from "./service.js";
import { entityNamesOf, isEmptyRange, userNamesOf } from "../audit/service.js";
import { downloadFileName, streamDownload } from "../../http/download.js";
import { guardedJsonRoute } from "../../http/guarded-route.js";
import { downloadPathItem } from "../../http/download-openapi.js";
import type { ExtraPaths } from "../../http/docs.js";

export const ACTIVITY_EXPORT_MAX = 100_000;

export const activityExportInput = z.object({
  organizationId: z.string().uuid().optional(),
  userId: z.string().uuid().optional(),
  startDate: isoInstant.optional().describe("inclusive (ISO 8601 date or date-time)"),
  endDate: isoInstant.optional().describe("exclusive; a plain date includes that whole day"),
  activityTypes: activityTypesInput.optional(),
  format: z.enum(["csv", "json"]).default("json"),
  maxRecords: z.number().int().min(1).max(ACTIVITY_EXPORT_MAX).default(10_000).describe("newest first, at most this many"),
}).superRefine((input, ctx) => {
  if (input.startDate && input.endDate && isEmptyRange(input.startDate, input.endDate)) {
    ctx.addIssue({ code: "custom", path: ["endDate"], message: "must be after startDate" });
  }
});

export function activityExportRoutes(services: Services): Router {
  const r = express.Router();
  r.post("/activity/export", guardedJsonRoute(services, { label: "activity.export", access: { superAdmin: true }, body: activityExportInput }, async ({ principal, request, input, res }) => {
    const where = activityFilterWhere(principal, {
      organizationId: input.organizationId,
      userId: input.userId,
      types: input.activityTypes,
      from: input.startDate,
      to: input.endDate,
    });
    await writeAudit(services.prisma, request, principal, { action: "activity.export", outcome: "success", entityType: "activity", changes: input });
    // Each page of entries becomes a page of items with one user lookup per page.
    async function* items(): AsyncGenerator<ActivityItem[]> {
      for await (const page of auditPages(services.prisma, where, input.maxRecords)) {
        const [names, entities] = await Promise.all([userNamesOf(services.prisma, page), entityNamesOf(services.prisma, page)]);
        yield page.map((e) => toActivityItem(e, names, entities));
      }
    }
    await streamDownload(
      res,
      { format: input.format, fileName: downloadFileName("activity", input.format), columns: ACTIVITY_CSV_COLUMNS, toJson: (a) => a },
      items(),
    );
  }));
  return r;
}

export const activityExportOpenApiPaths: ExtraPaths = {
  "/activity/export": downloadPathItem({
    operationId: "activity-export",
    tag: "Activity",
    summary: "Export activity as CSV or JSON (Super Admin; streamed, newest first)",
    description: "Requires a Super Admin (an API key must also carry platform:admin). `format` is csv or json (default json); any other value is a 400.",
    body: activityExportInput,
    fileBase: "activity",
  }),
};
