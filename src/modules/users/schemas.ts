// The user resource (the spec leaves its fields open: see docs/identity.md), its mapper, and
// the inputs of every user operation. A user DTO never carries the password hash or any token.
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.js";
import { pagingInput } from "../../lib/paging.js";
import { mailDeliveryOutput } from "../mail/schemas.js";
import type { Principal } from "../../trpc/principal.js";

export const USER_STATUSES = ["active", "disabled"] as const;
export const PASSWORD_MIN_LENGTH = 12;

export const password = z.string().min(PASSWORD_MIN_LENGTH).max(1024).describe(`at least ${PASSWORD_MIN_LENGTH} characters`);
const email = z.string().trim().email().max(320).describe("unique, case-insensitive (stored lower-cased)");
const displayName = z.string().trim().min(1).max(100);
const uuid = z.string().uuid();

export const membershipOutput = z.object({
  userId: uuid,
  organizationId: uuid,
  organizationName: z.string(),
  organizationSlug: z.string(),
  roleId: uuid,
  roleName: z.string(),
  joinedAt: z.string().datetime(),
});

export const userOutput = z.object({
  id: uuid,
  email: z.string(),
  name: z.string(),
  status: z.enum(USER_STATUSES),
  isSuperAdmin: z.boolean(),
  emailVerified: z.boolean(),
  emailVerifiedAt: z.string().datetime().nullable(),
  hasPassword: z.boolean().describe("false for users who sign in only through their identity provider or have not set one yet"),
  identity: z.object({ issuer: z.string(), subject: z.string() }).nullable().describe("the linked federated identity"),
  lastLoginAt: z.string().datetime().nullable(),
  lastActivityAt: z.string().datetime().nullable(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
  organizations: z.array(membershipOutput).describe("memberships the caller may see: all for a Super Admin, else the caller's organization"),
});
export type UserDto = z.infer<typeof userOutput>;

/**
 * Memberships are loaded with the user in the same query. A caller who is not a Super Admin
 * sees only the membership in their own organization: which other tenants a person belongs
 * to is not theirs to know.
 */
export function userInclude(principal: Principal) {
  return {
    memberships: {
      where: principal.isSuperAdmin ? {} : { organizationId: principal.organizationId },
      include: { organization: { select: { name: true, slug: true } }, role: { select: { name: true } } },
      orderBy: { createdAt: "asc" },
    },
  } satisfies Prisma.UserInclude;
}

type MembershipRow = Prisma.MembershipGetPayload<{ include: { organization: { select: { name: true; slug: true } }; role: { select: { name: true } } } }>;
type UserRow = Prisma.UserGetPayload<{ include: ReturnType<typeof userInclude> }>;

export function toMembershipDto(m: MembershipRow): z.infer<typeof membershipOutput> {
  return {
    userId: m.userId,
    organizationId: m.organizationId,
    organizationName: m.organization.name,
    organizationSlug: m.organization.slug,
    roleId: m.roleId,
    roleName: m.role.name,
    joinedAt: m.createdAt.toISOString(),
  };
}

export function toUserDto(u: UserRow): UserDto {
  return {
    id: u.id,
    email: u.email,
    name: u.name,
    status: u.status as UserDto["status"],
    isSuperAdmin: u.isSuperAdmin,
    emailVerified: u.emailVerifiedAt !== null,
    emailVerifiedAt: u.emailVerifiedAt?.toISOString() ?? null,
    hasPassword: u.passwordHash !== null,
    identity: u.identityIssuer && u.identitySubject ? { issuer: u.identityIssuer, subject: u.identitySubject } : null,
    lastLoginAt: u.lastLoginAt?.toISOString() ?? null,
    lastActivityAt: u.lastActivityAt?.toISOString() ?? null,
    createdAt: u.createdAt.toISOString(),
    updatedAt: u.updatedAt.toISOString(),
    organizations: u.memberships.map(toMembershipDto),
  };
}

// ---- inputs -------------------------------------------------------------------------------

export const idInput = z.object({ id: uuid });

export const createUserInput = z.object({
  email,
  name: displayName,
  password: password.optional().describe(
    `at least ${PASSWORD_MIN_LENGTH} characters; when absent the user receives a link to choose one`,
  ),
});

/** Filters shared by list, stats and export. */
export const userFilters = {
  search: z.string().trim().max(100).optional().describe("part of the e-mail or name, case-insensitive"),
  status: z.enum(USER_STATUSES).optional(),
  organizationId: uuid.optional().describe("only members of this organization"),
};

export const listUsersInput = z.object({
  ...pagingInput,
  ...userFilters,
  superAdmin: z.stringbool().optional().describe("true: only Super Admins; false: only the others"),
});

export const updateUserInput = z.object({
  id: uuid,
  name: displayName.optional(),
  email: email.optional().describe("a new address must be verified again; a verification mail is sent"),
});

export const addToOrganizationInput = z.object({ id: uuid, organizationId: uuid, roleId: uuid });
export const removeFromOrganizationInput = z.object({ id: uuid, orgId: uuid });
export const updateRoleInput = z.object({
  id: uuid,
  roleId: uuid,
  organizationId: uuid.optional().describe("the membership to change; defaults to the organization of the call"),
});

export const BULK_USER_ACTIONS = ["enable", "disable", "delete"] as const;
export const bulkUsersInput = z.object({
  action: z.enum(BULK_USER_ACTIONS),
  userIds: z.array(uuid).min(1).max(100),
});

export const exportUsersInput = z.object({
  format: z.enum(["csv", "json"]).default("csv"),
  ...userFilters,
  superAdmin: z.boolean().pipe(z.boolean()).optional(),
});

export const completePasswordResetInput = z.object({ token: z.string().min(1).max(200), password });
export const completeEmailVerificationInput = z.object({ token: z.string().min(1).max(200) });

// ---- outputs ------------------------------------------------------------------------------

export const userPageOutput = z.object({ items: z.array(userOutput), total: z.number().int(), hasMore: z.boolean() });

export const userStatsOutput = z.object({
  total: z.number().int(),
  active: z.number().int(),
  disabled: z.number().int(),
  superAdmins: z.number().int(),
  verified: z.number().int(),
  unverified: z.number().int(),
  withPassword: z.number().int(),
  withIdentityLink: z.number().int(),
  neverLoggedIn: z.number().int(),
  activeLast30Days: z.number().int().describe("signed in or acted in the last 30 days"),
});

export const mailSentOutput = z.object({
  userId: uuid,
  sent: z.literal(true).describe("the mail was queued in the outbox; `mail` tells how its delivery stands"),
  expiresAt: z.string().datetime().describe("when the link in the mail stops working"),
  mail: mailDeliveryOutput.nullable().describe("the queued mail's delivery state; its note says when it cannot go out (no SMTP_URL)"),
});

export const itemOutcome = z.object({
  id: z.string(),
  outcome: z.enum(["done", "skipped", "not_found", "refused"]),
  message: z.string().optional(),
});

export const bulkUsersOutput = z.object({
  action: z.string(),
  results: z.array(itemOutcome),
  succeeded: z.number().int(),
  failed: z.number().int().describe("items skipped, refused or not found"),
});
