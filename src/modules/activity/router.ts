// The activity feed (a view of the audit trail, see types.ts). Op 4, the export, is a plain
// express route: src/modules/activity/export-route.ts.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { ACTIVITY_TYPES } from "./types.js";
import { activityFilterFields, activityItemOutput, inactiveMemberOutput } from "./schemas.js";
import {
  activitySummary, assertOrganizationVisible, assertUserVisible, inactivityReport, listActivity, recentActivity,
} from "./service.js";

const TAG = "Activity";
const organizationFilter = z.string().uuid().optional().describe("Super Admins only; others always see their own organization");

export const activityRouter = router({
  recent: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/activity/recent", tags: [TAG], summary: "The latest activity of the organization" } })
    .input(z.object({ limit: z.coerce.number().int().min(1).max(100).default(20) }))
    .output(z.object({ items: z.array(activityItemOutput) }))
    .query(({ ctx, input }) => recentActivity(ctx.db, ctx.principal, input.limit)),

  summary: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/activity/summary", tags: [TAG], summary: "Activity counts over the last days" } })
    .input(z.object({ days: z.coerce.number().int().min(1).max(365).default(7), organizationId: organizationFilter }))
    .output(z.object({
      from: z.string().datetime(),
      to: z.string().datetime(),
      days: z.number().int(),
      total: z.number().int(),
      byType: z.object(Object.fromEntries(ACTIVITY_TYPES.map((t) => [t, z.number().int()]))),
      activeUsers: z.number().int(),
      topUsers: z.array(z.object({ userId: z.string().uuid(), email: z.string().nullable(), name: z.string().nullable(), count: z.number().int() })),
    }))
    .query(async ({ ctx, input }) => {
      if (input.organizationId) await assertOrganizationVisible(ctx.db, ctx.principal, input.organizationId);
      return activitySummary(ctx.db, ctx.principal, input);
    }),

  inactivityReport: protectedProcedure("audit:read")
    .meta({
      openapi: {
        method: "GET",
        path: "/activity/inactivity-report",
        tags: [TAG],
        summary: "Members with no activity for N days (longest inactive first)",
        description: "Activity is the latest of the member's sign-in, authenticated request and successful action here. Members who joined less than N days ago and were never active are not listed yet.",
      },
    })
    .input(z.object({ days: z.coerce.number().int().min(1).max(3650).default(30), organizationId: organizationFilter, ...pagingInput }))
    .output(pageOutput(inactiveMemberOutput).extend({ days: z.number().int(), cutoff: z.string().datetime(), organizationId: z.string().uuid() }))
    .query(async ({ ctx, input }) => {
      const organizationId = input.organizationId ?? ctx.principal.organizationId;
      await assertOrganizationVisible(ctx.db, ctx.principal, organizationId);
      return inactivityReport(ctx.db, organizationId, input);
    }),

  list: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/activity", tags: [TAG], summary: "List activity (newest first)" } })
    .input(z.object({ ...activityFilterFields, userId: z.string().uuid().optional(), organizationId: organizationFilter, ...pagingInput }))
    .output(pageOutput(activityItemOutput))
    .query(({ ctx, input }) => listActivity(ctx.db, ctx.principal, input)),

  byUser: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/activity/users/{userId}", tags: [TAG], summary: "Activity of one user" } })
    .input(z.object({ userId: z.string().uuid(), ...activityFilterFields, ...pagingInput }))
    .output(pageOutput(activityItemOutput))
    .query(async ({ ctx, input }) => {
      await assertUserVisible(ctx.db, ctx.principal, input.userId);
      return listActivity(ctx.db, ctx.principal, input);
    }),

  byOrganization: protectedProcedure("audit:read")
    .meta({ openapi: { method: "GET", path: "/activity/organizations/{orgId}", tags: [TAG], summary: "Activity of one organization" } })
    .input(z.object({ orgId: z.string().uuid(), ...activityFilterFields, ...pagingInput }))
    .output(pageOutput(activityItemOutput))
    .query(async ({ ctx, input }) => {
      await assertOrganizationVisible(ctx.db, ctx.principal, input.orgId);
      return listActivity(ctx.db, ctx.principal, { ...input, organizationId: input.orgId });
    }),
});
