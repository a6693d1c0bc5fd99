// GET /system-roles: the roles every organization shares (owner, admin, operator, viewer).
// Their rules live with the other roles in src/modules/roles.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { roleOutput, toRoleDto } from "../roles/schemas.js";
import { listSystemRoles } from "../roles/service.js";

export const systemRolesRouter = router({
  list: protectedProcedure("roles:read")
    .meta({ openapi: { method: "GET", path: "/system-roles", tags: ["Roles"], summary: "List the system roles (not editable, not deletable)" } })
    .input(z.object({}).optional())
    .output(z.object({ items: z.array(roleOutput) }))
    .query(async ({ ctx }) => ({ items: (await listSystemRoles(ctx.db)).map(toRoleDto) })),
});
