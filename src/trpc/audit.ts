// The audit trail. Mutations write their entry inside their own transaction (see
// procedures.ts), so an entry exists exactly when the change does. Refused credentials and
// permission denials are recorded on their own, as authentication events.
import type { DbTx } from "../db/client.js";
import type { RequestInfo } from "./context.js";
import type { Principal } from "./principal.js";

const SECRET_FIELD = /pass(word)?|secret|token|credential|private|^key$|apikey/i;

/** A copy of an input with every secret-looking field masked, for the `changes` column. */
export function maskSecrets(value: unknown, depth = 0): unknown {
  if (depth > 6) return "[truncated]";
  if (Array.isArray(value)) return value.slice(0, 100).map((v) => maskSecrets(v, depth + 1));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, SECRET_FIELD.test(k) ? "[redacted]" : maskSecrets(v, depth + 1)]),
    );
  }
  if (typeof value === "string" && value.length > 1000) return value.slice(0, 1000) + "…";
  return value;
}

export interface AuditRecord {
  action: string;
  outcome: "success" | "failure" | "denied";
  organizationId?: string | null;
  entityType?: string | null;
  entityId?: string | null;
  changes?: unknown;
  message?: string | null;
  actor?: { type: "user" | "api_key" | "device" | "system"; id: string | null; userId?: string | null };
}

/** What a handler adds to the audit entry of its mutation (procedures.ts, `ctx.audit`). */
export interface AuditNote {
  entityId?: string | null;
  /** the organization the change concerns, when not the caller's (a tenant switch) */
  organizationId?: string | null;
  /** replaces the default (the input); masked like it */
  changes?: unknown;
  message?: string | null;
}

/**
 * The fields an update really changed, as `{ field: { from, to } }`, for `ctx.audit.changes`.
 * Only keys present in `after` are compared; unchanged ones are left out. Secret fields are
 * masked by name when the entry is written, like any input.
 */
export function changedFields(before: Record<string, unknown>, after: Record<string, unknown>) {
  const changes: Record<string, { from: unknown; to: unknown }> = {};
  for (const [key, to] of Object.entries(after)) {
    if (to === undefined) continue;
    const from = before[key];
    if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from: from ?? null, to };
  }
  return changes;
}

export async function writeAudit(db: DbTx, request: RequestInfo | null, principal: Principal | null, record: AuditRecord) {
  const actor = record.actor ?? (principal
    ? { type: principal.kind, id: principal.apiKeyId ?? principal.userId, userId: principal.userId }
    : { type: "system" as const, id: null });
  return db.auditEntry.create({
    data: {
      organizationId: record.organizationId ?? principal?.organizationId ?? null,
      actorType: actor.type,
      actorId: actor.id,
      userId: actor.userId ?? null,
      action: record.action,
      entityType: record.entityType ?? null,
      entityId: record.entityId ?? null,
      outcome: record.outcome,
      changes: record.changes === undefined || record.changes === null ? undefined : (maskSecrets(record.changes) as object),
      message: withSwitchContext(record.message, principal)?.slice(0, 1000) ?? null,
      sourceIp: request?.sourceIp ?? null,
      userAgent: request?.userAgent ?? null,
      requestId: request?.requestId ?? null,
    },
  });
}

/**
 * During a tenant switch the entry's userId is the real user and organizationId the tenant;
 * the message names the switch so that the entry leads back to its reason and duration.
 */
function withSwitchContext(message: string | null | undefined, principal: Principal | null) {
  const sw = principal?.tenantSwitch;
  if (!sw) return message ?? null;
  const note = `acting through tenant switch ${sw.id} (home organization ${sw.fromOrganizationId ?? "none"})`;
  return message ? `${message}; ${note}` : note;
}
