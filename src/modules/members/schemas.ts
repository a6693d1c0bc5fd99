// An organization member: the user as seen from one organization, with their role there.
import { z } from "zod";
import type { Membership, Role, User } from "../../generated/prisma/client.js";
import { roleRefOutput } from "../roles/schemas.js";

export const memberOutput = z.object({
  userId: z.string().uuid(),
  organizationId: z.string().uuid(),
  email: z.string(),
  name: z.string(),
  /** the user's account status (active | disabled) */
  status: z.string(),
  isSuperAdmin: z.boolean(),
  roleId: z.string().uuid(),
  role: roleRefOutput,
  joinedAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
  lastLoginAt: z.string().datetime().nullable(),
});
export type MemberDto = z.infer<typeof memberOutput>;

export const memberStatsOutput = z.object({
  total: z.number().int(),
  active: z.number().int(),
  disabled: z.number().int(),
  byRole: z.array(z.object({ roleId: z.string().uuid(), name: z.string(), system: z.boolean(), count: z.number().int() })),
});

export type MembershipRow = Membership & { user: User; role: Role };

/** What a member query must include for toMemberDto. */
export const memberInclude = { user: true, role: true } as const;

export function toMemberDto(m: MembershipRow): MemberDto {
  return {
    userId: m.userId,
    organizationId: m.organizationId,
    email: m.user.email,
    name: m.user.name,
    status: m.user.status,
    isSuperAdmin: m.user.isSuperAdmin,
    roleId: m.roleId,
    role: { id: m.role.id, name: m.role.name, system: m.role.system },
    joinedAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
    lastLoginAt: m.user.lastLoginAt?.toISOString() ?? null,
  };
}
