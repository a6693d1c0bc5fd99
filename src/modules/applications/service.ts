// Catalog reads and the delete-package rule. Every query carries the caller's organization,
// so another tenant's application is simply not found (404).
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { pageOf } from "../../lib/paging.js";
import { containsText } from "../../lib/like.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { countDeploymentsUsing } from "./deployments.js";
import { compareVersionsDesc } from "./ingest.js";
import type { ListApplicationsInput, VersionRow } from "./schemas.js";
import { counted } from "../../lib/plural.js";

type Paging = { limit: number; offset: number };

export async function findApplication(db: DbTx, organizationId: string, id: string) {
  const app = await db.application.findFirst({ where: { id, organizationId } });
  if (!app) throw notFound("Application");
  return app;
}

export async function findVersion(db: DbTx, organizationId: string, applicationId: string, versionId: string): Promise<VersionRow> {
  const version = await db.applicationVersion.findFirst({ where: { id: versionId, applicationId, organizationId }, omit: { iconBase64: true } });
  if (!version) throw notFound("Application version");
  return version;
}

/**
 * Names of the registries that applications came from, for the `source` of the answers.
 * Registries of other kinds add their lookup here.
 */
export async function registryNames(db: DbTx, organizationId: string, registryIds: Array<string | null>): Promise<Map<string, string>> {
  const ids = [...new Set(registryIds.filter((id): id is string => id !== null))];
  if (ids.length === 0) return new Map();
  // Global registries feed every organization's catalog through its marketplace store.
  const [git, oci, global] = await Promise.all([
    db.gitRegistry.findMany({ where: { organizationId, id: { in: ids } }, select: { id: true, name: true } }),
    db.ociRegistry.findMany({ where: { organizationId, id: { in: ids } }, select: { id: true, name: true } }),
    db.globalOciRegistry.findMany({ where: { id: { in: ids } }, select: { id: true, name: true } }),
  ]);
  return new Map([...git, ...oci, ...global].map((r) => [r.id, r.name]));
}

/** Which of these versions have an icon, and its revision: what the application answers show. */
export async function latestVersionFacts(db: DbTx, versionIds: Array<string | null>) {
  const ids = versionIds.filter((id): id is string => id !== null);
  const rows = ids.length === 0 ? [] : await db.applicationVersion.findMany({ where: { id: { in: ids } }, select: { id: true, iconSha256: true, sourceRevision: true } });
  return new Map(rows.map((r) => [r.id, { hasIcon: r.iconSha256 !== null, revision: r.sourceRevision }]));
}

export async function listApplications(db: DbTx, organizationId: string, input: ListApplicationsInput) {
  const where: Prisma.ApplicationWhereInput = { organizationId };
  if (input.category) where.category = { equals: input.category, mode: "insensitive" };
  if (input.vendor) where.vendorName = { equals: input.vendor, mode: "insensitive" };
  if (input.registryId) where.sourceRegistryId = input.registryId;
  if (input.tag) where.tags = { has: input.tag };
  if (input.q) {
    where.OR = [
      { appKey: containsText(input.q) },
      { name: containsText(input.q) },
      { description: containsText(input.q) },
      { tags: { has: input.q } },
    ];
  }
  const [items, total] = await Promise.all([
    db.application.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "asc" }], skip: input.offset, take: input.limit }),
    db.application.count({ where }),
  ]);
  return pageOf(items, total, input.offset);
}

/** Versions in SemVer order, newest first (sorted in code: SQL cannot order SemVer). */
export async function listVersions(db: DbTx, organizationId: string, applicationId: string, page: Paging) {
  await findApplication(db, organizationId, applicationId);
  const all = await db.applicationVersion.findMany({ where: { applicationId, organizationId }, select: { id: true, version: true } });
  const pageIds = all.sort((a, b) => compareVersionsDesc(a.version, b.version)).slice(page.offset, page.offset + page.limit).map((v) => v.id);
  const rows = await db.applicationVersion.findMany({ where: { id: { in: pageIds } }, omit: { iconBase64: true } });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return pageOf(pageIds.map((id) => byId.get(id)!), all.length, page.offset);
}

function pageOfAll<T>(all: T[], page: Paging) {
  return pageOf(all.slice(page.offset, page.offset + page.limit), all.length, page.offset);
}

/** Categories of the organization's applications (as their latest versions declare them). */
export async function listCategories(db: DbTx, organizationId: string, page: Paging) {
  const groups = await db.application.groupBy({
    by: ["category"],
    where: { organizationId, category: { not: null } },
    _count: { _all: true },
    orderBy: { category: "asc" },
  });
  return pageOfAll(groups.map((g) => ({ name: g.category!, applicationCount: g._count._all })), page);
}

/** Vendors: the first `catalog.organization` entry of the manifests. */
export async function listVendors(db: DbTx, organizationId: string, page: Paging) {
  const groups = await db.application.groupBy({
    by: ["vendorName", "vendorSite"],
    where: { organizationId, vendorName: { not: null } },
    _count: { _all: true },
    orderBy: [{ vendorName: "asc" }, { vendorSite: "asc" }],
  });
  // One entry per name: the site most applications give wins.
  const byName = new Map<string, { name: string; site?: string; applicationCount: number; siteCount: number }>();
  for (const g of groups) {
    const entry = byName.get(g.vendorName!) ?? { name: g.vendorName!, applicationCount: 0, siteCount: -1 };
    entry.applicationCount += g._count._all;
    if (g.vendorSite && g._count._all > entry.siteCount) Object.assign(entry, { site: g.vendorSite, siteCount: g._count._all });
    byName.set(entry.name, entry);
  }
  return pageOfAll([...byName.values()].map(({ siteCount: _, ...vendor }) => vendor), page);
}

export async function deleteApplication(db: DbTx, organizationId: string, id: string) {
  const app = await findApplication(db, organizationId, id);
  const users = await countDeploymentsUsing(db, { organizationId, applicationId: app.id });
  if (users > 0) throw conflict(`Application "${app.appKey}" is used by ${counted(users, "deployment")}; delete them first`);
  try {
    await db.application.delete({ where: { id: app.id } });
  } catch (err) {
    // A deployment created meanwhile still holds a version (foreign key): same answer.
    if ((err as { code?: string }).code === "P2003") throw conflict(`Application "${app.appKey}" is used by a deployment; delete it first`);
    throw err;
  }
  return { id: app.id, deleted: true as const, deletedVersions: app.versionCount };
}

export async function findApplicationIcon(db: DbTx, organizationId: string, id: string) {
  const app = await findApplication(db, organizationId, id);
  const version = app.latestVersionId
    ? await db.applicationVersion.findFirst({
        where: { id: app.latestVersionId, organizationId },
        select: { iconBase64: true, iconContentType: true, iconSha256: true },
      })
    : null;
  if (!version?.iconBase64 || !version.iconContentType || !version.iconSha256) throw notFound("Application icon");
  return { data: Buffer.from(version.iconBase64, "base64"), contentType: version.iconContentType, sha256: version.iconSha256 };
}
