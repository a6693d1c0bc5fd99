// Reading the audit trail. Entries are only ever written by the procedure layer
// (src/trpc/procedures.ts) and the sign-in code; nothing here changes or deletes one.
// Tenancy: a caller sees their own organization's entries; a Super Admin sees every entry,
// including those without an organization (failed sign-ins of unknown e-mails, the system).
import type { DbTx } from "../../db/client.js";
import { Prisma, type AuditEntry } from "../../generated/prisma/client.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit } from "../../trpc/audit.js";
import { badRequest, notFound } from "../../trpc/errors.js";
import type { Principal } from "../../trpc/principal.js";
import { pageOf } from "../../lib/paging.js";
import { containsText } from "../../lib/like.js";
import type { UserNames } from "../activity/schemas.js";
import { ACTOR_TYPES, OUTCOMES, toAuditEntryDto, type AuditFilter } from "./schemas.js";

const DAY_MS = 86_400_000;

/** The exclusive end of a range from an ISO input: a date-only `to` covers that whole day. */
const rangeEnd = (to: string) => new Date(new Date(to).getTime() + (/^\d{4}-\d{2}-\d{2}$/.test(to) ? DAY_MS : 0));

/** Whether [from, to) holds no instant at all (inputs that name their bounds otherwise check it themselves). */
export const isEmptyRange = (from: string, to: string) => new Date(from) >= rangeEnd(to);

/** [from, to) from ISO inputs; a date-only `to` covers that whole day. */
export function timeRange(from?: string, to?: string): { gte?: Date; lt?: Date } | undefined {
  if (!from && !to) return undefined;
  if (from && to && isEmptyRange(from, to)) throw badRequest("Invalid input: from must be before to");
  return { ...(from ? { gte: new Date(from) } : {}), ...(to ? { lt: rangeEnd(to) } : {}) };
}

/** The entries a caller may read: their organization's, or all of them for a Super Admin. */
export function visibleEntries(principal: Principal, organizationId?: string): Prisma.AuditEntryWhereInput {
  if (!principal.isSuperAdmin) return { organizationId: principal.organizationId };
  return organizationId ? { organizationId } : {};
}

export function auditWhere(principal: Principal, f: Partial<AuditFilter>): Prisma.AuditEntryWhereInput {
  const action = f.action?.endsWith("*") ? { startsWith: f.action.slice(0, -1) } : f.action;
  return {
    AND: [
      visibleEntries(principal, f.organizationId),
      {
        ...(f.actorType ? { actorType: f.actorType } : {}),
        ...(f.actorId ? { actorId: f.actorId } : {}),
        ...(f.userId ? { userId: f.userId } : {}),
        ...(action ? { action } : {}),
        ...(f.entityType ? { entityType: f.entityType } : {}),
        ...(f.entityId ? { entityId: f.entityId } : {}),
        ...(f.outcome ? { outcome: f.outcome } : {}),
        ...(f.requestId ? { requestId: f.requestId } : {}),
        ...(f.from || f.to ? { createdAt: timeRange(f.from, f.to) } : {}),
      },
      f.search ? { OR: SEARCHED_FIELDS.map((field) => ({ [field]: containsText(f.search!) })) } : {},
    ],
  };
}

/** The text columns `search` looks in. It scans the caller's organization's entries (the
 *  organizationId/createdAt index bounds it, with the other filters); no trigram index. */
const SEARCHED_FIELDS = ["action", "entityType", "entityId", "actorId", "requestId", "message"] as const;

/** Newest first; the id breaks ties between entries of the same millisecond. */
export const NEWEST_FIRST: Prisma.AuditEntryOrderByWithRelationInput[] = [{ createdAt: "desc" }, { id: "desc" }];

export async function searchAudit(db: DbTx, principal: Principal, f: Partial<AuditFilter> & { limit: number; offset: number }) {
  const where = auditWhere(principal, f);
  const [rows, total] = await Promise.all([
    db.auditEntry.findMany({ where, orderBy: NEWEST_FIRST, take: f.limit, skip: f.offset }),
    db.auditEntry.count({ where }),
  ]);
  // The people behind the page's entries and the devices they concern: one lookup each for
  // the page, not one per row.
  const [names, entities] = await Promise.all([userNamesOf(db, rows), entityNamesOf(db, rows)]);
  return pageOf(rows.map((r) => ({
    ...toAuditEntryDto(r),
    user: (r.userId && names.get(r.userId)) || null,
    entityName: entityNameOf(entities, r),
    actorName: actorNameOf(entities, r),
  })), total, f.offset);
}

/** The entity types whose entries name a device: the procedures' "devices", and "device". */
const DEVICE_ENTITIES = new Set(["devices", "device"]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Names of the devices `entries` concern or were made by, by id (their current name), in one query. */
export type EntityNames = Map<string, string>;

type NamedParts = Pick<AuditEntry, "entityType" | "entityId"> & Partial<Pick<AuditEntry, "actorType" | "actorId">>;

/** The device ids an entry names: its entity when that is a device, its actor when a device acted. */
function deviceIdsOf(e: NamedParts): string[] {
  const ids: string[] = [];
  if (e.entityType && DEVICE_ENTITIES.has(e.entityType) && e.entityId && UUID.test(e.entityId)) ids.push(e.entityId);
  if (e.actorType === "device" && e.actorId && UUID.test(e.actorId)) ids.push(e.actorId);
  return ids;
}

export async function entityNamesOf(db: DbTx, entries: NamedParts[]): Promise<EntityNames> {
  const ids = [...new Set(entries.flatMap(deviceIdsOf))];
  if (ids.length === 0) return new Map();
  const devices = await db.device.findMany({ where: { id: { in: ids } }, select: { id: true, name: true } });
  return new Map(devices.map((d) => [d.id, d.name]));
}

/** The name of the device that acted (actorType device), or null (another actor, or the device is gone). */
export function actorNameOf(names: EntityNames, e: Pick<AuditEntry, "actorType" | "actorId">): string | null {
  return (e.actorType === "device" && e.actorId && names.get(e.actorId)) || null;
}

/** The entry's entity's name, or null (not a named kind, or the device is gone). */
export function entityNameOf(names: EntityNames, e: Pick<AuditEntry, "entityType" | "entityId">): string | null {
  return (e.entityType && DEVICE_ENTITIES.has(e.entityType) && e.entityId && names.get(e.entityId)) || null;
}

/** The e-mail and name of the people behind `entries`, in one query. */
export async function userNamesOf(db: DbTx, entries: Pick<AuditEntry, "userId">[]): Promise<UserNames> {
  const ids = [...new Set(entries.map((e) => e.userId).filter((id): id is string => !!id))];
  if (ids.length === 0) return new Map();
  const users = await db.user.findMany({ where: { id: { in: ids } }, select: { id: true, email: true, name: true } });
  return new Map(users.map((u) => [u.id, { email: u.email, name: u.name }]));
}

export async function getAuditEntry(db: DbTx, principal: Principal, id: string) {
  const entry = await db.auditEntry.findFirst({ where: { id, ...visibleEntries(principal) } });
  if (!entry) throw notFound("Audit entry");
  return toAuditEntryDto(entry);
}

function countsOf<K extends string>(keys: readonly K[], groups: { key: string | null; count: number }[]) {
  const out = Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
  for (const g of groups) if (g.key && g.key in out) out[g.key as K] = g.count;
  return out;
}

export async function auditStats(db: DbTx, principal: Principal, f: { organizationId?: string; from?: string; to?: string }) {
  const where = auditWhere(principal, f);
  const range = timeRange(f.from, f.to);
  // The daily series covers the requested range, or the last 30 days.
  const dayFrom = range?.gte ?? new Date(Date.now() - 30 * DAY_MS);
  const dayTo = range?.lt ?? new Date(Date.now() + 1000);
  const scope = visibleEntries(principal, f.organizationId);
  const orgClause = typeof scope.organizationId === "string" ? Prisma.sql`AND "organizationId" = ${scope.organizationId}::uuid` : Prisma.empty;
  const [total, byOutcome, byActor, byAction, byEntity, byDay] = await Promise.all([
    db.auditEntry.count({ where }),
    db.auditEntry.groupBy({ by: ["outcome"], where, _count: { _all: true } }),
    db.auditEntry.groupBy({ by: ["actorType"], where, _count: { _all: true } }),
    db.auditEntry.groupBy({ by: ["action"], where, _count: { _all: true }, orderBy: { _count: { action: "desc" } }, take: 20 }),
    db.auditEntry.groupBy({ by: ["entityType"], where: { AND: [where, { entityType: { not: null } }] }, _count: { _all: true }, orderBy: { _count: { entityType: "desc" } }, take: 20 }),
    db.$queryRaw<{ day: Date; count: bigint }[]>`
      SELECT date_trunc('day', "createdAt") AS day, count(*) AS count FROM "AuditEntry"
      WHERE "createdAt" >= ${dayFrom} AND "createdAt" < ${dayTo} ${orgClause}
      GROUP BY 1 ORDER BY 1`,
  ]);
  return {
    total,
    byOutcome: countsOf(OUTCOMES, byOutcome.map((g) => ({ key: g.outcome, count: g._count._all }))),
    byActorType: countsOf(ACTOR_TYPES, byActor.map((g) => ({ key: g.actorType, count: g._count._all }))),
    topActions: byAction.map((g) => ({ action: g.action, count: g._count._all })),
    topEntityTypes: byEntity.map((g) => ({ entityType: g.entityType!, count: g._count._all })),
    byDay: byDay.map((d) => ({ date: new Date(d.day).toISOString().slice(0, 10), count: Number(d.count) })),
    from: range?.gte?.toISOString() ?? null,
    to: range?.lt?.toISOString() ?? null,
  };
}

/** "Record authentication event": a client (sign-in front, SSO gateway, UI) reports an event. */
export async function recordAuthEvent(
  db: DbTx,
  request: RequestInfo,
  principal: Principal,
  input: { eventType: string; outcome: (typeof OUTCOMES)[number]; userId?: string; organizationId?: string; message?: string; details?: Record<string, unknown> },
) {
  // Anyone may report about themselves; only a Super Admin reports about another user or organization.
  const otherUser = !!input.userId && input.userId !== principal.userId;
  const otherOrg = !!input.organizationId && input.organizationId !== principal.organizationId;
  if ((otherUser || otherOrg) && !principal.isSuperAdmin) throw notFound(otherUser ? "User" : "Organization");
  const userId = input.userId ?? principal.userId;
  if (otherUser && !(await db.user.findUnique({ where: { id: userId }, select: { id: true } }))) throw notFound("User");
  if (otherOrg && !(await db.organization.findUnique({ where: { id: input.organizationId }, select: { id: true } }))) {
    throw notFound("Organization");
  }
  const reportedBy = principal.apiKeyId ? `API key ${principal.apiKeyId}` : `user ${principal.userId}`;
  const entry = await writeAudit(db, request, principal, {
    action: `auth.event.${input.eventType}`,
    outcome: input.outcome,
    organizationId: input.organizationId ?? principal.organizationId,
    entityType: "user",
    entityId: userId,
    changes: input.details,
    message: [input.message, `reported by ${reportedBy}`].filter(Boolean).join("; "),
    actor: { type: "user", id: userId, userId },
  });
  return toAuditEntryDto(entry);
}
