// The marketplace store's configuration, its sync record (the spec's "Marketplace store sync
// record" plus the per-product breakdown), the progress snapshot and the inputs around them.
import { z } from "zod";
import type { MarketplaceStore, MarketplaceSyncRecord } from "../../generated/prisma/client.js";
import { MAX_PAGE_SIZE } from "../../lib/paging.js";
import { MAX_SYNC_INTERVAL_MINUTES } from "../registries/git/schemas.js";
import { repositoryReportOutput, syncRunFields, toSyncRunDto } from "../registries/oci/schemas.js";

const bodyBoolean = z.boolean().pipe(z.boolean());

export const putStoreInput = z.object({
  enabled: bodyBoolean.default(true),
  // JSON numbers only (a pipe keeps trpc-to-openapi from coercing "60").
  syncIntervalMinutes: z.number().int().min(0).max(MAX_SYNC_INTERVAL_MINUTES).pipe(z.number()).default(60).describe("minutes between scheduled syncs; 0 = manual syncs only"),
  includeAllGlobalRegistries: bodyBoolean.default(false).describe("also sync every enabled non-mandatory global registry"),
  globalRegistryIds: z.array(z.string().uuid()).max(100).default([]).transform((ids) => [...new Set(ids)])
    .describe("non-mandatory global registries to sync as well; mandatory ones are always synced"),
});
export type PutStoreInput = z.infer<typeof putStoreInput>;

/** A non-negative integer in a query string, required (spec op 1). */
const queryInteger = (max: number) => z.string()
  .regex(/^\d{1,10}$/, { message: "must be a non-negative integer" })
  .transform(Number)
  .pipe(z.number().int().min(0).max(max));

export const syncHistoryInput = z.object({
  limit: queryInteger(MAX_PAGE_SIZE).describe(`records per page, 0..${MAX_PAGE_SIZE}`),
  offset: queryInteger(1_000_000_000).describe("records to skip; nextCursor names the next page's offset"),
});

export const registrySourceOutput = z.object({
  id: z.string(),
  kind: z.enum(["tenant", "global"]),
  name: z.string(),
  mandatory: z.boolean(),
  priority: z.number().nullable().describe("global registries only"),
});
export type RegistrySource = z.infer<typeof registrySourceOutput>;

export const storeOutput = z.object({
  id: z.string(),
  organizationId: z.string(),
  enabled: z.boolean(),
  syncIntervalMinutes: z.number(),
  includeAllGlobalRegistries: z.boolean(),
  globalRegistryIds: z.array(z.string()),
  lastSyncAt: z.string().datetime().nullable(),
  lastSyncError: z.string().nullable(),
  syncing: z.boolean().describe("a sync of the store is queued or running"),
  registries: z.array(registrySourceOutput).describe("the combined registry list a sync reads, in order"),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type StoreDto = z.infer<typeof storeOutput>;

export function toStoreDto(row: MarketplaceStore, registries: RegistrySource[], syncing: boolean): StoreDto {
  return {
    id: row.id,
    organizationId: row.organizationId,
    enabled: row.enabled,
    syncIntervalMinutes: row.syncIntervalMinutes,
    includeAllGlobalRegistries: row.includeAllGlobalRegistries,
    globalRegistryIds: row.globalRegistryIds,
    lastSyncAt: row.lastSyncAt?.toISOString() ?? null,
    lastSyncError: row.lastSyncError,
    syncing,
    registries,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
  };
}

export const deletedOutput = z.object({ id: z.string(), deleted: z.literal(true) });

export const PRODUCT_OUTCOMES = ["imported", "updated", "unchanged", "skipped"] as const;
export const productOutput = z.object({
  registryId: z.string(),
  registryName: z.string(),
  repository: z.string(),
  tag: z.string(),
  outcome: z.enum(PRODUCT_OUTCOMES),
  reason: z.string().optional().describe("why a product was skipped"),
  application: z.string().optional().describe("metadata.id of an application package"),
  version: z.string().optional(),
});
export type ProductDto = z.infer<typeof productOutput>;

export const registryReportOutput = repositoryReportOutput.extend({
  registryId: z.string(),
  registryName: z.string(),
  registryKind: z.enum(["tenant", "global"]),
});
export type RegistryReportDto = z.infer<typeof registryReportOutput>;

export const skippedRepositoryOutput = z.object({ registryId: z.string(), registryName: z.string(), repository: z.string(), reason: z.string() });
export type SkippedRepositoryDto = z.infer<typeof skippedRepositoryOutput>;

export const syncRecordOutput = z.object({
  ...syncRunFields,
  storeId: z.string(),
  perRepository: z.array(registryReportOutput),
  products: z.array(productOutput).describe("every tag read: imported, updated, unchanged or skipped (with the reason)"),
  skippedRepositories: z.array(skippedRepositoryOutput).describe("repositories already taken from an earlier registry of the list"),
});
export type SyncRecordDto = z.infer<typeof syncRecordOutput>;

export const syncHistoryOutput = z.object({
  data: z.array(syncRecordOutput),
  total: z.number(),
  hasMore: z.boolean(),
  nextCursor: z.string().optional().describe("the offset of the next page, only when there is one"),
});

export function toSyncRecordDto(row: MarketplaceSyncRecord): SyncRecordDto {
  return {
    ...toSyncRunDto(row),
    storeId: row.storeId,
    perRepository: row.perRepository as RegistryReportDto[],
    products: row.products as ProductDto[],
    skippedRepositories: row.skippedRepositories as SkippedRepositoryDto[],
  };
}

export const PROGRESS_STATES = ["idle", "queued", "running", "succeeded", "failed"] as const;
export const progressOutput = z.object({
  storeId: z.string(),
  state: z.enum(PROGRESS_STATES),
  jobId: z.string().nullable(),
  triggeredBy: z.string().nullable(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  registriesTotal: z.number(),
  currentRegistry: z.string().nullable().describe("name of the registry being read"),
  currentRepository: z.string().nullable(),
  repositoriesDone: z.number(),
  repositoriesTotal: z.number().describe("repositories the run will read as far as known: grows as each registry's list is read (a catalog is listed when its registry is reached)"),
  tagsRead: z.number(),
  applicationsFound: z.number(),
  applicationsImported: z.number().describe("known once the run has imported"),
  applicationsUpdated: z.number().describe("known once the run has imported"),
  skipped: z.number(),
  errors: z.number(),
  syncRecordId: z.string().nullable().describe("the run's sync record, once written"),
  updatedAt: z.string(),
});
export type Progress = z.infer<typeof progressOutput>;

export const syncQueuedOutput = z.object({
  storeId: z.string(),
  jobId: z.string(),
  state: z.enum(["queued", "running"]),
  coalesced: z.boolean().describe("true when a queued or running sync of the store was returned instead of a new one"),
  progress: progressOutput,
});
