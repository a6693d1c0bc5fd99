// Organization rules. Tenant isolation lives in the queries: a caller who is not a Super
// Admin only ever finds their own organization, so any other one is a 404.
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import { notFound } from "../../trpc/errors.js";

export function visibleOrganizations(principal: Principal) {
  return principal.isSuperAdmin ? {} : { id: principal.organizationId };
}

export async function getOrganizationBySlug(db: DbTx, principal: Principal, slug: string) {
  const org = await db.organization.findFirst({ where: { slug, ...visibleOrganizations(principal) } });
  if (!org) throw notFound("Organization");
  return org;
}
