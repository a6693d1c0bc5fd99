// Federation group mappings: Super Admin configuration (a mapping can grant membership in
// any organization). Disabling a mapping stops it from granting; the next reconcile removes
// what it alone granted.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { changedFields, type AuditNote } from "../../trpc/audit.js";
import { conflict, notFound } from "../../trpc/errors.js";
import type { Principal } from "../../trpc/principal.js";
import { pageOf } from "../../lib/paging.js";
import { mappingInclude, toMappingDto, type MappingRow } from "./schemas.js";

/** One mapping per group and organization: checked first so that the 409 names the group;
 *  the unique index stays the guarantee. */
async function assertFree(db: DbTx, group: string, organizationId: string, exceptId?: string) {
  const existing = await db.federationGroupMapping.findUnique({ where: { group_organizationId: { group, organizationId } }, select: { id: true } });
  if (existing && existing.id !== exceptId) throw conflict(`Group "${group}" is already mapped in this organization`);
}

/** The organization must exist and the role must be a system role or one of its own. */
async function assertTarget(db: DbTx, organizationId: string, roleId: string) {
  const [org, role] = await Promise.all([
    db.organization.findUnique({ where: { id: organizationId }, select: { id: true } }),
    db.role.findUnique({ where: { id: roleId }, select: { organizationId: true } }),
  ]);
  if (!org) throw notFound("Organization");
  if (!role || (role.organizationId !== null && role.organizationId !== organizationId)) throw notFound("Role");
}

async function findMapping(db: DbTx, id: string): Promise<MappingRow> {
  const mapping = await db.federationGroupMapping.findUnique({ where: { id }, include: mappingInclude });
  if (!mapping) throw notFound("Group mapping");
  return mapping;
}

export async function listMappings(db: DbTx, f: { organizationId?: string; group?: string; enabled?: boolean; limit: number; offset: number }) {
  const where: Prisma.FederationGroupMappingWhereInput = {
    ...(f.organizationId ? { organizationId: f.organizationId } : {}),
    ...(f.group ? { group: f.group } : {}),
    ...(f.enabled !== undefined ? { enabled: f.enabled } : {}),
  };
  const [rows, total] = await Promise.all([
    db.federationGroupMapping.findMany({ where, include: mappingInclude, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: f.limit, skip: f.offset }),
    db.federationGroupMapping.count({ where }),
  ]);
  return pageOf(rows.map(toMappingDto), total, f.offset);
}

export async function getMapping(db: DbTx, id: string) {
  return toMappingDto(await findMapping(db, id));
}

export async function createMapping(db: DbTx, principal: Principal, input: { group: string; organizationId: string; roleId: string; description?: string; enabled: boolean }) {
  await assertTarget(db, input.organizationId, input.roleId);
  await assertFree(db, input.group, input.organizationId);
  const created = await db.federationGroupMapping.create({
    data: { ...input, description: input.description ?? null, createdById: principal.userId },
    include: mappingInclude,
  });
  return toMappingDto(created);
}

export async function updateMapping(
  db: DbTx,
  audit: AuditNote | null,
  input: { id: string; group?: string; organizationId?: string; roleId?: string; description?: string | null; enabled?: boolean },
) {
  const before = await findMapping(db, input.id);
  const { id, ...changes } = input;
  if (changes.organizationId !== undefined || changes.roleId !== undefined) {
    await assertTarget(db, changes.organizationId ?? before.organizationId, changes.roleId ?? before.roleId);
  }
  if (changes.group !== undefined || changes.organizationId !== undefined) {
    await assertFree(db, changes.group ?? before.group, changes.organizationId ?? before.organizationId, id);
  }
  const updated = await db.federationGroupMapping.update({ where: { id }, data: changes, include: mappingInclude });
  if (audit) audit.changes = changedFields(before as unknown as Record<string, unknown>, changes);
  return toMappingDto(updated);
}

export async function disableMapping(db: DbTx, id: string) {
  const mapping = await findMapping(db, id);
  if (!mapping.enabled) throw conflict("Group mapping is already disabled");
  return toMappingDto(await db.federationGroupMapping.update({ where: { id }, data: { enabled: false }, include: mappingInclude }));
}
