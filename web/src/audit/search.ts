// /audit?action=devices.*&outcome=failure&q=berlin&from=...&offset=50: the audit log's filters,
// text search and page live in the URL (a filtered view is a link); values that do not parse
// fall back to the defaults instead of breaking the page.
import * as z from "zod/mini";

export const ACTOR_TYPES = ["user", "api_key", "device", "system"] as const;
export const OUTCOMES = ["success", "failure", "denied"] as const;

export const uuid = z.string().check(z.regex(/^[0-9a-f-]{36}$/i));
const text = (max: number) => z.string().check(z.minLength(1), z.maxLength(max));
/** an instant with its offset, as the API takes it */
export const instant = z.string().check(z.regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/));

export const auditSearch = z.object({
  q: z.catch(z.optional(text(200)), undefined),
  actorType: z.catch(z.optional(z.enum(ACTOR_TYPES)), undefined),
  /** the person behind the action */
  user: z.catch(z.optional(uuid), undefined),
  /** an API key's, device's or user's id */
  actorId: z.catch(z.optional(text(200)), undefined),
  action: z.catch(z.optional(text(200)), undefined),
  entityType: z.catch(z.optional(text(100)), undefined),
  entityId: z.catch(z.optional(text(200)), undefined),
  outcome: z.catch(z.optional(z.enum(OUTCOMES)), undefined),
  from: z.catch(z.optional(instant), undefined),
  to: z.catch(z.optional(instant), undefined),
  offset: z.catch(z.optional(z.number().check(z.int(), z.nonnegative())), undefined),
  limit: z.catch(z.optional(z.union([z.literal(25), z.literal(50), z.literal(100)])), undefined),
});
export type AuditSearch = z.infer<typeof auditSearch>;

/** The API's filter fields for these search parameters (shared by the list and the export). */
export function auditFilters(s: AuditSearch) {
  return {
    search: s.q, actorType: s.actorType, userId: s.user, actorId: s.actorId, action: s.action,
    entityType: s.entityType, entityId: s.entityId, outcome: s.outcome, from: s.from, to: s.to,
  };
}

/** `<input type="datetime-local">` speaks local wall-clock time; the URL and the API an instant. */
export function localInputOf(iso: string | undefined): string {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

export function instantOf(local: string): string | undefined {
  if (!local) return undefined;
  const d = new Date(local);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
}
