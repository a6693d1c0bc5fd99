// Federation group mappings and the reconcile report.
import { z } from "zod";
import type { FederationGroupMapping } from "../../generated/prisma/client.js";

const group = z.string().trim().min(1).max(256).describe("group name exactly as the provider sends it");

export const createMappingInput = z.object({
  group,
  organizationId: z.string().uuid(),
  roleId: z.string().uuid().describe("a system role or a custom role of that organization"),
  description: z.string().max(500).optional(),
  enabled: z.boolean().pipe(z.boolean()).default(true),
});

export const updateMappingInput = z.object({
  id: z.string().uuid(),
  group: group.optional(),
  organizationId: z.string().uuid().optional(),
  roleId: z.string().uuid().optional(),
  description: z.string().max(500).nullable().optional(),
  enabled: z.boolean().pipe(z.boolean()).optional(),
});

export const mappingOutput = z.object({
  id: z.string().uuid(),
  group: z.string(),
  organizationId: z.string().uuid(),
  organizationName: z.string(),
  roleId: z.string().uuid(),
  roleName: z.string(),
  description: z.string().nullable(),
  enabled: z.boolean(),
  createdById: z.string().uuid().nullable(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});

export type MappingRow = FederationGroupMapping & { organization: { name: string }; role: { name: string } };
export const mappingInclude = { organization: { select: { name: true } }, role: { select: { name: true } } } as const;

export function toMappingDto(m: MappingRow): z.infer<typeof mappingOutput> {
  return {
    id: m.id,
    group: m.group,
    organizationId: m.organizationId,
    organizationName: m.organization.name,
    roleId: m.roleId,
    roleName: m.role.name,
    description: m.description,
    enabled: m.enabled,
    createdById: m.createdById,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

const change = z.object({
  userId: z.string().uuid(),
  email: z.string(),
  organizationId: z.string().uuid(),
  role: z.string().nullable().describe("the role now (null when removed)"),
  previousRole: z.string().nullable().describe("the role before (null when added)"),
});

export const reconcileOutput = z.object({
  dryRun: z.boolean(),
  usersChecked: z.number().int(),
  mappingsApplied: z.number().int().describe("enabled mappings"),
  added: z.array(change),
  updated: z.array(change),
  removed: z.array(change),
  skipped: z.array(change.extend({ reason: z.string() })).describe("memberships made by hand are never changed"),
});
export type ReconcileReport = z.infer<typeof reconcileOutput>;
