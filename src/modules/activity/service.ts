// The activity feed: audit entries of the activity types (types.ts), newest first, with the
// user's name and e-mail, and the device's name, each joined in one query per page. Scope: the caller's organization;
// a Super Admin may look at any organization (or all of them).
import type { DbTx } from "../../db/client.js";
import { Prisma, type AuditEntry } from "../../generated/prisma/client.js";
import type { Principal } from "../../trpc/principal.js";
import { notFound } from "../../trpc/errors.js";
import { pageOf } from "../../lib/paging.js";
import { entityNamesOf, NEWEST_FIRST, timeRange, userNamesOf, visibleEntries } from "../audit/service.js";
import { toActivityItem } from "./schemas.js";
import { ACTIVITY_TYPES, activityWhere, activityWhereOf, type ActivityType } from "./types.js";

export interface ActivityFilter {
  organizationId?: string;
  userId?: string;
  types?: ActivityType[];
  from?: string;
  to?: string;
}

export function activityFilterWhere(principal: Principal, f: ActivityFilter): Prisma.AuditEntryWhereInput {
  return {
    AND: [
      visibleEntries(principal, f.organizationId),
      activityWhere(f.types),
      f.userId ? { userId: f.userId } : {},
      f.from || f.to ? { createdAt: timeRange(f.from, f.to) } : {},
    ],
  };
}

export async function listActivity(db: DbTx, principal: Principal, f: ActivityFilter & { limit: number; offset: number }) {
  const where = activityFilterWhere(principal, f);
  const [rows, total] = await Promise.all([
    db.auditEntry.findMany({ where, orderBy: NEWEST_FIRST, take: f.limit, skip: f.offset }),
    db.auditEntry.count({ where }),
  ]);
  const [names, entities] = await Promise.all([userNamesOf(db, rows), entityNamesOf(db, rows)]);
  return pageOf(rows.map((r) => toActivityItem(r, names, entities)), total, f.offset);
}

export async function recentActivity(db: DbTx, principal: Principal, limit: number) {
  const rows = await db.auditEntry.findMany({ where: activityFilterWhere(principal, {}), orderBy: NEWEST_FIRST, take: limit });
  const [names, entities] = await Promise.all([userNamesOf(db, rows), entityNamesOf(db, rows)]);
  return { items: rows.map((r) => toActivityItem(r, names, entities)) };
}

/** A user of another tenant is a 404 unless they acted in the caller's organization. */
export async function assertUserVisible(db: DbTx, principal: Principal, userId: string) {
  const known = principal.isSuperAdmin
    ? await db.user.findUnique({ where: { id: userId }, select: { id: true } })
    : (await db.membership.findUnique({ where: { organizationId_userId: { organizationId: principal.organizationId, userId } } }))
      ?? (await db.auditEntry.findFirst({ where: { organizationId: principal.organizationId, userId }, select: { id: true } }));
  if (!known) throw notFound("User");
}

/** Another organization is a 404 for anyone but a Super Admin. */
export async function assertOrganizationVisible(db: DbTx, principal: Principal, organizationId: string) {
  const visible = principal.isSuperAdmin || organizationId === principal.organizationId;
  if (!visible || !(await db.organization.findUnique({ where: { id: organizationId }, select: { id: true } }))) {
    throw notFound("Organization");
  }
}

export async function activitySummary(db: DbTx, principal: Principal, f: { organizationId?: string; days: number }) {
  const to = new Date();
  const from = new Date(to.getTime() - f.days * 86_400_000);
  const base: Prisma.AuditEntryWhereInput = { AND: [visibleEntries(principal, f.organizationId), { createdAt: { gte: from, lt: to } }] };
  const perType = await Promise.all(ACTIVITY_TYPES.map((t) => db.auditEntry.count({ where: { AND: [base, activityWhereOf(t)] } })));
  const all: Prisma.AuditEntryWhereInput = { AND: [base, activityWhere(), { userId: { not: null } }] };
  const [users, top] = await Promise.all([
    db.auditEntry.groupBy({ by: ["userId"], where: all, _count: { _all: true } }),
    db.auditEntry.groupBy({ by: ["userId"], where: all, _count: { _all: true }, orderBy: { _count: { userId: "desc" } }, take: 5 }),
  ]);
  const names = await userNamesOf(db, top);
  const byType = Object.fromEntries(ACTIVITY_TYPES.map((t, i) => [t, perType[i]])) as Record<ActivityType, number>;
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    days: f.days,
    total: perType.reduce((a, b) => a + b, 0),
    byType,
    activeUsers: users.length,
    topUsers: top.map((u) => ({
      userId: u.userId!,
      email: names.get(u.userId!)?.email ?? null,
      name: names.get(u.userId!)?.name ?? null,
      count: u._count._all,
    })),
  };
}

interface InactiveRow {
  userId: string;
  email: string;
  name: string;
  role: string;
  status: string;
  joinedAt: Date;
  lastActivityAt: Date | null;
}

/**
 * Members of one organization with no activity for `days` days: the latest of their sign-in,
 * their last authenticated request (User.lastActivityAt) and their last successful audited
 * action in this organization. Members who joined less than `days` ago and were never
 * active are not listed yet. One set-based query; longest inactive first.
 */
export async function inactivityReport(db: DbTx, organizationId: string, f: { days: number; limit: number; offset: number }) {
  const now = new Date();
  const cutoff = new Date(now.getTime() - f.days * 86_400_000);
  const inactive = Prisma.sql`
    WITH members AS (
      SELECT m."userId", u.email, u.name, r.name AS role, u.status, m."createdAt" AS "joinedAt",
             GREATEST(u."lastLoginAt", u."lastActivityAt",
               (SELECT max(a."createdAt") FROM "AuditEntry" a
                 WHERE a."userId" = m."userId" AND a."organizationId" = m."organizationId" AND a.outcome = 'success')) AS "lastActivityAt"
      FROM "Membership" m
      JOIN "User" u ON u.id = m."userId"
      JOIN "Role" r ON r.id = m."roleId"
      WHERE m."organizationId" = ${organizationId}::uuid
    )
    SELECT * FROM members WHERE COALESCE("lastActivityAt", "joinedAt") < ${cutoff}`;
  const [rows, [{ count }]] = await Promise.all([
    db.$queryRaw<InactiveRow[]>`${inactive} ORDER BY COALESCE("lastActivityAt", "joinedAt") ASC, email ASC LIMIT ${f.limit} OFFSET ${f.offset}`,
    db.$queryRaw<{ count: bigint }[]>`SELECT count(*) AS count FROM (${inactive}) AS inactive`,
  ]);
  const total = Number(count);
  const items = rows.map((r) => {
    const since = r.lastActivityAt ?? r.joinedAt;
    return {
      userId: r.userId,
      email: r.email,
      name: r.name,
      role: r.role,
      status: r.status,
      joinedAt: new Date(r.joinedAt).toISOString(),
      lastActivityAt: r.lastActivityAt ? new Date(r.lastActivityAt).toISOString() : null,
      daysInactive: Math.floor((now.getTime() - new Date(since).getTime()) / 86_400_000),
    };
  });
  return { ...pageOf(items, total, f.offset), days: f.days, cutoff: cutoff.toISOString(), organizationId };
}
