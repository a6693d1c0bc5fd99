// The organization resource as the spec writes it, and the mapper from the database row.
import { z } from "zod";
import type { Organization } from "../../generated/prisma/client.js";

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
