// Roles and permission keys as the API shows them, and the input pieces that roles, API
// keys and invitations share (a permission list is validated against the catalogue here).
import { z } from "zod";
import type { Role } from "../../generated/prisma/client.js";
import { ownerMark, ownerMarkOutput } from "../../lib/owner-mark.js";
import { isKnownPermission, PERMISSION_CATALOGUE, type Permission } from "../../trpc/permissions.js";

export const permissionKey = z
  .string()
  .max(100)
  .refine(isKnownPermission, { message: "Unknown permission; GET /api/v1/roles/permissions lists the valid ones" });

export const permissionList = z.array(permissionKey).max(100);

export const roleName = z.string().trim().min(2).max(50);
export const roleDescription = z.string().trim().max(500);

export const roleOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  description: z.string(),
  permissions: z.array(z.string()),
  system: z.boolean(),
  /** null for system roles, which every organization shares */
  organizationId: z.string().uuid().nullable(),
  ...ownerMarkOutput,
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type RoleDto = z.infer<typeof roleOutput>;

/** A role as embedded in members and invitations. */
export const roleRefOutput = z.object({ id: z.string().uuid(), name: z.string(), system: z.boolean() });

export function toRoleDto(role: Role): RoleDto {
  return {
    id: role.id,
    name: role.name,
    description: role.description,
    permissions: role.permissions,
    system: role.system,
    organizationId: role.organizationId,
    ...ownerMark(role),
    createdAt: role.createdAt.toISOString(),
    updatedAt: role.updatedAt.toISOString(),
  };
}

export const permissionOutput = z.object({
  key: z.string(),
  resource: z.string(),
  action: z.string(),
  description: z.string(),
});

export function permissionCatalogue() {
  return (Object.entries(PERMISSION_CATALOGUE) as [Permission, string][]).map(([key, description]) => {
    const [resource, action] = key.split(":");
    return { key, resource, action, description };
  });
}

/** Removes repeated entries, keeping the caller's order. */
export const uniquePermissions = (list: readonly string[]) => [...new Set(list)];

/** POST /roles (and a Role document's spec, docs/config-as-code.md). */
export const createRoleInput = z.object({ name: roleName, description: roleDescription.optional(), permissions: permissionList });
