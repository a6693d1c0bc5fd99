import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { organizationOutput, toOrganizationDto } from "./schemas.js";
import { getOrganizationBySlug } from "./service.js";

const TAG = "Organizations";

export const organizationsRouter = router({
  getBySlug: protectedProcedure("organizations:read")
    .meta({ openapi: { method: "GET", path: "/organizations/by-slug/{slug}", tags: [TAG], summary: "Get an organization by its slug" } })
    .input(z.object({ slug: z.string().min(1).max(100) }))
    .output(organizationOutput)
    .query(async ({ ctx, input }) => toOrganizationDto(await getOrganizationBySlug(ctx.db, ctx.principal, input.slug))),
});
