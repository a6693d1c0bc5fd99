// The audit entry as the API shows it, the search filters (shared by search, stats and the
// streamed export) and the mapper from the database row.
import { z } from "zod";
import { isoInstant } from "../../lib/iso-time.js";
import type { AuditEntry } from "../../generated/prisma/client.js";

export const ACTOR_TYPES = ["user", "api_key", "device", "system"] as const;
export const OUTCOMES = ["success", "failure", "denied"] as const;

/** An ISO 8601 time with offset, or a plain date (a date-only `to` means the end of that day). */

export const auditFilterFields = {
  organizationId: z.string().uuid().optional().describe("Super Admins only; others always see their own organization"),
  actorType: z.enum(ACTOR_TYPES).optional(),
  actorId: z.string().min(1).max(200).optional().describe("user id, API key id or device id"),
  userId: z.string().uuid().optional().describe("the human behind the action (a key's creator, a switching admin)"),
  action: z.string().min(1).max(200).optional().describe("exact action, or a prefix ending in * (e.g. auth.*)"),
  entityType: z.string().min(1).max(100).optional(),
  entityId: z.string().min(1).max(200).optional(),
  outcome: z.enum(OUTCOMES).optional(),
  requestId: z.string().min(1).max(100).optional().describe("the X-Request-Id of the call that wrote the entry"),
  search: z.string().trim().min(1).max(200).optional()
    .describe("text anywhere in the action, entity type or id, actor id, request id or message (case-insensitive substring)"),
  from: isoInstant.optional().describe("inclusive start (ISO 8601)"),
  to: isoInstant.optional().describe("exclusive end (ISO 8601); a plain date includes that whole day"),
};
export const auditFilterInput = z.object(auditFilterFields);
export type AuditFilter = z.infer<typeof auditFilterInput>;

export const auditEntryOutput = z.object({
  id: z.string().uuid(),
  organizationId: z.string().uuid().nullable(),
  actorType: z.enum(ACTOR_TYPES),
  actorId: z.string().nullable(),
  userId: z.string().uuid().nullable(),
  action: z.string(),
  entityType: z.string().nullable(),
  entityId: z.string().nullable(),
  outcome: z.enum(OUTCOMES),
  changes: z.unknown().describe("the input of the change, or { field: { from, to } } for updates; secrets masked").optional(),
  message: z.string().nullable(),
  sourceIp: z.string().nullable(),
  userAgent: z.string().nullable(),
  requestId: z.string().nullable(),
  createdAt: z.string().datetime(),
  user: z.object({ email: z.string(), name: z.string() }).nullable().optional()
    .describe("the person behind the action (userId), in lists; null when there is none or the account is gone"),
  entityName: z.string().nullable().optional()
    .describe("the entity's name, in lists: a device's current name; null for other kinds, or when the device is gone"),
  actorName: z.string().nullable().optional()
    .describe("the acting device's current name (actorType device), in lists; null for other actors, or when the device is gone"),
});
export type AuditEntryDto = z.infer<typeof auditEntryOutput>;

export function toAuditEntryDto(e: AuditEntry): AuditEntryDto {
  return {
    id: e.id,
    organizationId: e.organizationId,
    actorType: e.actorType as AuditEntryDto["actorType"],
    actorId: e.actorId,
    userId: e.userId,
    action: e.action,
    entityType: e.entityType,
    entityId: e.entityId,
    outcome: e.outcome as AuditEntryDto["outcome"],
    changes: e.changes ?? null,
    message: e.message,
    sourceIp: e.sourceIp,
    userAgent: e.userAgent,
    requestId: e.requestId,
    createdAt: e.createdAt.toISOString(),
  };
}

/** Columns of the CSV export, in order. */
export const AUDIT_CSV_COLUMNS: { header: string; value: (e: AuditEntry) => unknown }[] = [
  { header: "id", value: (e) => e.id },
  { header: "createdAt", value: (e) => e.createdAt },
  { header: "organizationId", value: (e) => e.organizationId },
  { header: "actorType", value: (e) => e.actorType },
  { header: "actorId", value: (e) => e.actorId },
  { header: "userId", value: (e) => e.userId },
  { header: "action", value: (e) => e.action },
  { header: "entityType", value: (e) => e.entityType },
  { header: "entityId", value: (e) => e.entityId },
  { header: "outcome", value: (e) => e.outcome },
  { header: "message", value: (e) => e.message },
  { header: "sourceIp", value: (e) => e.sourceIp },
  { header: "userAgent", value: (e) => e.userAgent },
  { header: "requestId", value: (e) => e.requestId },
  { header: "changes", value: (e) => e.changes },
];
