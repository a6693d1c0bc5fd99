// Deleting organizations (Super Admin). Refused while devices or deployments remain, and
// for the organization the caller's own credentials act in (its keys and memberships go
// with it). Roles, API keys and memberships cascade; users stay, being platform-level, and
// sessions acting in the organization end.
import type { DbTx } from "../../db/client.js";
import type { RequestInfo } from "../../trpc/context.js";
import type { Principal } from "../../trpc/principal.js";
import { writeAudit } from "../../trpc/audit.js";
import { conflict } from "../../trpc/errors.js";
import { countBlockers } from "./dependents.js";
import { getOrganization } from "./service.js";

function refusalReasons(principal: Principal, id: string, blockers: Record<string, number>): string[] {
  const reasons = Object.entries(blockers)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => `The organization still has ${n} ${n === 1 ? kind.replace(/s$/, "") : kind}; delete them first`);
  if (principal.organizationId === id) {
    reasons.push("Your credentials act in this organization; deleting it would delete them too. Act from another organization");
  }
  return reasons;
}

export async function canDeleteOrganization(db: DbTx, principal: Principal, id: string) {
  const org = await getOrganization(db, principal, id);
  const blockers = (await countBlockers(db, [org.id])).get(org.id)!;
  const reasons = refusalReasons(principal, org.id, blockers);
  return { id: org.id, canDelete: reasons.length === 0, reasons, blockers };
}

async function removeOrganizations(db: DbTx, ids: string[]) {
  await db.session.updateMany({ where: { organizationId: { in: ids }, revokedAt: null }, data: { revokedAt: new Date() } });
  // The marketplace store has no foreign key to its organization (its history goes with it).
  await db.marketplaceStore.deleteMany({ where: { organizationId: { in: ids } } });
  await db.organization.deleteMany({ where: { id: { in: ids } } });
}

export async function deleteOrganization(db: DbTx, principal: Principal, id: string) {
  const check = await canDeleteOrganization(db, principal, id);
  if (!check.canDelete) throw conflict(`Organization cannot be deleted: ${check.reasons.join("; ")}`);
  await removeOrganizations(db, [id]);
  return { id, deleted: true as const };
}

type Outcome = { id: string; outcome: "deleted" | "not_found" | "refused"; message?: string };

/** Each id is judged on its own; the deletable ones go in one statement, with an audit entry each. */
export async function bulkDeleteOrganizations(db: DbTx, principal: Principal, request: RequestInfo, ids: string[]) {
  const unique = [...new Set(ids)];
  const found = await db.organization.findMany({ where: { id: { in: unique } }, select: { id: true, name: true, slug: true } });
  const byId = new Map(found.map((o) => [o.id, o]));
  const blockers = await countBlockers(db, found.map((o) => o.id));
  const results: Outcome[] = unique.map((id) => {
    if (!byId.has(id)) return { id, outcome: "not_found", message: "Organization not found" };
    const reasons = refusalReasons(principal, id, blockers.get(id)!);
    return reasons.length ? { id, outcome: "refused", message: reasons.join("; ") } : { id, outcome: "deleted" };
  });
  const deletable = results.filter((r) => r.outcome === "deleted").map((r) => r.id);
  await removeOrganizations(db, deletable);
  for (const id of deletable) {
    const org = byId.get(id)!;
    await writeAudit(db, request, principal, {
      action: "organizations.delete",
      outcome: "success",
      entityType: "organization",
      entityId: id,
      message: `deleted "${org.name}" (${org.slug}) in a bulk delete`,
    });
  }
  return { results, deleted: deletable.length, failed: results.length - deletable.length };
}
