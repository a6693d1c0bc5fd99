// What lives inside an organization. It decides whether an organization may be deleted
// (devices and deployments must be gone first: deleting them is never a side effect of
// deleting their organization) and which organizations count as empty.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { pageOf } from "../../lib/paging.js";

export interface DeleteBlocker {
  /** plural noun used in messages and in the `blockers` object: "devices" */
  kind: string;
  /** how many there are in each of the given organizations (absent = 0), one query */
  count(db: DbTx, organizationIds: string[]): Promise<Map<string, number>>;
}

const devices: DeleteBlocker = {
  kind: "devices",
  async count(db, organizationIds) {
    const rows = await db.device.groupBy({
      by: ["organizationId"],
      where: { organizationId: { in: organizationIds } },
      _count: { _all: true },
    });
    return new Map(rows.map((r) => [r.organizationId, r._count._all]));
  },
};

const deployments: DeleteBlocker = {
  kind: "deployments",
  async count(db, organizationIds) {
    const rows = await db.deployment.groupBy({
      by: ["organizationId"],
      where: { organizationId: { in: organizationIds } },
      _count: { _all: true },
    });
    return new Map(rows.map((r) => [r.organizationId, r._count._all]));
  },
};

export const DELETE_BLOCKERS: readonly DeleteBlocker[] = [devices, deployments];

/** Per organization: kind -> count, for every blocker (zeros included). */
export async function countBlockers(db: DbTx, organizationIds: string[]) {
  const counts = await Promise.all(DELETE_BLOCKERS.map((b) => b.count(db, organizationIds)));
  return new Map(organizationIds.map((id) => [
    id,
    Object.fromEntries(DELETE_BLOCKERS.map((b, i) => [b.kind, counts[i].get(id) ?? 0])) as Record<string, number>,
  ]));
}

/** Empty: nobody is a member and nothing of the fleet lives in it. */
export const EMPTY_ORGANIZATION: Prisma.OrganizationWhereInput = {
  memberships: { none: {} },
  devices: { none: {} },
  deployments: { none: {} },
};

export async function listEmptyOrganizations(db: DbTx, page: { limit: number; offset: number }) {
  const [items, total] = await Promise.all([
    db.organization.findMany({ where: EMPTY_ORGANIZATION, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: page.limit, skip: page.offset }),
    db.organization.count({ where: EMPTY_ORGANIZATION }),
  ]);
  return pageOf(items, total, page.offset);
}
