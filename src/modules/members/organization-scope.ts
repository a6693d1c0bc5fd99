// Paths that name an organization (/organizations/{orgId}/members, .../api-keys) act in it
// only when it is the caller's own; a Super Admin may name any. Anything else is a 404, so
// another tenant's existence does not leak.
import type { DbTx } from "../../db/client.js";
import type { AuditNote } from "../../trpc/audit.js";
import type { Principal } from "../../trpc/principal.js";
import { notFound } from "../../trpc/errors.js";

/**
 * Resolves {orgId}. Given the mutation's audit note, the entry is filed under that
 * organization (a Super Admin acting in another one), not the caller's own.
 */
export async function organizationOfPath(db: DbTx, principal: Principal, orgId: string, audit?: AuditNote | null) {
  if (!principal.isSuperAdmin && orgId !== principal.organizationId) throw notFound("Organization");
  const org = await db.organization.findUnique({ where: { id: orgId }, select: { id: true, name: true, status: true } });
  if (!org) throw notFound("Organization");
  if (audit) audit.organizationId = org.id;
  return org;
}

/**
 * Serializes changes to one organization's memberships: the "never the last owner" rule
 * reads the owners and then writes, and two concurrent removals must not both pass.
 */
export async function lockOrganization(db: DbTx, orgId: string) {
  await db.$queryRaw`SELECT 1 FROM "Organization" WHERE id = ${orgId}::uuid FOR UPDATE`;
}
