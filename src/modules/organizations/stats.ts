// Organization statistics, computed by the database in one statement each (aggregates with
// FILTER and GROUP BY), never by loading rows and counting them here.

import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";

export interface OrganizationStats {
  userCount: number;
  activeUsers: number;
  deviceCount: number;
  activeDevices: number;
  deploymentCount: number;
  runningDeployments: number;
}

/** Device states that count as active in the spec's `activeDevices`. */
const ACTIVE_DEVICE_STATUSES = ["online", "provisioned"];

/** The `stats` object for each of the given organizations, in one query. */
export async function statsByOrganization(db: DbTx, ids: string[]): Promise<Map<string, OrganizationStats>> {
  if (ids.length === 0) return new Map();
  const idList = Prisma.join(ids.map((id) => Prisma.sql`${id}::uuid`));
  const rows = await db.$queryRaw<({ id: string } & OrganizationStats)[]>`
    SELECT o.id::text AS id,
           COALESCE(m.user_count, 0)::int      AS "userCount",
           COALESCE(m.active_users, 0)::int    AS "activeUsers",
           COALESCE(d.device_count, 0)::int    AS "deviceCount",
           COALESCE(d.active_devices, 0)::int  AS "activeDevices",
           COALESCE(dp.deployment_count, 0)::int AS "deploymentCount",
           COALESCE(dp.running, 0)::int        AS "runningDeployments"
      FROM "Organization" o
      LEFT JOIN (
            SELECT ms."organizationId",
                   count(*)                                    AS user_count,
                   count(*) FILTER (WHERE u.status = 'active') AS active_users
              FROM "Membership" ms
              JOIN "User" u ON u.id = ms."userId"
             WHERE ms."organizationId" IN (${idList})
             GROUP BY ms."organizationId"
           ) m ON m."organizationId" = o.id
      LEFT JOIN (
            SELECT dv."organizationId",
                   count(*)                                                          AS device_count,
                   count(*) FILTER (WHERE dv.status IN (${Prisma.join(ACTIVE_DEVICE_STATUSES)})) AS active_devices
              FROM "Device" dv
             WHERE dv."organizationId" IN (${idList})
             GROUP BY dv."organizationId"
           ) d ON d."organizationId" = o.id
      LEFT JOIN (
            SELECT dep."organizationId", count(*) AS deployment_count, count(*) FILTER (WHERE dep.status = 'running') AS running
              FROM "Deployment" dep
             WHERE dep."organizationId" IN (${idList})
             GROUP BY dep."organizationId"
           ) dp ON dp."organizationId" = o.id
     WHERE o.id IN (${idList})`;
  return new Map(rows.map(({ id, ...stats }) => [id, stats]));
}

export interface AggregateStats {
  total: number;
  byStatus: { active: number; suspended: number; pending: number; disabled: number };
  empty: number;
  createdLast30Days: number;
  userCount: number;
  deviceCount: number;
  deploymentCount: number;
}

/** Platform-wide figures (Super Admin), one statement. */
export async function aggregateStats(db: DbTx): Promise<AggregateStats> {
  const [row] = await db.$queryRaw<Record<string, number>[]>`
    SELECT count(*)::int                                             AS total,
           count(*) FILTER (WHERE o.status = 'active')::int          AS active,
           count(*) FILTER (WHERE o.status = 'suspended')::int       AS suspended,
           count(*) FILTER (WHERE o.status = 'pending')::int         AS pending,
           count(*) FILTER (WHERE o.status = 'disabled')::int        AS disabled,
           count(*) FILTER (WHERE o."createdAt" > now() - interval '30 days')::int AS "createdLast30Days",
           count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM "Membership" ms WHERE ms."organizationId" = o.id)
                              AND NOT EXISTS (SELECT 1 FROM "Device" dv WHERE dv."organizationId" = o.id)
                              AND NOT EXISTS (SELECT 1 FROM "Deployment" dp WHERE dp."organizationId" = o.id)
                           )::int                                    AS empty,
           (SELECT count(*) FROM "User")::int                        AS "userCount",
           (SELECT count(*) FROM "Device")::int                      AS "deviceCount",
           (SELECT count(*) FROM "Deployment")::int                  AS "deploymentCount"
      FROM "Organization" o`;
  return {
    total: row.total,
    byStatus: { active: row.active, suspended: row.suspended, pending: row.pending, disabled: row.disabled },
    empty: row.empty,
    createdLast30Days: row.createdLast30Days,
    userCount: row.userCount,
    deviceCount: row.deviceCount,
    deploymentCount: row.deploymentCount,
  };
}
