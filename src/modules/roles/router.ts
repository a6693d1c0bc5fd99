import { z } from "zod";
import { authedProcedure, protectedProcedure, router } from "../../trpc/procedures.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { createRoleInput, permissionCatalogue, permissionList, permissionOutput, roleDescription, roleName, roleOutput, toRoleDto } from "./schemas.js";
import { createRole, deleteRole, getRole, listRoles, updateRole } from "./service.js";
import { assertNotManaged } from "../config/guard.js";

const TAG = "Roles";
const byId = z.object({ id: z.string().uuid() });

export const rolesRouter = router({
  // Static segment first: /roles/permissions must not be routed to /roles/{id}.
  // Any authenticated caller may read the catalogue: it is the same for every tenant and is
  // what anyone creating a key or a role needs to see.
  permissions: authedProcedure
    .meta({ openapi: { method: "GET", path: "/roles/permissions", tags: [TAG], summary: "List available permissions (the catalogue of permission keys)" } })
    .input(z.object({}).optional())
    .output(z.object({ items: z.array(permissionOutput), wildcard: z.literal("*") }))
    .query(() => ({ items: permissionCatalogue(), wildcard: "*" as const })),

  list: protectedProcedure("roles:read")
    .meta({ openapi: { method: "GET", path: "/roles", tags: [TAG], summary: "List the system roles and the organization's custom roles" } })
    .input(z.object(pagingInput))
    .output(pageOutput(roleOutput))
    .query(async ({ ctx, input }) => {
      const { items, total } = await listRoles(ctx.db, ctx.principal, input);
      return pageOf(items.map(toRoleDto), total, input.offset);
    }),

  create: protectedProcedure("roles:write")
    .meta({
      openapi: { method: "POST", path: "/roles", tags: [TAG], summary: "Create a custom role in the caller's organization" },
      successStatus: 201,
      audit: { entity: "role" },
    })
    .input(createRoleInput)
    .output(roleOutput)
    .mutation(async ({ ctx, input }) => toRoleDto(await createRole(ctx.db, ctx.principal, input))),

  get: protectedProcedure("roles:read")
    .meta({ openapi: { method: "GET", path: "/roles/{id}", tags: [TAG], summary: "Get a role" } })
    .input(byId)
    .output(roleOutput)
    .query(async ({ ctx, input }) => toRoleDto(await getRole(ctx.db, ctx.principal, input.id))),

  update: protectedProcedure("roles:write")
    .meta({
      openapi: { method: "PATCH", path: "/roles/{id}", tags: [TAG], summary: "Update a custom role (system roles cannot be edited)" },
      audit: { entity: "role" },
    })
    .input(byId.extend({ name: roleName.optional(), description: roleDescription.optional(), permissions: permissionList.optional() }))
    .output(roleOutput)
    .mutation(async ({ ctx, input: { id, ...changes } }) => {
      await assertNotManaged(ctx.db, "Role", ctx.principal.organizationId, id);
      return toRoleDto(await updateRole(ctx.db, ctx.principal, id, changes));
    }),

  delete: protectedProcedure("roles:write")
    .meta({
      openapi: { method: "DELETE", path: "/roles/{id}", tags: [TAG], summary: "Delete a custom role that no member holds" },
      audit: { entity: "role" },
    })
    .input(byId)
    .output(z.object({ id: z.string().uuid(), deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await assertNotManaged(ctx.db, "Role", ctx.principal.organizationId, input.id);
      return deleteRole(ctx.db, ctx.principal, input.id);
    }),
});
