// /organizations. Creating, deleting and changing the status of organizations, and anything
// across organizations (aggregate stats, empty ones), is for Super Admins; everyone else
// with organizations:read sees only their own organization (any other one is a 404).
// Static segments are declared before /organizations/{id}: the first matching route wins.
import { z } from "zod";
import { protectedProcedure, router, superAdminProcedure } from "../../trpc/procedures.js";
import { pagingInput } from "../../lib/paging.js";
import { bulkUsersOutput, mailSentOutput } from "../users/schemas.js";
import {
  aggregateStatsOutput, bulkDeleteInput, bulkDeleteOutput, canDeleteOutput, createOrganizationInput, idInput,
  listOrganizationsInput, organizationOutput, organizationPageOutput, orgUserInput, orgUsersBulkInput,
  brandOrganizationInput, renameOrganizationInput, statusChangeInput, toOrganizationDto, updateOrganizationInput,
} from "./schemas.js";
import {
  brandOrganization, createOrganization, getOrganization, getOrganizationBySlug, listOrganizations, renameOrganization,
  updateOrganization,
} from "./service.js";
import { changeOrganizationStatus } from "./status.js";
import { aggregateStats, statsByOrganization } from "./stats.js";
import { listEmptyOrganizations } from "./dependents.js";
import { bulkDeleteOrganizations, canDeleteOrganization, deleteOrganization } from "./deletion.js";
import { bulkOrganizationUsers, resetMemberPassword } from "./org-users.js";
import type { Organization } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { AuditNote } from "../../trpc/audit.js";

const TAG = "Organizations";
const audit = { entity: "organization" };
const read = protectedProcedure("organizations:read");

/**
 * Status moves and deletions are filed under the organization they concern (not the Super
 * Admin's own), with the reason, so the tenant's audit log tells who disabled it and why.
 */
function fileUnder(ctx: object, organizationId: string, reason?: string) {
  // ctx.audit is set by the audited-mutation middleware (procedures.ts); its type does not
  // survive the builder chain, hence the narrowing here.
  const note = (ctx as { audit?: AuditNote | null }).audit;
  if (!note) return;
  note.organizationId = organizationId;
  if (reason) note.message = `reason: ${reason}`;
}

/** DTOs of a page of organizations with their `stats`, computed in one query for the page. */
async function withStats(db: DbTx, orgs: Organization[]) {
  const stats = await statsByOrganization(db, orgs.map((o) => o.id));
  return orgs.map((o) => toOrganizationDto(o, stats.get(o.id)));
}

export const organizationsRouter = router({
  list: read
    .meta({ openapi: { method: "GET", path: "/organizations", tags: [TAG], summary: "List organizations (Super Admin: all; otherwise your own)" } })
    .input(listOrganizationsInput)
    .output(organizationPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listOrganizations(ctx.db, ctx.principal, input);
      return { ...page, items: page.items.map((o) => toOrganizationDto(o)) };
    }),

  create: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/organizations", tags: [TAG], summary: "Create an organization (Super Admin)" }, successStatus: 201, audit })
    .input(createOrganizationInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => toOrganizationDto(await createOrganization(ctx.db, input))),

  stats: superAdminProcedure
    .meta({ openapi: { method: "GET", path: "/organizations/stats", tags: [TAG], summary: "Platform-wide organization statistics (Super Admin)" } })
    .input(z.object({}))
    .output(aggregateStatsOutput)
    .query(({ ctx }) => aggregateStats(ctx.db)),

  empty: superAdminProcedure
    .meta({ openapi: { method: "GET", path: "/organizations/empty", tags: [TAG], summary: "Organizations without members, devices or deployments (Super Admin)" } })
    .input(z.object(pagingInput))
    .output(organizationPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listEmptyOrganizations(ctx.db, input);
      return { ...page, items: page.items.map((o) => toOrganizationDto(o)) };
    }),

  withStats: read
    .meta({ openapi: { method: "GET", path: "/organizations/with-stats", tags: [TAG], summary: "List organizations, each with its stats object" } })
    .input(listOrganizationsInput)
    .output(organizationPageOutput)
    .query(async ({ ctx, input }) => {
      const page = await listOrganizations(ctx.db, ctx.principal, input);
      return { ...page, items: await withStats(ctx.db, page.items) };
    }),

  bulkDelete: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/organizations/bulk-delete", tags: [TAG], summary: "Delete several organizations, with an outcome per organization (Super Admin)" }, audit, mcp: { destructive: true } })
    .input(bulkDeleteInput)
    .output(bulkDeleteOutput)
    .mutation(({ ctx, input }) => bulkDeleteOrganizations(ctx.db, ctx.principal, ctx.request, input.ids)),

  getBySlug: read
    .meta({ openapi: { method: "GET", path: "/organizations/by-slug/{slug}", tags: [TAG], summary: "Get an organization by its slug" } })
    .input(z.object({ slug: z.string().min(1).max(100) }))
    .output(organizationOutput)
    .query(async ({ ctx, input }) => toOrganizationDto(await getOrganizationBySlug(ctx.db, ctx.principal, input.slug))),

  get: read
    .meta({ openapi: { method: "GET", path: "/organizations/{id}", tags: [TAG], summary: "Get an organization" } })
    .input(idInput.extend({ includeStats: z.stringbool().optional().describe("add the stats object") }))
    .output(organizationOutput)
    .query(async ({ ctx, input }) => {
      const org = await getOrganization(ctx.db, ctx.principal, input.id);
      return input.includeStats ? (await withStats(ctx.db, [org]))[0] : toOrganizationDto(org);
    }),

  // Spec operation 8.
  update: superAdminProcedure
    .meta({ openapi: { method: "PATCH", path: "/organizations/{id}", tags: [TAG], summary: "Update an organization (Super Admin)" }, audit })
    .input(updateOrganizationInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => toOrganizationDto(await updateOrganization(ctx.db, ctx.principal, input))),

  delete: superAdminProcedure
    .meta({ openapi: { method: "DELETE", path: "/organizations/{id}", tags: [TAG], summary: "Delete an organization without devices or deployments (Super Admin)" }, audit })
    .input(idInput)
    .output(z.object({ id: z.string().uuid(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      const deleted = await deleteOrganization(ctx.db, ctx.principal, input.id);
      fileUnder(ctx, deleted.id);
      return deleted;
    }),

  enable: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/enable", tags: [TAG], summary: "Enable a suspended, disabled or pending organization (Super Admin)" }, audit })
    .input(statusChangeInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => {
      const org = await changeOrganizationStatus(ctx.db, ctx.principal, input.id, "active", input.reason);
      fileUnder(ctx, org.id, input.reason);
      return toOrganizationDto(org);
    }),

  suspend: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/suspend", tags: [TAG], summary: "Suspend an organization: its keys and users stop, nothing is deleted (Super Admin)" }, audit })
    .input(statusChangeInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => {
      const org = await changeOrganizationStatus(ctx.db, ctx.principal, input.id, "suspended", input.reason);
      fileUnder(ctx, org.id, input.reason);
      return toOrganizationDto(org);
    }),

  // Spec operation 3.
  disable: superAdminProcedure
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/disable", tags: [TAG], summary: "Disable an organization (Super Admin)" }, audit })
    .input(statusChangeInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => {
      const org = await changeOrganizationStatus(ctx.db, ctx.principal, input.id, "disabled", input.reason);
      fileUnder(ctx, org.id, input.reason);
      return toOrganizationDto(org);
    }),

  rename: protectedProcedure("organizations:write")
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/rename", tags: [TAG], summary: "Rename an organization (its slug stays)" }, audit })
    .input(renameOrganizationInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => toOrganizationDto(await renameOrganization(ctx.db, ctx.principal, input.id, input.name))),

  brand: protectedProcedure("organizations:branding")
    .meta({
      openapi: {
        method: "PATCH", path: "/organizations/{id}/branding", tags: [TAG],
        summary: "Change the organization's description and branding (brand colour, logo)",
        description: "For members holding organizations:branding in it (owners; custom roles given it). Other fields stay with the Super Admin's PATCH /organizations/{id}.",
      },
      audit,
    })
    .input(brandOrganizationInput)
    .output(organizationOutput)
    .mutation(async ({ ctx, input }) => toOrganizationDto(await brandOrganization(ctx.db, ctx.principal, input))),

  canDelete: read
    .meta({ openapi: { method: "GET", path: "/organizations/{id}/can-delete", tags: [TAG], summary: "Whether the organization can be deleted, and why not" } })
    .input(idInput)
    .output(canDeleteOutput)
    .query(({ ctx, input }) => canDeleteOrganization(ctx.db, ctx.principal, input.id)),

  bulkUsers: protectedProcedure("users:write")
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/users/bulk", tags: [TAG], summary: "Remove members, change their role or mail them reset links, with an outcome per user" }, audit, mcp: { destructive: true } })
    .input(orgUsersBulkInput)
    .output(bulkUsersOutput)
    .mutation(({ ctx, input }) => bulkOrganizationUsers(ctx.db, ctx.services, ctx.principal, input)),

  resetUserPassword: protectedProcedure("users:write")
    .meta({ openapi: { method: "POST", path: "/organizations/{id}/users/{userId}/reset-password", tags: [TAG], summary: "Mail a member a one-time password reset link" }, audit })
    .input(orgUserInput)
    .output(mailSentOutput)
    .mutation(({ ctx, input }) => resetMemberPassword(ctx.db, ctx.services, ctx.principal, input.id, input.userId)),
});
