// Step 4 of ingest (docs manifest.md): admitted manifests become applications and versions.
// Shared by every registry kind (Git now, OCI later): the caller fetches and parses, this
// writes, inside the caller's transaction so that a sync imports everything or nothing.
import semver from "semver";
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { NormalizedManifest } from "./manifest/index.js";
import type { StoredIcon } from "./icons.js";

export type SourceType = "git" | "oci";

export interface IngestSource {
  type: SourceType;
  registryId: string;
  /** the Git commit or OCI manifest digest the manifests were read from */
  revision: string | null;
}

export interface IngestItem {
  /** manifest path inside the repository, or the OCI reference */
  path: string;
  manifest: NormalizedManifest;
  warnings: string[];
  /** manifestDigest() of the manifest text */
  digest: string;
  icon: StoredIcon | null;
}

export interface IngestOutcome {
  /** new versions, whether or not their application is new */
  imported: number;
  /** known versions whose manifest or icon changed */
  updated: number;
  /** items skipped because another item of the batch defines the same version */
  errors: string[];
}

const versionKey = (appKey: string, version: string) => `${appKey}\u0000${version}`;

export async function ingestManifests(db: DbTx, organizationId: string, source: IngestSource, items: IngestItem[]): Promise<IngestOutcome> {
  const outcome: IngestOutcome = { imported: 0, updated: 0, errors: [] };
  const batch = dropDuplicates(items, outcome.errors);
  if (batch.length === 0) return outcome;

  // Imports into one organization's catalog run one after another (Git, OCI and marketplace
  // syncs may import the same application at once): the lock is the transaction's, and the
  // reads below see what an import that held it before committed.
  await db.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`catalog:${organizationId}`}, 0))`;
  // Two reads for the whole batch; writes only for what is new or changed.
  const appKeys = [...new Set(batch.map((item) => item.manifest.appKey))];
  const apps = await db.application.findMany({ where: { organizationId, appKey: { in: appKeys } }, select: { id: true, appKey: true } });
  const appIdByKey = new Map(apps.map((app) => [app.appKey, app.id]));
  const known = await db.applicationVersion.findMany({
    where: { applicationId: { in: apps.map((app) => app.id) } },
    select: { id: true, applicationId: true, version: true, manifestDigest: true, iconSha256: true },
  });
  const keyById = new Map(apps.map((app) => [app.id, app.appKey]));
  const knownByKey = new Map(known.map((v) => [versionKey(keyById.get(v.applicationId)!, v.version), v]));

  const touched = new Set<string>();
  for (const item of batch) {
    const { manifest } = item;
    let applicationId = appIdByKey.get(manifest.appKey);
    if (!applicationId) {
      const created = await db.application.create({
        data: { organizationId, appKey: manifest.appKey, name: manifest.name, tags: [], sourceType: source.type },
        select: { id: true },
      });
      applicationId = created.id;
      appIdByKey.set(manifest.appKey, applicationId);
    }
    const existing = knownByKey.get(versionKey(manifest.appKey, manifest.version));
    const data = versionData(item, source);
    if (!existing) {
      await db.applicationVersion.create({ data: { ...data, organizationId, applicationId, version: manifest.version } });
      outcome.imported += 1;
      touched.add(applicationId);
    } else if (existing.manifestDigest !== item.digest || existing.iconSha256 !== (item.icon?.sha256 ?? null)) {
      await db.applicationVersion.update({ where: { id: existing.id }, data });
      outcome.updated += 1;
      touched.add(applicationId);
    }
  }
  await refreshApplicationSummaries(db, [...touched]);
  return outcome;
}

/** A version defined twice in one batch is ambiguous: the first file wins, the others are errors. */
function dropDuplicates(items: IngestItem[], errors: string[]): IngestItem[] {
  const firstPath = new Map<string, string>();
  return items.filter((item) => {
    const key = versionKey(item.manifest.appKey, item.manifest.version);
    const first = firstPath.get(key);
    if (first !== undefined) {
      errors.push(`${item.path}: application "${item.manifest.appKey}" version ${item.manifest.version} is already defined by ${first}; this file was skipped`);
      return false;
    }
    firstPath.set(key, item.path);
    return true;
  });
}

function versionData(item: IngestItem, source: IngestSource) {
  const { manifest, icon } = item;
  return {
    apiVersion: manifest.apiVersion,
    name: manifest.name,
    description: manifest.description ?? null,
    category: manifest.category ?? null,
    tags: manifest.tags,
    vendorName: manifest.vendor?.name ?? null,
    vendorSite: manifest.vendor?.site ?? null,
    profiles: manifest.profiles as unknown as Prisma.InputJsonValue,
    parameters: manifest.parameters as unknown as Prisma.InputJsonValue,
    warnings: item.warnings,
    manifestDigest: item.digest,
    sourceType: source.type,
    sourceRegistryId: source.registryId,
    sourcePath: item.path,
    sourceRevision: source.revision,
    iconBase64: icon ? Buffer.from(icon.data).toString("base64") : null,
    iconContentType: icon?.contentType ?? null,
    iconSha256: icon?.sha256 ?? null,
  };
}

/** SemVer order, newest first; precedence ties (build metadata) fall back to text order. */
export function compareVersionsDesc(a: string, b: string): number {
  return semver.rcompare(a, b) || b.localeCompare(a);
}

/**
 * An application's own fields mirror its latest version (highest SemVer), so that lists and
 * filters read one row. Call after versions of these applications changed; an application
 * left without versions is deleted.
 */
export async function refreshApplicationSummaries(db: DbTx, applicationIds: string[]): Promise<void> {
  if (applicationIds.length === 0) return;
  const versions = await db.applicationVersion.findMany({
    where: { applicationId: { in: applicationIds } },
    select: {
      id: true, applicationId: true, version: true, name: true, description: true, category: true, tags: true,
      vendorName: true, vendorSite: true, sourceType: true, sourceRegistryId: true, sourcePath: true,
    },
  });
  for (const applicationId of applicationIds) {
    const own = versions.filter((v) => v.applicationId === applicationId).sort((a, b) => compareVersionsDesc(a.version, b.version));
    const latest = own[0];
    if (!latest) {
      await db.application.deleteMany({ where: { id: applicationId } });
      continue;
    }
    await db.application.update({
      where: { id: applicationId },
      data: {
        name: latest.name,
        description: latest.description,
        category: latest.category,
        tags: latest.tags,
        vendorName: latest.vendorName,
        vendorSite: latest.vendorSite,
        latestVersionId: latest.id,
        latestVersion: latest.version,
        versionCount: own.length,
        sourceType: latest.sourceType,
        sourceRegistryId: latest.sourceRegistryId,
        sourcePath: latest.sourcePath,
      },
    });
  }
}
