// Who is calling, in which organization, with which rights. Built once per request by
// src/trpc/auth.ts and read by every procedure.
import { grants } from "./permissions.js";

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
  /** Super Admin privileges are effective for this call */
  isSuperAdmin: boolean;
  /** set while a bearer session acts in another organization (src/modules/tenant) */
  tenantSwitch?: { id: string; fromOrganizationId: string | null } | null;
}

export function can(principal: Principal, permission: string): boolean {
  return principal.permissionSets.every((set) => grants(set, permission));
}
