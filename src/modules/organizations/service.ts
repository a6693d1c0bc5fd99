// Organization rules. Tenant isolation lives in the queries: a caller who is not a Super
// Admin only ever finds their own organization, so any other one is a 404.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Principal } from "../../trpc/principal.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { pageOf } from "../../lib/paging.js";
import { containsText } from "../../lib/like.js";
import type { z } from "zod";
import type { brandOrganizationInput, createOrganizationInput, listOrganizationsInput, updateOrganizationInput } from "./schemas.js";
import { deriveFreeSlug } from "./slug.js";

export function visibleOrganizations(principal: Principal) {
  return principal.isSuperAdmin ? {} : { id: principal.organizationId };
}

export async function getOrganizationBySlug(db: DbTx, principal: Principal, slug: string) {
  const org = await db.organization.findFirst({ where: { slug, ...visibleOrganizations(principal) } });
  if (!org) throw notFound("Organization");
  return org;
}

export async function getOrganization(db: DbTx, principal: Principal, id: string) {
  // AND, not a spread: visibleOrganizations also speaks about `id`.
  const org = await db.organization.findFirst({ where: { AND: [{ id }, visibleOrganizations(principal)] } });
  if (!org) throw notFound("Organization");
  return org;
}

export function listFilter(principal: Principal, input: { search?: string; status?: string }): Prisma.OrganizationWhereInput {
  return {
    ...visibleOrganizations(principal),
    ...(input.status ? { status: input.status } : {}),
    ...(input.search
      ? { OR: [{ name: containsText(input.search) }, { slug: containsText(input.search) }] }
      : {}),
  };
}

export async function listOrganizations(db: DbTx, principal: Principal, input: z.infer<typeof listOrganizationsInput>) {
  const where = listFilter(principal, input);
  const [items, total] = await Promise.all([
    db.organization.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: input.limit, skip: input.offset }),
    db.organization.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

export async function createOrganization(db: DbTx, input: z.infer<typeof createOrganizationInput>) {
  if (input.slug && (await db.organization.findUnique({ where: { slug: input.slug }, select: { id: true } }))) {
    throw conflict(`An organization with the slug "${input.slug}" already exists`);
  }
  const slug = input.slug ?? (await deriveFreeSlug(db, input.name));
  return db.organization.create({ data: { name: input.name, slug, description: input.description ?? null } });
}

/**
 * Spec operation 8 (Super Admin). `active` is deprecated: true enables a suspended or
 * disabled organization, false suspends an active one; a value that already matches the
 * status changes nothing (so a client echoing `active` back does not reset a `disabled`).
 */
export async function updateOrganization(db: DbTx, principal: Principal, input: z.infer<typeof updateOrganizationInput>) {
  const org = await getOrganization(db, principal, input.id);
  const data: Prisma.OrganizationUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  if (input.description !== undefined) data.description = input.description;
  if (input.settings !== undefined) data.settings = input.settings as Prisma.InputJsonObject;
  if (input.branding !== undefined) data.branding = input.branding as Prisma.InputJsonObject;
  if (input.primaryContact !== undefined) data.primaryContact = input.primaryContact;
  if (input.billingEmail !== undefined) data.billingEmail = input.billingEmail;
  if (input.active !== undefined && input.active !== (org.status === "active")) {
    Object.assign(data, statusChangeData(input.active ? "active" : "suspended", principal, "set through the deprecated active field"));
  }
  return db.organization.update({ where: { id: org.id }, data });
}

/** The description and branding, for whoever holds organizations:branding in it. */
export async function brandOrganization(db: DbTx, principal: Principal, input: z.infer<typeof brandOrganizationInput>) {
  const org = await getOrganization(db, principal, input.id);
  return db.organization.update({
    where: { id: org.id },
    data: {
      ...(input.description !== undefined ? { description: input.description } : {}),
      ...(input.branding !== undefined ? { branding: input.branding as Prisma.InputJsonObject } : {}),
    },
  });
}

export async function renameOrganization(db: DbTx, principal: Principal, id: string, name: string) {
  const org = await getOrganization(db, principal, id);
  return db.organization.update({ where: { id: org.id }, data: { name } });
}

/** The columns every status move writes: who moved it, when and why. */
export function statusChangeData(status: string, principal: Principal, reason: string | undefined | null) {
  return { status, statusReason: reason ?? null, statusChangedAt: new Date(), statusChangedBy: principal.userId };
}
