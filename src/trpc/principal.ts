// Who is calling, in which organization, with which rights. Built once per request by
// src/trpc/auth.ts and read by every procedure.
import { grants, PLATFORM_ADMIN } from "./permissions.js";

export interface Principal {
  kind: "user" | "api_key";
  /** the human behind the call: the user, or the creator of the API key */
  userId: string;
  apiKeyId: string | null;
  sessionId: string | null;
  /** the organization the call acts in */
  organizationId: string;
  /**
   * Every set must grant a permission. A user has one set (their role); an API key has two
   * (its own list and its creator's current role), so a key never exceeds its creator.
   */
  permissionSets: ReadonlyArray<ReadonlySet<string>>;
  /**
   * Super Admin privileges are effective for this call: a Super Admin user, or a key of a
   * Super Admin that names platform:admin (src/trpc/auth.ts). The one source of platform power.
   */
  isSuperAdmin: boolean;
  /** set while a bearer session acts in another organization (src/modules/tenant) */
  tenantSwitch?: { id: string; fromOrganizationId: string | null } | null;
}

/**
 * Whether the caller holds `permission`. platform:admin is held exactly when Super Admin
 * privileges are effective, so that what the tenant context reports (GET /tenant/context,
 * the console's useCan) and what the Super Admin operations allow never disagree.
 */
export function can(principal: Principal, permission: string): boolean {
  if (permission === PLATFORM_ADMIN) return principal.isSuperAdmin;
  return principal.permissionSets.every((set) => grants(set, permission));
}
