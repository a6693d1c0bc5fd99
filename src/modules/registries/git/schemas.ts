// The Git registry resource and the sync result exactly as the spec writes them, the inputs
// of the operations around them, and the mapper from the database row.
import { z } from "zod";
import type { GitRegistry } from "../../../generated/prisma/client.js";
import { pagingInput, pageOutput } from "../../../lib/paging.js";

export const GIT_AUTH_TYPES = ["NONE", "BASIC", "TOKEN"] as const;
export type GitAuthType = (typeof GIT_AUTH_TYPES)[number];

/** 0 means "manual syncs only"; at most a week. */
export const MAX_SYNC_INTERVAL_MINUTES = 10_080;

/** http(s), no credentials in the URL (they belong in `credential`, sealed), no fragment. */
function checkRepositoryUrl(value: string, ctx: z.RefinementCtx) {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL" });
    return;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") ctx.addIssue({ code: "custom", message: "must be an http:// or https:// URL" });
  else if (url.username || url.password) ctx.addIssue({ code: "custom", message: "must not carry credentials: send them in credential" });
  else if (url.hash) ctx.addIssue({ code: "custom", message: "must not have a #fragment" });
}

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

const name = z.string().trim().min(2).max(100);
const url = z.string().trim().max(2048).superRefine(checkRepositoryUrl);
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
const credential = z.string().min(1).max(4096).describe("BASIC: username:password; TOKEN: the token. Sealed at rest, never returned");
const syncIntervalMinutes = z.number().int().min(0).max(MAX_SYNC_INTERVAL_MINUTES).describe("0 = manual syncs only");
const bodyBoolean = z.boolean().pipe(z.boolean());

export const createGitRegistryInput = z.object({
  name,
  url,
  branch: branch.default("main"),
  path: path.default("/"),
  authType: z.enum(GIT_AUTH_TYPES).default("NONE"),
  credential: credential.optional(),
  syncIntervalMinutes: syncIntervalMinutes.default(60),
  enabled: bodyBoolean.default(true),
});
export type CreateGitRegistryInput = z.infer<typeof createGitRegistryInput>;

export const updateGitRegistryInput = z.object({
  id: z.string().uuid(),
  name: name.optional(),
  url: url.optional(),
  branch: branch.optional(),
  path: path.optional(),
  authType: z.enum(GIT_AUTH_TYPES).optional(),
  credential: credential.optional(),
  syncIntervalMinutes: syncIntervalMinutes.optional(),
  enabled: bodyBoolean.optional(),
});
export type UpdateGitRegistryInput = z.infer<typeof updateGitRegistryInput>;

export const listGitRegistriesInput = z.object({
  ...pagingInput,
  enabled: z.stringbool().optional(),
});

export const idInput = z.object({ id: z.string().uuid() });

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
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type GitRegistryDto = z.infer<typeof gitRegistryOutput>;

export const gitRegistryPageOutput = pageOutput(gitRegistryOutput);

export const deletedOutput = z.object({ id: z.string(), deleted: z.literal(true) });

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
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}
