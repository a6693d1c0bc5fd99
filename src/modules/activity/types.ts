// The activity feed is a view of the audit trail: each activity type is a condition on audit
// entries. The conditions are mutually exclusive and `activityTypeOf` applies the same rules
// to one entry, so filtering by type in SQL and labelling rows in code always agree.
import type { AuditEntry, Prisma } from "../../generated/prisma/client.js";

export const ACTIVITY_TYPES = [
  "login", // a successful sign-in (password or OIDC)
  "login_failed", // a refused sign-in
  "logout",
  "auth_event", // reported through POST /audit/auth-events
  "access_denied", // a refused credential or a permission denial
  "tenant_switch", // switch, return, expiry
  "api_key_use", // a change made with an API key
  "change", // a change made by a signed-in user
] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

const LOGIN = "auth.login";
const LOGOUT = "auth.logout";
const DENIALS = ["auth.refused", "permission.denied"];
const SWITCHES = ["tenant.switch", "tenant.return", "tenant.expire"];
/** actions with a type of their own, left out of api_key_use and change */
const SPECIAL: Prisma.AuditEntryWhereInput[] = [
  { action: { in: [LOGIN, LOGOUT, ...DENIALS, ...SWITCHES] } },
  { action: { startsWith: "auth.event." } },
];

const CONDITIONS: Record<ActivityType, Prisma.AuditEntryWhereInput> = {
  login: { action: LOGIN, outcome: "success" },
  login_failed: { action: LOGIN, outcome: { not: "success" } },
  logout: { action: LOGOUT },
  auth_event: { action: { startsWith: "auth.event." } },
  access_denied: { action: { in: DENIALS } },
  tenant_switch: { action: { in: SWITCHES } },
  api_key_use: { actorType: "api_key", outcome: "success", NOT: SPECIAL },
  change: { actorType: "user", outcome: "success", NOT: SPECIAL },
};

/** The audit entries that are activity of the given types (all types when empty). */
export function activityWhere(types?: readonly ActivityType[]): Prisma.AuditEntryWhereInput {
  const chosen = types && types.length > 0 ? [...new Set(types)] : ACTIVITY_TYPES;
  return { OR: chosen.map((t) => CONDITIONS[t]) };
}

export function activityWhereOf(type: ActivityType): Prisma.AuditEntryWhereInput {
  return CONDITIONS[type];
}

export function activityTypeOf(e: Pick<AuditEntry, "action" | "outcome" | "actorType">): ActivityType | null {
  if (e.action === LOGIN) return e.outcome === "success" ? "login" : "login_failed";
  if (e.action === LOGOUT) return "logout";
  if (e.action.startsWith("auth.event.")) return "auth_event";
  if (DENIALS.includes(e.action)) return "access_denied";
  if (SWITCHES.includes(e.action)) return "tenant_switch";
  if (e.outcome !== "success") return null;
  if (e.actorType === "api_key") return "api_key_use";
  if (e.actorType === "user") return "change";
  return null;
}

/** A one-line description for people reading the feed. */
export function describeActivity(type: ActivityType, e: Pick<AuditEntry, "action" | "entityType" | "entityId" | "message">, entityName?: string | null): string {
  switch (type) {
    case "login":
      return "Signed in";
    case "login_failed":
      return `Sign-in refused${e.message ? ` (${e.message})` : ""}`;
    case "logout":
      return "Signed out";
    case "auth_event":
      return `Authentication event ${e.action.slice("auth.event.".length)}`;
    case "access_denied":
      return e.action === "auth.refused" ? "Credential refused" : "Permission denied";
    case "tenant_switch":
      return e.action === "tenant.switch" ? "Switched into the organization" : e.action === "tenant.return" ? "Returned from a tenant switch" : "Tenant switch expired";
    default: {
      // A named entity by its name (its id is in entityId), otherwise by its id.
      const what = e.entityType ? ` ${e.entityType}${entityName ? ` “${entityName}”` : e.entityId ? ` ${e.entityId}` : ""}` : "";
      return `${type === "api_key_use" ? "API key: " : ""}${e.action}${what}`;
    }
  }
}
