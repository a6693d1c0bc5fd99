// The tenant switch record exactly as the spec writes it, and the other tenant payloads.
import { z } from "zod";
import type { TenantSwitch } from "../../generated/prisma/client.js";

export const MAX_SWITCH_MINUTES = 480;
export const DEFAULT_SWITCH_MINUTES = 60;

export const switchInput = z.object({
  organizationId: z.string().uuid(),
  reason: z.string().trim().min(1).max(500).optional(),
  durationMinutes: z.number().int().min(1).max(MAX_SWITCH_MINUTES).default(DEFAULT_SWITCH_MINUTES),
});

export const tenantSwitchRecord = z.object({
  id: z.string(),
  userId: z.string(),
  fromOrgId: z.string().optional(),
  fromOrgName: z.string().optional(),
  toOrgId: z.string(),
  toOrgName: z.string().optional(),
  duration: z.string().optional().describe("ISO 8601 duration, e.g. PT60M"),
  reason: z.string().optional(),
  switchedAt: z.string().datetime(),
  expiresAt: z.string().datetime().optional(),
  returnedAt: z.string().datetime().optional(),
  isActive: z.boolean(),
});
export type TenantSwitchRecord = z.infer<typeof tenantSwitchRecord>;

type SwitchRow = TenantSwitch & { session?: { revokedAt: Date | null; expiresAt: Date } | null };

/** Active: not ended, not expired, and its session still alive. */
export function isSwitchActive(sw: SwitchRow, now = new Date()): boolean {
  const sessionAlive = !sw.session || (!sw.session.revokedAt && sw.session.expiresAt > now);
  return !sw.endedAt && sw.expiresAt > now && !!sw.sessionId && sessionAlive;
}

export function toSwitchRecord(sw: SwitchRow, now = new Date()): TenantSwitchRecord {
  return {
    id: sw.id,
    userId: sw.userId,
    ...(sw.fromOrgId ? { fromOrgId: sw.fromOrgId } : {}),
    ...(sw.fromOrgName ? { fromOrgName: sw.fromOrgName } : {}),
    toOrgId: sw.toOrgId,
    ...(sw.toOrgName ? { toOrgName: sw.toOrgName } : {}),
    duration: `PT${sw.durationMinutes}M`,
    ...(sw.reason ? { reason: sw.reason } : {}),
    switchedAt: sw.switchedAt.toISOString(),
    expiresAt: sw.expiresAt.toISOString(),
    ...(sw.returnedAt ? { returnedAt: sw.returnedAt.toISOString() } : {}),
    isActive: isSwitchActive(sw, now),
  };
}

const orgRef = z.object({ id: z.string().uuid(), name: z.string(), slug: z.string(), status: z.string() });

export const contextOutput = z.object({
  credential: z.enum(["session", "api_key"]),
  userId: z.string().uuid(),
  email: z.string(),
  name: z.string(),
  isSuperAdmin: z.boolean(),
  organization: orgRef.describe("the organization requests act in now"),
  role: z.string().nullable().describe("the caller's role there (null: a Super Admin who is not a member)"),
  permissions: z.array(z.string()).describe("permission keys effective for this caller"),
  homeOrganization: orgRef.nullable().describe("where a return goes back to; null when no switch is active"),
  activeSwitch: tenantSwitchRecord.nullable(),
  canSwitch: z.boolean().describe("bearer sessions switch; API keys are bound to their organization"),
});

export const accessibleTenantOutput = orgRef.extend({
  role: z.string().nullable(),
  isCurrent: z.boolean(),
  isHome: z.boolean(),
});

export const tenantMemberOutput = z.object({
  userId: z.string().uuid(),
  email: z.string(),
  name: z.string(),
  status: z.string(),
  roleId: z.string().uuid(),
  role: z.string(),
  joinedAt: z.string().datetime(),
  lastLoginAt: z.string().datetime().nullable(),
});
