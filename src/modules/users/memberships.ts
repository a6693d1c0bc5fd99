// A user's memberships, changed from the user's side (Super Admin): add to an organization
// with a role, change that role, remove. The rules (assignable roles, never the last owner,
// nobody hands out more than they hold, keys revoked on removal) are the members module's
// own (src/modules/members/service.ts): one place decides them, whichever path is used.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { findAssignableRole } from "../roles/service.js";
import { assertMayGrant } from "../roles/access.js";
import { changeMemberRole, removeMember } from "../members/service.js";
import { lockOrganization } from "../members/organization-scope.js";
import { getUser } from "./service.js";

const membershipInclude = { organization: { select: { name: true, slug: true } }, role: { select: { name: true } } } as const;

const readMembership = (db: DbTx, organizationId: string, userId: string) =>
  db.membership.findUniqueOrThrow({ where: { organizationId_userId: { organizationId, userId } }, include: membershipInclude });

export async function addToOrganization(db: DbTx, principal: Principal, input: { id: string; organizationId: string; roleId: string }) {
  const user = await getUser(db, principal, input.id);
  const org = await db.organization.findUnique({ where: { id: input.organizationId }, select: { id: true } });
  if (!org) throw notFound("Organization");
  await lockOrganization(db, org.id);
  const role = await findAssignableRole(db, org.id, input.roleId);
  assertMayGrant(principal, role.permissions, "assign a role granting");
  const existing = await db.membership.findUnique({ where: { organizationId_userId: { organizationId: org.id, userId: user.id } } });
  if (existing) throw conflict("User is already a member of this organization");
  return db.membership.create({ data: { organizationId: org.id, userId: user.id, roleId: role.id }, include: membershipInclude });
}

/** Sessions acting in the organization end too; the user's keys there are revoked by removeMember. */
export async function removeFromOrganization(db: DbTx, principal: Principal, userId: string, organizationId: string) {
  const user = await getUser(db, principal, userId);
  await removeMember(db, principal, organizationId, user.id);
  await db.session.updateMany({ where: { userId: user.id, organizationId, revokedAt: null }, data: { revokedAt: new Date() } });
  return { userId: user.id, organizationId, removed: true as const };
}

/** The new role applies from the next request: authentication reads it every time. */
export async function updateMembershipRole(db: DbTx, principal: Principal, input: { id: string; roleId: string; organizationId?: string }) {
  const organizationId = input.organizationId ?? principal.organizationId;
  const user = await getUser(db, principal, input.id);
  await changeMemberRole(db, principal, organizationId, user.id, input.roleId);
  return readMembership(db, organizationId, user.id);
}
