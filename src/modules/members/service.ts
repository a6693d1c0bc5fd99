// Membership rules: who belongs to an organization with which role. Two invariants hold
// here: an organization always keeps an owner, and nobody hands out (or takes away) more
// than they hold themselves (roles/access.ts).
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { assertMayGrant } from "../roles/access.js";
import { findAssignableRole } from "../roles/service.js";
import { memberInclude } from "./schemas.js";
import { containsText } from "../../lib/like.js";
import { lockOrganization } from "./organization-scope.js";

export const OWNER_ROLE = "owner";

export async function listMembers(
  db: DbTx,
  organizationId: string,
  query: { limit: number; offset: number; search?: string; roleId?: string },
) {
  const search = query.search?.trim();
  const where: Prisma.MembershipWhereInput = {
    organizationId,
    ...(query.roleId ? { roleId: query.roleId } : {}),
    ...(search
      ? { user: { OR: [{ email: containsText(search) }, { name: containsText(search) }] } }
      : {}),
  };
  const [items, total] = await Promise.all([
    db.membership.findMany({ where, include: memberInclude, orderBy: [{ createdAt: "desc" }, { userId: "asc" }], take: query.limit, skip: query.offset }),
    db.membership.count({ where }),
  ]);
  return { items, total };
}

export async function getMember(db: DbTx, organizationId: string, userId: string) {
  const member = await db.membership.findUnique({ where: { organizationId_userId: { organizationId, userId } }, include: memberInclude });
  if (!member) throw notFound("Member");
  return member;
}

/** Counts by role and by account status, in SQL. */
export async function memberStats(db: DbTx, organizationId: string) {
  const [byRole, total, disabled] = await Promise.all([
    db.membership.groupBy({ by: ["roleId"], where: { organizationId }, _count: { _all: true } }),
    db.membership.count({ where: { organizationId } }),
    db.membership.count({ where: { organizationId, user: { status: { not: "active" } } } }),
  ]);
  const roles = await db.role.findMany({ where: { id: { in: byRole.map((r) => r.roleId) } }, select: { id: true, name: true, system: true } });
  const roleById = new Map(roles.map((r) => [r.id, r]));
  return {
    total,
    active: total - disabled,
    disabled,
    byRole: byRole
      .map((r) => ({ roleId: r.roleId, name: roleById.get(r.roleId)?.name ?? "", system: roleById.get(r.roleId)?.system ?? false, count: r._count._all }))
      .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name)),
  };
}

async function assertNotLastOwner(db: DbTx, organizationId: string, member: { userId: string; role: { name: string; system: boolean } }, action: string) {
  if (!(member.role.system && member.role.name === OWNER_ROLE)) return;
  const otherOwners = await db.membership.count({
    where: { organizationId, userId: { not: member.userId }, role: { organizationId: null, name: OWNER_ROLE } },
  });
  if (otherOwners === 0) throw conflict(`Cannot ${action} the last owner of the organization; make another member owner first`);
}

/** Op 18. Takes effect on the member's next request: authentication reads the role each time. */
export async function changeMemberRole(db: DbTx, principal: Principal, organizationId: string, userId: string, roleId: string) {
  await lockOrganization(db, organizationId);
  const member = await getMember(db, organizationId, userId);
  const role = await findAssignableRole(db, organizationId, roleId);
  if (member.roleId === role.id) return member;
  assertMayGrant(principal, member.role.permissions, "change the role of a member holding");
  assertMayGrant(principal, role.permissions, "assign a role granting");
  await assertNotLastOwner(db, organizationId, member, "demote");
  return db.membership.update({
    where: { organizationId_userId: { organizationId, userId } },
    data: { roleId: role.id },
    include: memberInclude,
  });
}

export async function removeMember(db: DbTx, principal: Principal, organizationId: string, userId: string) {
  await lockOrganization(db, organizationId);
  const member = await getMember(db, organizationId, userId);
  assertMayGrant(principal, member.role.permissions, "remove a member holding");
  await assertNotLastOwner(db, organizationId, member, "remove");
  await db.membership.delete({ where: { organizationId_userId: { organizationId, userId } } });
  // Their keys here are already dead without the membership (auth.ts); revoking them makes
  // sure they do not come back to life if the person is ever invited again.
  const keys = await db.apiKey.updateMany({ where: { organizationId, createdById: userId, revokedAt: null }, data: { revokedAt: new Date() } });
  return { userId, organizationId, removed: true as const, revokedApiKeys: keys.count };
}
