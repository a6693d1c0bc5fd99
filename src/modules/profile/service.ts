// The caller's own account. Changing the password bumps credentialsVersion (every access
// token of the user dies at once, see src/trpc/auth.ts), ends the other sessions and hands
// the current session a fresh access token so it carries on.
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { changedFields, type AuditNote } from "../../trpc/audit.js";
import { signAccessToken } from "../../trpc/auth.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import type { Principal } from "../../trpc/principal.js";
import { hashPassword, verifyPassword } from "../../lib/crypto.js";
import { pageOf } from "../../lib/paging.js";
import { NEWEST_FIRST, timeRange } from "../audit/service.js";
import { toActivityItem } from "../activity/schemas.js";
import { entityNamesOf, userNamesOf } from "../audit/service.js";
import { activityWhere, type ActivityType } from "../activity/types.js";
import { describeDevice, notificationPreferences, type NotificationPreferences } from "./schemas.js";

export async function getProfile(db: DbTx, principal: Principal) {
  const [user, org, membership] = await Promise.all([
    db.user.findUniqueOrThrow({ where: { id: principal.userId } }),
    db.organization.findUniqueOrThrow({ where: { id: principal.organizationId }, select: { id: true, name: true, slug: true } }),
    db.membership.findUnique({
      where: { organizationId_userId: { organizationId: principal.organizationId, userId: principal.userId } },
      select: { role: { select: { name: true } } },
    }),
  ]);
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    status: user.status,
    isSuperAdmin: user.isSuperAdmin,
    emailVerified: !!user.emailVerifiedAt,
    hasPassword: !!user.passwordHash,
    federatedIdentity: user.identityIssuer && user.identitySubject ? { issuer: user.identityIssuer, subject: user.identitySubject } : null,
    organization: org,
    role: membership?.role.name ?? null,
    lastLoginAt: user.lastLoginAt?.toISOString() ?? null,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
  };
}

async function assertCurrentPassword(stored: string | null, given: string | undefined) {
  if (!stored) throw badRequest("This account has no password: it signs in through the identity provider");
  if (!given) throw badRequest("Invalid input: currentPassword: required to change the e-mail address");
  if (!(await verifyPassword(given, stored))) throw badRequest("Invalid input: currentPassword: the current password is not correct");
}

export async function updateProfile(db: DbTx, principal: Principal, audit: AuditNote | null, input: { name?: string; email?: string; currentPassword?: string }) {
  const user = await db.user.findUniqueOrThrow({ where: { id: principal.userId } });
  const data: Prisma.UserUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  if (input.email !== undefined && input.email !== user.email) {
    await assertCurrentPassword(user.passwordHash, input.currentPassword);
    // Checked first so that the 409 names the problem; the unique index stays the guarantee.
    if (await db.user.findUnique({ where: { email: input.email }, select: { id: true } })) {
      throw conflict("Another account already uses this e-mail address");
    }
    data.email = input.email;
    data.emailVerifiedAt = null; // a new address is unverified until proven
  }
  if (audit) {
    audit.entityId = user.id;
    audit.changes = changedFields({ name: user.name, email: user.email }, { name: data.name, email: data.email });
  }
  if (Object.keys(data).length > 0) await db.user.update({ where: { id: user.id }, data });
  return getProfile(db, principal);
}

export async function getNotificationPreferences(db: DbTx, principal: Principal): Promise<NotificationPreferences> {
  const user = await db.user.findUniqueOrThrow({ where: { id: principal.userId }, select: { notificationPreferences: true } });
  // Stored documents are read through the schema: older or partial ones get today's defaults.
  const parsed = notificationPreferences.safeParse(user.notificationPreferences ?? {});
  return parsed.success ? parsed.data : notificationPreferences.parse({});
}

export async function putNotificationPreferences(db: DbTx, principal: Principal, audit: AuditNote | null, prefs: NotificationPreferences) {
  const before = await getNotificationPreferences(db, principal);
  await db.user.update({ where: { id: principal.userId }, data: { notificationPreferences: prefs as Prisma.InputJsonObject } });
  if (audit) {
    audit.entityId = principal.userId;
    audit.changes = changedFields(before as Record<string, unknown>, prefs as Record<string, unknown>);
  }
  return prefs;
}

export async function changePassword(
  services: Services,
  db: DbTx,
  principal: Principal & { sessionId: string },
  audit: AuditNote | null,
  input: { currentPassword: string; newPassword: string },
) {
  const user = await db.user.findUniqueOrThrow({ where: { id: principal.userId } });
  await assertCurrentPassword(user.passwordHash, input.currentPassword);
  if (input.newPassword === input.currentPassword) throw badRequest("Invalid input: newPassword: must differ from the current password");
  const now = new Date();
  const updated = await db.user.update({
    where: { id: user.id },
    data: { passwordHash: await hashPassword(input.newPassword), credentialsVersion: { increment: 1 } },
    select: { credentialsVersion: true },
  });
  const ended = await db.session.updateMany({
    where: { userId: user.id, id: { not: principal.sessionId }, revokedAt: null },
    data: { revokedAt: now },
  });
  // Outstanding reset links were made for the old password: they must not undo this change.
  await db.passwordResetToken.updateMany({ where: { userId: user.id, usedAt: null }, data: { usedAt: now } });
  const { token, expiresAt } = await signAccessToken(services, { userId: user.id, sessionId: principal.sessionId, credentialsVersion: updated.credentialsVersion });
  if (audit) {
    audit.entityId = user.id;
    audit.changes = { changed: "password", sessionsEnded: ended.count };
  }
  return { changed: true as const, sessionsEnded: ended.count, accessToken: token, tokenType: "Bearer" as const, expiresAt: expiresAt.toISOString() };
}

export async function listSessions(db: DbTx, principal: Principal, page: { limit: number; offset: number }) {
  const where: Prisma.SessionWhereInput = { userId: principal.userId, revokedAt: null, expiresAt: { gt: new Date() } };
  const [rows, total] = await Promise.all([
    db.session.findMany({ where, orderBy: [{ lastUsedAt: "desc" }, { id: "asc" }], take: page.limit, skip: page.offset }),
    db.session.count({ where }),
  ]);
  const items = rows.map((s) => ({
    id: s.id,
    current: s.id === principal.sessionId,
    device: describeDevice(s.userAgent),
    userAgent: s.userAgent,
    ipAddress: s.ipAddress,
    organizationId: s.organizationId,
    createdAt: s.createdAt.toISOString(),
    lastUsedAt: s.lastUsedAt.toISOString(),
    expiresAt: s.expiresAt.toISOString(),
  }));
  return pageOf(items, total, page.offset);
}

/** One session by id (the current one included: that is a sign-out), or every other one. */
export async function terminateSessions(db: DbTx, principal: Principal & { sessionId: string }, audit: AuditNote | null, id?: string) {
  const where: Prisma.SessionWhereInput = id
    ? { id, userId: principal.userId, revokedAt: null }
    : { userId: principal.userId, id: { not: principal.sessionId }, revokedAt: null };
  const ended = await db.session.updateMany({ where, data: { revokedAt: new Date() } });
  if (id && ended.count === 0) throw notFound("Session");
  if (audit) {
    audit.entityId = id ?? null;
    audit.changes = { scope: id ? "one" : "all-others", terminated: ended.count };
  }
  return { terminated: ended.count, currentEnded: id === principal.sessionId };
}

/** The caller's own activity, across every organization they acted in. */
export async function ownActivity(db: DbTx, principal: Principal, f: { types?: ActivityType[]; from?: string; to?: string; limit: number; offset: number }) {
  const where: Prisma.AuditEntryWhereInput = {
    AND: [{ userId: principal.userId }, activityWhere(f.types), f.from || f.to ? { createdAt: timeRange(f.from, f.to) } : {}],
  };
  const [rows, total] = await Promise.all([
    db.auditEntry.findMany({ where, orderBy: NEWEST_FIRST, take: f.limit, skip: f.offset }),
    db.auditEntry.count({ where }),
  ]);
  const [names, entities] = await Promise.all([userNamesOf(db, rows), entityNamesOf(db, rows)]);
  return pageOf(rows.map((r) => toActivityItem(r, names, entities)), total, f.offset);
}
