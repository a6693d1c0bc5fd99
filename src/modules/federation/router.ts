// Federation group mappings (Super Admin). The sign-ins are POST /auth/oidc (the auth router,
// implemented in ./oidc.ts) and the console's browser sign-in (./browser-sign-in.ts, whose
// navigation routes are src/modules/auth/oidc-sign-in-route.ts).
import { z } from "zod";
import { router, superAdminProcedure } from "../../trpc/procedures.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";
import { createMappingInput, mappingOutput, reconcileOutput, updateMappingInput } from "./schemas.js";
import { createMapping, disableMapping, getMapping, listMappings, updateMapping } from "./service.js";
import { reconcileMappings } from "./reconcile.js";

const TAG = "Federation";
const BASE = "/federation/group-mappings";

export const federationRouter = router({
  reconcile: superAdminProcedure
    .meta({
      openapi: {
        method: "POST",
        path: `${BASE}/reconcile`,
        tags: [TAG],
        summary: "Apply the enabled mappings to every linked user (from the groups of their last ID token)",
        description: "Adds missing memberships, changes roles and removes memberships the mappings no longer grant. Only memberships created by mappings are changed; memberships made by hand are reported as skipped. dryRun reports without changing anything.",
      },
      audit: { entity: "federation_group_mapping", action: "federation.reconcile" },
    })
    .input(z.object({ dryRun: z.boolean().pipe(z.boolean()).default(false) }).default({ dryRun: false }))
    .output(reconcileOutput)
    .mutation(async ({ ctx, input }) => {
      const report = await reconcileMappings(ctx.db, { dryRun: input.dryRun });
      if (ctx.audit) ctx.audit.changes = { dryRun: report.dryRun, added: report.added, updated: report.updated, removed: report.removed };
      return report;
    }),

  list: superAdminProcedure
    .meta({ openapi: { method: "GET", path: BASE, tags: [TAG], summary: "List group mappings (newest first)" } })
    .input(z.object({
      organizationId: z.string().uuid().optional(),
      group: z.string().min(1).max(256).optional(),
      enabled: z.stringbool().optional(),
      ...pagingInput,
    }))
    .output(pageOutput(mappingOutput))
    .query(({ ctx, input }) => listMappings(ctx.db, input)),

  create: superAdminProcedure
    .meta({ openapi: { method: "POST", path: BASE, tags: [TAG], summary: "Map a provider group to an organization and role" }, successStatus: 201, audit: { entity: "federation_group_mapping" } })
    .input(createMappingInput)
    .output(mappingOutput)
    .mutation(({ ctx, input }) => createMapping(ctx.db, ctx.principal, input)),

  get: superAdminProcedure
    .meta({ openapi: { method: "GET", path: `${BASE}/{id}`, tags: [TAG], summary: "One group mapping" } })
    .input(z.object({ id: z.string().uuid() }))
    .output(mappingOutput)
    .query(({ ctx, input }) => getMapping(ctx.db, input.id)),

  update: superAdminProcedure
    .meta({ openapi: { method: "PATCH", path: `${BASE}/{id}`, tags: [TAG], summary: "Change a group mapping (takes effect at the next sign-in or reconcile)" }, audit: { entity: "federation_group_mapping" } })
    .input(updateMappingInput)
    .output(mappingOutput)
    .mutation(({ ctx, input }) => updateMapping(ctx.db, ctx.audit, input)),

  disable: superAdminProcedure
    .meta({ openapi: { method: "POST", path: `${BASE}/{id}/disable`, tags: [TAG], summary: "Disable a group mapping (409 when already disabled)" }, audit: { entity: "federation_group_mapping" } })
    .input(z.object({ id: z.string().uuid() }))
    .output(mappingOutput)
    .mutation(({ ctx, input }) => disableMapping(ctx.db, input.id)),
});
