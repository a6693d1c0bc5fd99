// User figures in one statement (count ... FILTER), over the users the caller may see.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";

export async function userStats(db: DbTx, principal: Principal) {
  const scope = principal.isSuperAdmin
    ? Prisma.sql`TRUE`
    : Prisma.sql`EXISTS (SELECT 1 FROM "Membership" m WHERE m."userId" = u.id AND m."organizationId" = ${principal.organizationId}::uuid)`;
  const [row] = await db.$queryRaw<Record<string, number>[]>`
    SELECT count(*)::int                                                     AS total,
           count(*) FILTER (WHERE u.status = 'active')::int                  AS active,
           count(*) FILTER (WHERE u.status = 'disabled')::int                AS disabled,
           count(*) FILTER (WHERE u."isSuperAdmin")::int                     AS "superAdmins",
           count(*) FILTER (WHERE u."emailVerifiedAt" IS NOT NULL)::int      AS verified,
           count(*) FILTER (WHERE u."emailVerifiedAt" IS NULL)::int          AS unverified,
           count(*) FILTER (WHERE u."passwordHash" IS NOT NULL)::int         AS "withPassword",
           count(*) FILTER (WHERE u."identitySubject" IS NOT NULL)::int      AS "withIdentityLink",
           count(*) FILTER (WHERE u."lastLoginAt" IS NULL)::int              AS "neverLoggedIn",
           count(*) FILTER (WHERE GREATEST(u."lastLoginAt", u."lastActivityAt") > now() - interval '30 days')::int AS "activeLast30Days"
      FROM "User" u
     WHERE ${scope}`;
  return row as {
    total: number; active: number; disabled: number; superAdmins: number; verified: number; unverified: number;
    withPassword: number; withIdentityLink: number; neverLoggedIn: number; activeLast30Days: number;
  };
}
