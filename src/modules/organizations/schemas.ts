// The organization resource as the spec writes it, the mapper from the database row, and
// the inputs of every organization operation.
import { z } from "zod";
import type { Organization } from "../../generated/prisma/client.js";
import { pagingInput } from "../../lib/paging.js";
import { SLUG_MAX, SLUG_PATTERN } from "./slug.js";

export const ORGANIZATION_STATUSES = ["active", "suspended", "pending", "disabled"] as const;

export const organizationStats = z.object({
  userCount: z.number().int(),
  activeUsers: z.number().int(),
  deviceCount: z.number().int(),
  activeDevices: z.number().int(),
  deploymentCount: z.number().int(),
  runningDeployments: z.number().int(),
});

export const organizationOutput = z.object({
  id: z.string().uuid(),
  name: z.string(),
  slug: z.string(),
  description: z.string().optional(),
  settings: z.record(z.string(), z.unknown()),
  branding: z.record(z.string(), z.unknown()),
  status: z.enum(ORGANIZATION_STATUSES),
  lastActivityAt: z.string().datetime().nullable().optional(),
  primaryContact: z.string().nullable().optional(),
  billingEmail: z.string().email().nullable().optional(),
  active: z.boolean().describe("Deprecated: use status"),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
  stats: organizationStats.optional(),
});
export type OrganizationDto = z.infer<typeof organizationOutput>;

const asObject = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export function toOrganizationDto(org: Organization, stats?: z.infer<typeof organizationStats>): OrganizationDto {
  return {
    id: org.id,
    name: org.name,
    slug: org.slug,
    ...(org.description !== null ? { description: org.description } : {}),
    settings: asObject(org.settings),
    branding: asObject(org.branding),
    status: org.status as OrganizationDto["status"],
    lastActivityAt: org.lastActivityAt?.toISOString() ?? null,
    primaryContact: org.primaryContact,
    billingEmail: org.billingEmail,
    active: org.status === "active",
    createdAt: org.createdAt.toISOString(),
    updatedAt: org.updatedAt.toISOString(),
    ...(stats ? { stats } : {}),
  };
}

// ---- inputs -------------------------------------------------------------------------------

const name = z.string().trim().min(2).max(100);
const description = z.string().max(500);
const freeObject = z.record(z.string(), z.unknown());
/** booleans in bodies: see docs/architecture.md (coercion would turn "false" into true) */
const bodyBoolean = z.boolean().pipe(z.boolean());

export const idInput = z.object({ id: z.string().uuid() });

export const createOrganizationInput = z.object({
  name,
  slug: z.string().min(2).max(SLUG_MAX).regex(SLUG_PATTERN, "lower-case letters, digits and single hyphens").optional()
    .describe("derived from the name when absent"),
  description: description.optional(),
});

export const listOrganizationsInput = z.object({
  ...pagingInput,
  search: z.string().trim().max(100).optional().describe("part of the name or slug, case-insensitive"),
  status: z.enum(ORGANIZATION_STATUSES).optional(),
});

/** Spec operation 8: every field optional; null clears the nullable ones. */
export const updateOrganizationInput = z.object({
  id: z.string().uuid(),
  name: name.optional(),
  description: description.nullable().optional(),
  settings: freeObject.optional().describe("replaces the whole settings object"),
  branding: freeObject.optional().describe("replaces the whole branding object"),
  active: bodyBoolean.optional().describe("Deprecated: use the enable and suspend operations. true enables, false suspends"),
  primaryContact: z.string().max(200).nullable().optional(),
  billingEmail: z.string().email().max(320).nullable().optional(),
});

export const statusChangeInput = z.object({
  id: z.string().uuid(),
  reason: z.string().trim().max(500).optional(),
});

export const renameOrganizationInput = z.object({ id: z.string().uuid(), name });

export const brandOrganizationInput = z.object({
  id: z.string().uuid(),
  description: description.nullable().optional(),
  branding: freeObject.optional().describe("replaces the whole branding object (the console reads primaryColor and logo)"),
});

export const bulkDeleteInput = z.object({
  ids: z.array(z.string().uuid()).min(1).max(100),
});

export const organizationPageOutput = z.object({
  items: z.array(organizationOutput),
  total: z.number().int(),
  hasMore: z.boolean(),
});

export const canDeleteOutput = z.object({
  id: z.string().uuid(),
  canDelete: z.boolean(),
  reasons: z.array(z.string()).describe("why the organization cannot be deleted; empty when it can"),
  blockers: z.record(z.string(), z.number().int()).describe("what still lives in the organization, by kind"),
});

export const bulkDeleteOutput = z.object({
  results: z.array(z.object({
    id: z.string(),
    outcome: z.enum(["deleted", "not_found", "refused"]),
    message: z.string().optional(),
  })),
  deleted: z.number().int(),
  failed: z.number().int(),
});

export const aggregateStatsOutput = z.object({
  total: z.number().int(),
  byStatus: z.object({ active: z.number().int(), suspended: z.number().int(), pending: z.number().int(), disabled: z.number().int() }),
  empty: z.number().int().describe("organizations without members, devices or deployments"),
  createdLast30Days: z.number().int(),
  userCount: z.number().int().describe("users on the platform"),
  deviceCount: z.number().int(),
  deploymentCount: z.number().int(),
});

export const ORG_USER_BULK_ACTIONS = ["remove", "set-role", "reset-password"] as const;
export const orgUsersBulkInput = z.object({
  id: z.string().uuid(),
  action: z.enum(ORG_USER_BULK_ACTIONS).describe("remove: end the membership; set-role: give everyone roleId; reset-password: mail each a reset link"),
  userIds: z.array(z.string().uuid()).min(1).max(100),
  roleId: z.string().uuid().optional().describe("required for set-role"),
}).refine((v) => v.action !== "set-role" || v.roleId !== undefined, { path: ["roleId"], message: "roleId is required for set-role" });

export const orgUserInput = z.object({ id: z.string().uuid(), userId: z.string().uuid() });
