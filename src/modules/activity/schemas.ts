// Activity items (audit entries seen as a feed) and the inactivity report row.
import { z } from "zod";
import type { AuditEntry } from "../../generated/prisma/client.js";
import { isoInstant } from "../../lib/iso-time.js";
import { ACTIVITY_TYPES, activityTypeOf, describeActivity, type ActivityType } from "./types.js";
import { actorNameOf, entityNameOf, type EntityNames } from "../audit/service.js";

export const activityTypesInput = z.array(z.enum(ACTIVITY_TYPES)).max(ACTIVITY_TYPES.length);

export const activityFilterFields = {
  types: activityTypesInput.optional().describe(`any of ${ACTIVITY_TYPES.join(", ")}; repeat the parameter for several`),
  from: isoInstant.optional(),
  to: isoInstant.optional(),
};

export const activityItemOutput = z.object({
  id: z.string().uuid().describe("the audit entry id"),
  type: z.enum(ACTIVITY_TYPES),
  summary: z.string(),
  action: z.string(),
  outcome: z.string(),
  organizationId: z.string().uuid().nullable(),
  userId: z.string().uuid().nullable(),
  userEmail: z.string().nullable(),
  userName: z.string().nullable(),
  actorType: z.string(),
  actorId: z.string().nullable(),
  actorName: z.string().nullable().describe("the acting device's current name (actorType device); null for other actors, or when the device is gone"),
  entityType: z.string().nullable(),
  entityId: z.string().nullable(),
  entityName: z.string().nullable().describe("the entity's name: a device's current name; null for other kinds, or when the device is gone"),
  sourceIp: z.string().nullable(),
  userAgent: z.string().nullable(),
  createdAt: z.string().datetime(),
});
export type ActivityItem = z.infer<typeof activityItemOutput>;

export type UserNames = Map<string, { email: string; name: string }>;

export function toActivityItem(e: AuditEntry, users: UserNames, entities: EntityNames = new Map()): ActivityItem {
  const type = (activityTypeOf(e) ?? "change") as ActivityType;
  const user = e.userId ? users.get(e.userId) : undefined;
  const entityName = entityNameOf(entities, e);
  return {
    id: e.id,
    type,
    summary: describeActivity(type, e, entityName),
    action: e.action,
    outcome: e.outcome,
    organizationId: e.organizationId,
    userId: e.userId,
    userEmail: user?.email ?? null,
    userName: user?.name ?? null,
    actorType: e.actorType,
    actorId: e.actorId,
    actorName: actorNameOf(entities, e),
    entityType: e.entityType,
    entityId: e.entityId,
    entityName,
    sourceIp: e.sourceIp,
    userAgent: e.userAgent,
    createdAt: e.createdAt.toISOString(),
  };
}

export const ACTIVITY_CSV_COLUMNS: { header: string; value: (a: ActivityItem) => unknown }[] = [
  "id", "createdAt", "type", "summary", "action", "outcome", "organizationId", "userId", "userEmail", "userName",
  "actorType", "actorId", "actorName", "entityType", "entityId", "entityName", "sourceIp", "userAgent",
].map((k) => ({ header: k, value: (a: ActivityItem) => a[k as keyof ActivityItem] }));

export const inactiveMemberOutput = z.object({
  userId: z.string().uuid(),
  email: z.string(),
  name: z.string(),
  role: z.string(),
  status: z.string(),
  joinedAt: z.string().datetime(),
  lastActivityAt: z.string().datetime().nullable().describe("null: never active"),
  daysInactive: z.number().int().describe("days since the last activity, or since joining when never active"),
});
