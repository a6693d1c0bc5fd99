// Role rules. System roles (organizationId null) are shared by every organization and only
// change with the code (src/bootstrap.ts syncs them); custom roles belong to one
// organization, so every query names the caller's organization and others' roles are 404.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { SYSTEM_ROLES } from "../../trpc/permissions.js";
import { addedPermissions, assertMayGrant } from "./access.js";
import { uniquePermissions } from "./schemas.js";
import { counted } from "../../lib/plural.js";

/** The roles an organization can use: the system ones and its own custom ones. */
export const rolesOf = (organizationId: string) => ({ OR: [{ organizationId: null }, { organizationId }] });

/** System roles in the order of SYSTEM_ROLES (owner, admin, operator, viewer), not by timestamp. */
const systemRank = new Map(SYSTEM_ROLES.map((r, i) => [r.name, i]));

export async function listSystemRoles(db: DbTx) {
  const roles = await db.role.findMany({ where: { organizationId: null, system: true } });
  return roles.sort((a, b) => (systemRank.get(a.name) ?? 99) - (systemRank.get(b.name) ?? 99) || a.name.localeCompare(b.name));
}

/** One page over [system roles..., the organization's custom roles by name]. */
export async function listRoles(db: DbTx, principal: Principal, page: { limit: number; offset: number }) {
  const custom = { organizationId: principal.organizationId };
  const [system, customTotal] = await Promise.all([listSystemRoles(db), db.role.count({ where: custom })]);
  const fromSystem = system.slice(page.offset, page.offset + page.limit);
  const take = page.limit - fromSystem.length;
  const fromCustom = take > 0
    ? await db.role.findMany({ where: custom, orderBy: [{ name: "asc" }, { id: "asc" }], skip: Math.max(0, page.offset - system.length), take })
    : [];
  return { items: [...fromSystem, ...fromCustom], total: system.length + customTotal };
}

/** A role that members of `organizationId` may be given; 404 otherwise. */
export async function findAssignableRole(db: DbTx, organizationId: string, roleId: string) {
  const role = await db.role.findFirst({ where: { id: roleId, ...rolesOf(organizationId) } });
  if (!role) throw notFound("Role");
  return role;
}

export const getRole = (db: DbTx, principal: Principal, id: string) => findAssignableRole(db, principal.organizationId, id);

/** Names are unique per organization, case-insensitively, and never shadow a system role. */
async function assertNameFree(db: DbTx, organizationId: string, name: string, exceptId?: string) {
  const clash = await db.role.findFirst({
    where: { ...rolesOf(organizationId), name: { equals: name, mode: "insensitive" }, ...(exceptId ? { NOT: { id: exceptId } } : {}) },
    select: { system: true },
  });
  if (clash) throw conflict(clash.system ? `"${name}" is the name of a system role` : `A role named "${name}" already exists`);
}

function assertCustom(role: { system: boolean; name: string }, verb: string) {
  if (role.system) throw conflict(`System role "${role.name}" cannot be ${verb}; create a custom role instead`);
}

export async function createRole(db: DbTx, principal: Principal, input: { name: string; description?: string; permissions: string[] }) {
  const permissions = uniquePermissions(input.permissions);
  assertMayGrant(principal, permissions, "put into a role");
  await assertNameFree(db, principal.organizationId, input.name);
  return db.role.create({
    data: { organizationId: principal.organizationId, name: input.name, description: input.description ?? "", permissions, system: false },
  });
}

export async function updateRole(
  db: DbTx,
  principal: Principal,
  id: string,
  input: { name?: string; description?: string; permissions?: string[] },
) {
  const role = await getRole(db, principal, id);
  assertCustom(role, "edited");
  const permissions = input.permissions && uniquePermissions(input.permissions);
  if (permissions) assertMayGrant(principal, addedPermissions(role.permissions, permissions), "put into a role");
  if (input.name !== undefined && input.name !== role.name) await assertNameFree(db, principal.organizationId, input.name, role.id);
  // Members holding the role get the new permissions on their next request (auth reads the role each time).
  return db.role.update({ where: { id: role.id }, data: { name: input.name, description: input.description, permissions } });
}

export async function deleteRole(db: DbTx, principal: Principal, id: string) {
  const role = await getRole(db, principal, id);
  assertCustom(role, "deleted");
  const [members, invitations] = await Promise.all([
    db.membership.count({ where: { roleId: role.id } }),
    db.invitation.count({ where: { roleId: role.id, acceptedAt: null, revokedAt: null, expiresAt: { gt: new Date() } } }),
  ]);
  if (members > 0) throw conflict(`Role "${role.name}" is assigned to ${counted(members, "member")}; give them another role first`);
  if (invitations > 0) throw conflict(`Role "${role.name}" is offered by ${counted(invitations, "pending invitation")}; revoke them first`);
  // Membership.role is ON DELETE RESTRICT: a member given the role meanwhile makes this a 409 too.
  await db.role.delete({ where: { id: role.id } });
  return { id: role.id, deleted: true as const };
}
