// The Git registry resource and the sync result exactly as the spec writes them, the inputs
// of the operations around them, and the mapper from the database row.
import { z } from "zod";
import type { GitRegistry } from "../../../generated/prisma/client.js";
import { pageOutput } from "../../../lib/paging.js";
import { ownerMark, ownerMarkOutput } from "../../../lib/owner-mark.js";
import { bodyBoolean, registryCredential, registryName, REGISTRY_AUTH_TYPES, registryUrl, syncIntervalMinutes } from "../fields.js";

// The marketplace store reads the limit from here.
export { MAX_SYNC_INTERVAL_MINUTES } from "../fields.js";

/** The rules of `git check-ref-format --branch`, for a plain branch name. */
export function isValidBranchName(name: string): boolean {
  return (
    !/[\x00-\x20\x7f~^:?*[\\]/.test(name) &&
    !name.startsWith("/") && !name.endsWith("/") && !name.startsWith("-") &&
    !name.includes("//") && !name.includes("..") && !name.includes("@{") &&
    !name.endsWith(".") && !name.endsWith(".lock") && name !== "@" &&
    !name.split("/").some((part) => part.startsWith("."))
  );
}

/** "/", "apps", "/apps/" and "./apps" all become "/apps"; ".." is refused. */
export function normalizeRegistryPath(path: string): string | null {
  const parts = path.split("/").filter((part) => part !== "" && part !== ".");
  if (parts.some((part) => part === ".." || part.includes("\\") || part.includes("\0"))) return null;
  return "/" + parts.join("/");
}

const url = registryUrl((parsed, ctx) => {
  if (parsed.hash) ctx.addIssue({ code: "custom", message: "must not have a #fragment" });
});
const branch = z.string().trim().min(1).max(255).refine(isValidBranchName, { message: "is not a valid Git branch name" });
const path = z
  .string()
  .trim()
  .max(1024)
  .transform((value, ctx) => {
    const normalized = normalizeRegistryPath(value);
    if (normalized === null) {
      ctx.addIssue({ code: "custom", message: "must be a folder inside the repository (no ..)" });
      return z.NEVER;
    }
    return normalized;
  });
const credential = registryCredential("BASIC: username:password; TOKEN: the token. Sealed at rest, never returned");

export const createGitRegistryInput = z.object({
  name: registryName,
  url,
  branch: branch.default("main"),
  path: path.default("/"),
  authType: z.enum(REGISTRY_AUTH_TYPES).default("NONE"),
  credential: credential.optional(),
  syncIntervalMinutes: syncIntervalMinutes.default(60),
  enabled: bodyBoolean.default(true),
});
export type CreateGitRegistryInput = z.infer<typeof createGitRegistryInput>;

export const updateGitRegistryInput = z.object({
  id: z.string().uuid(),
  name: registryName.optional(),
  url: url.optional(),
  branch: branch.optional(),
  path: path.optional(),
  authType: z.enum(REGISTRY_AUTH_TYPES).optional(),
  credential: credential.optional(),
  syncIntervalMinutes: syncIntervalMinutes.optional(),
  enabled: bodyBoolean.optional(),
});
export type UpdateGitRegistryInput = z.infer<typeof updateGitRegistryInput>;

export const gitRegistryOutput = z.object({
  id: z.string(),
  organizationId: z.string(),
  name: z.string(),
  url: z.string(),
  branch: z.string(),
  path: z.string(),
  authType: z.string().describe("NONE, BASIC or TOKEN"),
  hasCredentials: z.boolean(),
  syncIntervalMinutes: z.number(),
  lastSyncAt: z.string().datetime().optional().describe("last successful sync"),
  lastSyncError: z.string().optional(),
  lastSyncCommit: z.string().optional(),
  enabled: z.boolean(),
  ...ownerMarkOutput,
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type GitRegistryDto = z.infer<typeof gitRegistryOutput>;

export const gitRegistryPageOutput = pageOutput(gitRegistryOutput);

export const syncResultOutput = z.object({
  success: z.boolean().describe("whether the sync completed"),
  registryId: z.string(),
  scope: z.literal("tenant"),
  applicationsFound: z.number().describe("manifests that were readable (passed the manifest-level checks)"),
  applicationsImported: z.number().describe("new applications and new versions"),
  applicationsUpdated: z.number().describe("known versions whose manifest changed"),
  errors: z.array(z.string()),
  rejectedManifests: z.array(z.object({ path: z.string(), reason: z.string() })),
  syncDuration: z.number().describe("milliseconds"),
  commit: z.string().describe("the synced Git commit id; empty when the fetch failed"),
});
export type SyncResult = z.infer<typeof syncResultOutput>;

export function toGitRegistryDto(row: GitRegistry): GitRegistryDto {
  return {
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    url: row.url,
    branch: row.branch,
    path: row.path,
    authType: row.authType,
    hasCredentials: row.credentialSealed !== null,
    syncIntervalMinutes: row.syncIntervalMinutes,
    ...(row.lastSyncAt ? { lastSyncAt: row.lastSyncAt.toISOString() } : {}),
    ...(row.lastSyncError !== null ? { lastSyncError: row.lastSyncError } : {}),
    ...(row.lastSyncCommit !== null ? { lastSyncCommit: row.lastSyncCommit } : {}),
    enabled: row.enabled,
    ...ownerMark(row),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
