// The two rules that keep an installation administrable:
//   * there is always at least one active Super Admin (nobody could restore anything else);
//   * an organization never loses its last owner through a user operation.
// Both are checked inside the caller's transaction, set-based, for one user or a bulk list.
import type { DbTx } from "../../db/client.js";

/**
 * Ids of the active Super Admins other than `excluded`. The rows are locked (FOR UPDATE) so
 * two concurrent demotions cannot each see the other as "the remaining one".
 */
export async function otherActiveSuperAdmins(db: DbTx, excluded: string[]): Promise<string[]> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    SELECT id::text AS id FROM "User" WHERE "isSuperAdmin" AND status = 'active' ORDER BY id FOR UPDATE`;
  const skip = new Set(excluded);
  return rows.map((r) => r.id).filter((id) => !skip.has(id));
}

export const LAST_SUPER_ADMIN = "This is the last active Super Admin; grant Super Admin to another user first";

/**
 * Memberships of `userIds` that are the only owner memberships of their organization once
 * all of `userIds` are gone (so a bulk removal of both owners is refused too).
 * `organizationId` narrows the check to one organization.
 */
export async function lastOwnerships(db: DbTx, userIds: string[], organizationId?: string) {
  if (userIds.length === 0) return [];
  const owner = { system: true, organizationId: null, name: "owner" };
  return db.membership.findMany({
    where: {
      userId: { in: userIds },
      ...(organizationId ? { organizationId } : {}),
      role: owner,
      organization: { memberships: { none: { userId: { notIn: userIds }, role: owner } } },
    },
    select: { userId: true, organizationId: true, organization: { select: { name: true } } },
  });
}

export function lastOwnerMessage(organizationNames: string[]) {
  return `The user is the last owner of ${organizationNames.map((n) => `"${n}"`).join(", ")}; make someone else owner first`;
}
