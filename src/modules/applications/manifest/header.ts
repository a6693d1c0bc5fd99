/**
 * Step 1 of ingest: the manifest-level fields. A failure here makes the file an error of the
 * sync; optional catalog fields of the wrong shape are only ignored with a warning.
 */
import semver from "semver";
import { z } from "zod";
import { describeValue, isRecord, nonEmptyString } from "./describe-value.js";
import { APP_KEY_PATTERN, MANIFEST_FLAVORS } from "./rules.js";
import type { ManifestHeader, ManifestVendor } from "./types.js";


export type HeaderResult =
  | { ok: true; header: ManifestHeader; warnings: string[] }
  | { ok: false; message: string };

/** Error text naming the field and its rule; says "is required" when the field is absent. */
function ruleFailure(field: string, rule: string) {
  return (issue: { input?: unknown }) =>
    issue.input === undefined ? `${field} is required` : `${field} ${rule} (got ${describeValue(issue.input)})`;
}

/** SemVer 2.0 exactly as written: semver itself tolerates a leading "v", "=" and spaces. */
function isPlainSemver(version: string): boolean {
  return /^[0-9]/.test(version) && version.trim() === version && semver.parse(version) !== null;
}

const appKeyRule = ruleFailure("metadata.id", `must match ${APP_KEY_PATTERN.source}`);
const nameRule = ruleFailure("metadata.name", "must be a non-empty string");
const versionRule = ruleFailure("metadata.version", "must be SemVer 2.0 without a leading v");

const metadataSchema = z.object(
  {
    id: z.string({ error: appKeyRule }).regex(APP_KEY_PATTERN, { error: appKeyRule }),
    name: z.string({ error: nameRule }).refine((name) => name.trim() !== "", { error: nameRule }),
    version: z.string({ error: versionRule }).refine(isPlainSemver, { error: versionRule }),
  },
  { error: ruleFailure("metadata", "must be a mapping") },
);

export function readManifestHeader(document: Record<string, unknown>): HeaderResult {
  const { apiVersion, kind } = document;
  const flavor = MANIFEST_FLAVORS.find((candidate) => candidate.apiVersion === apiVersion);
  if (!flavor) {
    const known = MANIFEST_FLAVORS.map((candidate) => candidate.apiVersion).join(" or ");
    return { ok: false, message: `apiVersion must be ${known} (got ${describeValue(apiVersion)})` };
  }
  if (kind !== flavor.kind) {
    return {
      ok: false,
      message: `kind must be ${flavor.kind} for apiVersion ${flavor.apiVersion} (got ${describeValue(kind)})`,
    };
  }

  const checked = metadataSchema.safeParse(document.metadata);
  if (!checked.success) {
    return { ok: false, message: checked.error.issues.map((issue) => issue.message).join("; ") };
  }

  const metadata = document.metadata as Record<string, unknown>;
  const warnings: string[] = [];
  const header: ManifestHeader = {
    apiVersion: flavor.apiVersion,
    appKey: checked.data.id,
    name: checked.data.name.trim(),
    version: checked.data.version,
    tags: [],
  };
  const description = optionalText(metadata.description, "metadata.description", warnings);
  if (description !== undefined) header.description = description;
  Object.assign(header, readCatalog(metadata.catalog, warnings));
  return { ok: true, header, warnings };
}

type CatalogFields = Pick<ManifestHeader, "category" | "tags" | "iconPath" | "vendor">;

/**
 * Our catalog keeps icon and tags at catalog level; Margo keeps them under
 * catalog.application. Ours wins when both are written.
 */
function readCatalog(catalog: unknown, warnings: string[]): CatalogFields {
  if (catalog === undefined || catalog === null) return { tags: [] };
  if (!isRecord(catalog)) {
    warnings.push("metadata.catalog ignored: it must be a mapping");
    return { tags: [] };
  }
  const margoApplication = isRecord(catalog.application) ? catalog.application : {};
  const fields: CatalogFields = {
    tags: readTags(catalog.tags ?? margoApplication.tags, warnings),
  };
  const category = optionalText(catalog.category, "metadata.catalog.category", warnings);
  if (category !== undefined) fields.category = category;
  const iconPath = optionalText(catalog.icon ?? margoApplication.icon, "metadata.catalog.icon", warnings);
  if (iconPath !== undefined) fields.iconPath = iconPath;
  const vendor = readVendor(catalog.organization, warnings);
  if (vendor) fields.vendor = vendor;
  return fields;
}

function readTags(tags: unknown, warnings: string[]): string[] {
  if (tags === undefined || tags === null) return [];
  if (!Array.isArray(tags) || !tags.every((tag) => typeof tag === "string")) {
    warnings.push("metadata.catalog.tags ignored: it must be a list of strings");
    return [];
  }
  return [...new Set(tags.map((tag) => tag.trim()).filter((tag) => tag !== ""))];
}

/** The first organization is the vendor. */
function readVendor(organizations: unknown, warnings: string[]): ManifestVendor | undefined {
  if (organizations === undefined || organizations === null) return undefined;
  const first: unknown = Array.isArray(organizations) ? organizations[0] : undefined;
  const name = isRecord(first) ? nonEmptyString(first.name) : undefined;
  if (!isRecord(first) || name === undefined) {
    warnings.push("metadata.catalog.organization ignored: it must be a list of { name, site? }");
    return undefined;
  }
  const site = nonEmptyString(first.site);
  return site === undefined ? { name } : { name, site };
}

function optionalText(value: unknown, field: string, warnings: string[]): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    warnings.push(`${field} ignored: it must be a string`);
    return undefined;
  }
  return value.trim() === "" ? undefined : value;
}
