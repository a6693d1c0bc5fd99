// /organizations/{orgId}/members: a router of its own (not inside organizations) so that
// the two areas can change independently; the REST paths still start with /organizations.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { memberOutput, memberStatsOutput, toMemberDto } from "./schemas.js";
import { changeMemberRole, getMember, listMembers, memberStats, removeMember } from "./service.js";
import { organizationOfPath } from "./organization-scope.js";

const TAG = "Organization members";
const orgPath = z.object({ orgId: z.string().uuid() });
const memberPath = orgPath.extend({ userId: z.string().uuid() });

export const membersRouter = router({
  // Static segment before {userId}.
  stats: protectedProcedure("members:read")
    .meta({ openapi: { method: "GET", path: "/organizations/{orgId}/members/stats", tags: [TAG], summary: "Member counts by role and status" } })
    .input(orgPath)
    .output(memberStatsOutput)
    .query(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      return memberStats(ctx.db, org.id);
    }),

  list: protectedProcedure("members:read")
    .meta({ openapi: { method: "GET", path: "/organizations/{orgId}/members", tags: [TAG], summary: "List members (search by name or e-mail)" } })
    .input(orgPath.extend({
      ...pagingInput,
      search: z.string().max(200).optional().describe("part of the name or e-mail, case-insensitive"),
      roleId: z.string().uuid().optional(),
    }))
    .output(pageOutput(memberOutput))
    .query(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      const { items, total } = await listMembers(ctx.db, org.id, input);
      return pageOf(items.map(toMemberDto), total, input.offset);
    }),

  get: protectedProcedure("members:read")
    .meta({ openapi: { method: "GET", path: "/organizations/{orgId}/members/{userId}", tags: [TAG], summary: "Get a member" } })
    .input(memberPath)
    .output(memberOutput)
    .query(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      return toMemberDto(await getMember(ctx.db, org.id, input.userId));
    }),

  updateRole: protectedProcedure("members:write")
    .meta({
      openapi: { method: "PUT", path: "/organizations/{orgId}/members/{userId}/role", tags: [TAG], summary: "Change a member's role (effective on their next request)" },
      audit: { entity: "membership", action: "members.updateRole" },
    })
    .input(memberPath.extend({ roleId: z.string().uuid() }))
    .output(memberOutput)
    .mutation(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      return toMemberDto(await changeMemberRole(ctx.db, ctx.principal, org.id, input.userId, input.roleId));
    }),

  remove: protectedProcedure("members:write")
    .meta({
      openapi: { method: "DELETE", path: "/organizations/{orgId}/members/{userId}", tags: [TAG], summary: "Remove a member (never the last owner); revokes their API keys here" },
      audit: { entity: "membership" },
    })
    .input(memberPath)
    .output(z.object({ userId: z.string().uuid(), organizationId: z.string().uuid(), removed: z.literal(true), revokedApiKeys: z.number().int() }))
    .mutation(async ({ ctx, input }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      return removeMember(ctx.db, ctx.principal, org.id, input.userId);
    }),
});
