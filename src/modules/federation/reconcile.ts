// Applying the group mappings: each linked user should hold, in every organization a mapping
// of one of their groups points to, the mapped role. Only memberships this code created
// (FederationGrant) are ever changed or removed; memberships made by hand stay as they are.
// Reads are a few set-based queries; writes happen only for memberships that change.
import type { DbTx } from "../../db/client.js";
import { WILDCARD } from "../../trpc/permissions.js";
import type { ReconcileReport } from "./schemas.js";

interface Wanted {
  roleId: string;
  roleName: string;
  mappingId: string;
  weight: number;
}

/** When several mappings point one user to one organization, the broadest role wins. */
const weightOf = (permissions: string[]) => (permissions.includes(WILDCARD) ? Number.MAX_SAFE_INTEGER : permissions.length);

export async function reconcileMappings(db: DbTx, opts: { userIds?: string[]; dryRun: boolean }): Promise<ReconcileReport> {
  const mappings = await db.federationGroupMapping.findMany({
    where: { enabled: true },
    orderBy: { createdAt: "asc" },
    select: { id: true, group: true, organizationId: true, role: { select: { id: true, name: true, permissions: true } } },
  });
  const identities = await db.federatedIdentity.findMany({
    where: opts.userIds ? { userId: { in: opts.userIds } } : {},
    select: { userId: true, groups: true, user: { select: { email: true } } },
  });
  const userIds = identities.map((i) => i.userId);
  const memberships = userIds.length === 0 ? [] : await db.membership.findMany({
    where: { userId: { in: userIds } },
    select: { organizationId: true, userId: true, roleId: true, role: { select: { name: true } }, federationGrant: { select: { mappingId: true } } },
  });
  const byUser = new Map<string, typeof memberships>();
  for (const m of memberships) byUser.set(m.userId, [...(byUser.get(m.userId) ?? []), m]);

  const report: ReconcileReport = { dryRun: opts.dryRun, usersChecked: identities.length, mappingsApplied: mappings.length, added: [], updated: [], removed: [], skipped: [] };
  for (const identity of identities) {
    const groups = new Set(identity.groups);
    const wanted = new Map<string, Wanted>();
    for (const m of mappings) {
      if (!groups.has(m.group)) continue;
      const candidate = { roleId: m.role.id, roleName: m.role.name, mappingId: m.id, weight: weightOf(m.role.permissions) };
      const current = wanted.get(m.organizationId);
      if (!current || candidate.weight > current.weight) wanted.set(m.organizationId, candidate);
    }
    const held = new Map((byUser.get(identity.userId) ?? []).map((m) => [m.organizationId, m]));
    const base = { userId: identity.userId, email: identity.user.email };

    for (const [organizationId, want] of wanted) {
      const membership = held.get(organizationId);
      const entry = { ...base, organizationId, role: want.roleName };
      if (!membership) {
        report.added.push({ ...entry, previousRole: null });
        if (!opts.dryRun) {
          await db.membership.create({ data: { organizationId, userId: identity.userId, roleId: want.roleId } });
          await db.federationGrant.create({ data: { organizationId, userId: identity.userId, mappingId: want.mappingId } });
        }
      } else if (!membership.federationGrant) {
        if (membership.roleId !== want.roleId) {
          report.skipped.push({ ...entry, previousRole: membership.role.name, reason: "membership was made by hand; it is left as it is" });
        }
      } else if (membership.roleId !== want.roleId) {
        report.updated.push({ ...entry, previousRole: membership.role.name });
        if (!opts.dryRun) {
          await db.membership.update({ where: { organizationId_userId: { organizationId, userId: identity.userId } }, data: { roleId: want.roleId } });
          await db.federationGrant.update({ where: { organizationId_userId: { organizationId, userId: identity.userId } }, data: { mappingId: want.mappingId } });
        }
      } else if (membership.federationGrant.mappingId !== want.mappingId && !opts.dryRun) {
        await db.federationGrant.update({ where: { organizationId_userId: { organizationId, userId: identity.userId } }, data: { mappingId: want.mappingId } });
      }
    }
    for (const [organizationId, membership] of held) {
      if (!membership.federationGrant || wanted.has(organizationId)) continue;
      report.removed.push({ ...base, organizationId, role: null, previousRole: membership.role.name });
      // The grant goes with the membership (cascade).
      if (!opts.dryRun) await db.membership.delete({ where: { organizationId_userId: { organizationId, userId: identity.userId } } });
    }
  }
  return report;
}
