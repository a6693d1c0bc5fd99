// Tenant switching (docs/audit.md): switch and return need a bearer session; reading the
// context, accessible tenants and one's own history works with any credential. Op 17 lists
// every active switch for Super Admins.
import { z } from "zod";
import { authedProcedure, protectedProcedure, router, sessionProcedure, superAdminProcedure } from "../../trpc/procedures.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { accessibleTenantOutput, contextOutput, switchInput, tenantMemberOutput, tenantSwitchRecord } from "./schemas.js";
import {
  accessibleTenants, activeSwitches, currentContext, ownSwitchHistory, returnFromSwitch, switchTenant, tenantMembers,
} from "./service.js";

const TAG = "Tenant switching";
const paging = z.object(pagingInput);

export const tenantRouter = router({
  members: protectedProcedure("members:read")
    .meta({ openapi: { method: "GET", path: "/tenant/members", tags: [TAG], summary: "Members of the organization the caller acts in" } })
    .input(z.object({ ...pagingInput, search: z.string().trim().min(1).max(200).optional() }))
    .output(pageOutput(tenantMemberOutput).extend({ organizationId: z.string().uuid() }))
    .query(({ ctx, input }) => tenantMembers(ctx.db, ctx.principal, input)),

  context: authedProcedure
    .meta({ openapi: { method: "GET", path: "/tenant/context", tags: [TAG], summary: "Current context: who, acting in which organization, through which switch" } })
    .input(z.object({}).optional())
    .output(contextOutput)
    .query(({ ctx }) => currentContext(ctx.db, ctx.principal)),

  switch: sessionProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/tenant/switch",
        tags: [TAG],
        summary: "Act in another organization for a bounded time",
        description: "Bearer sessions only (an API key is bound to its organization: 403). A Super Admin may enter any organization, others only one they are a member of (otherwise 404). durationMinutes defaults to 60, at most 480; the switch ends by itself when it expires. Switching again while switched replaces the switch; the home organization stays the same.",
      },
      audit: { entity: "tenant_switch", action: "tenant.switch" },
    })
    .input(switchInput)
    .output(tenantSwitchRecord)
    .mutation(({ ctx, input }) => switchTenant(ctx.db, ctx.principal, ctx.audit, input)),

  return: sessionProcedure
    .meta({
      openapi: { method: "POST", path: "/tenant/return", tags: [TAG], summary: "End the active switch and act in the home organization again (409 when none is active)" },
      audit: { entity: "tenant_switch", action: "tenant.return" },
    })
    .input(z.object({}).optional())
    .output(tenantSwitchRecord)
    .mutation(({ ctx }) => returnFromSwitch(ctx.db, ctx.principal, ctx.audit)),

  accessible: authedProcedure
    .meta({ openapi: { method: "GET", path: "/tenant/accessible", tags: [TAG], summary: "Organizations the caller may switch into" } })
    .input(paging)
    .output(pageOutput(accessibleTenantOutput))
    .query(({ ctx, input }) => accessibleTenants(ctx.db, ctx.principal, input)),

  history: authedProcedure
    .meta({ openapi: { method: "GET", path: "/tenant/switches/history", tags: [TAG], summary: "The caller's own switches, newest first" } })
    .input(paging)
    .output(pageOutput(tenantSwitchRecord))
    .query(({ ctx, input }) => ownSwitchHistory(ctx.db, ctx.principal, input)),

  activeSwitches: superAdminProcedure
    .meta({ openapi: { method: "GET", path: "/tenant/switches/active", tags: [TAG], summary: "All active tenant switches (administrator view)", protect: true } })
    .input(paging)
    .output(pageOutput(tenantSwitchRecord))
    .query(({ ctx, input }) => activeSwitches(ctx.db, input)),
});
