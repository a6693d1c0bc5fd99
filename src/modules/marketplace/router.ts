// The organization's marketplace store: /api/v1/marketplace-store. Spec op 1 (sync history)
// exactly as written; the others as docs/marketplace.md describes them. The live progress
// stream is a plain express route (progress-route.ts).
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { MarketplaceStore } from "../../generated/prisma/client.js";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { answerCreated } from "../../trpc/context.js";
import { liveSyncJob, requestStoreSync } from "./jobs.js";
import {
  deletedOutput,
  putStoreInput,
  storeOutput,
  syncHistoryInput,
  syncHistoryOutput,
  syncQueuedOutput,
  toStoreDto,
  toSyncRecordDto,
} from "./schemas.js";
import { combinedRegistries, deleteStore, findStore, listSyncHistory, putStore, setStoreEnabled } from "./service.js";

const TAG = "Marketplace store";
const audit = { entity: "marketplace_store" };
const none = z.object({}).optional();

async function storeDto(db: DbTx, store: MarketplaceStore) {
  const [registries, live] = await Promise.all([combinedRegistries(db, store), liveSyncJob(db, store.id)]);
  return toStoreDto(store, registries.map((r) => r.source), live !== null);
}

export const marketplaceRouter = router({
  get: protectedProcedure("registries:read")
    .meta({
      openapi: {
        method: "GET", path: "/marketplace-store", tags: [TAG], summary: "Get the organization's marketplace store",
        description: "The configuration, the sync state and the combined registry list a sync reads, in order. 404 until the store is created with PUT.",
      },
    })
    .input(none)
    .output(storeOutput)
    .query(async ({ ctx }) => storeDto(ctx.db, await findStore(ctx.db, ctx.principal.organizationId))),

  put: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "PUT", path: "/marketplace-store", tags: [TAG], summary: "Create or replace the marketplace store's configuration",
        description:
          "Fields left out take their defaults (enabled true, syncIntervalMinutes 60, includeAllGlobalRegistries false, globalRegistryIds []). " +
          "Mandatory global registries are always synced; globalRegistryIds names further ones (400 for an unknown id). The sync history and state stay. " +
          "Answers 201 when it created the store, 200 when it replaced the configuration.",
      },
      audit,
    })
    .input(putStoreInput)
    .output(storeOutput)
    .mutation(async ({ ctx, input }) => {
      const { store, created } = await putStore(ctx.db, ctx.principal.organizationId, input);
      if (ctx.audit) ctx.audit.message = created ? "created the marketplace store" : "replaced the marketplace store's configuration";
      if (created) answerCreated(ctx);
      return storeDto(ctx.db, store);
    }),

  delete: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "DELETE", path: "/marketplace-store", tags: [TAG], summary: "Remove the marketplace store",
        description: "Removes the store and its sync history. Applications it imported stay in the catalog.",
      },
      audit,
    })
    .input(none)
    .output(deletedOutput)
    .mutation(async ({ ctx }) => ({ id: (await deleteStore(ctx.db, ctx.principal.organizationId)).id, deleted: true as const })),

  enable: protectedProcedure("registries:write")
    .meta({ openapi: { method: "POST", path: "/marketplace-store/enable", tags: [TAG], summary: "Enable the marketplace store" }, audit })
    .input(none)
    .output(storeOutput)
    .mutation(async ({ ctx }) => storeDto(ctx.db, await setStoreEnabled(ctx.db, ctx.principal.organizationId, true))),

  disable: protectedProcedure("registries:write")
    .meta({
      openapi: { method: "POST", path: "/marketplace-store/disable", tags: [TAG], summary: "Disable the marketplace store", description: "A disabled store is neither synced on schedule nor on request (409)." },
      audit,
    })
    .input(none)
    .output(storeOutput)
    .mutation(async ({ ctx }) => storeDto(ctx.db, await setStoreEnabled(ctx.db, ctx.principal.organizationId, false))),

  sync: protectedProcedure("registries:write")
    .meta({
      openapi: {
        method: "POST", path: "/marketplace-store/sync", tags: [TAG], summary: "Sync the marketplace store now",
        description:
          "Queues a sync job (202) and answers it with the progress snapshot; follow it with GET /marketplace-store/sync/progress and find its record in the sync history. " +
          "A store never runs two syncs: while one is queued or running, that one is answered (coalesced: true). 404 without a store, 409 when it is disabled.",
      },
      successStatus: 202,
      audit: { ...audit, action: "marketplaceStore.sync.request" },
    })
    .input(none)
    .output(syncQueuedOutput)
    .mutation(async ({ ctx }) => {
      const store = await findStore(ctx.db, ctx.principal.organizationId);
      const queued = await requestStoreSync(ctx.db, ctx.services, store, ctx.principal.userId ?? null, ctx.afterCommit);
      if (ctx.audit) Object.assign(ctx.audit, { entityId: store.id, changes: { jobId: queued.jobId, coalesced: queued.coalesced } });
      return queued;
    }),

  syncHistory: protectedProcedure("registries:read")
    .meta({
      openapi: {
        method: "GET", path: "/marketplace-store/sync-history", tags: [TAG], summary: "The store's sync runs, newest first",
        description:
          "limit (0..200) and offset are required non-negative integers. Each record carries the per-repository counts and the per-product breakdown " +
          "(imported, updated, unchanged or skipped with the reason). nextCursor (the next offset) is present when there is more. 503 Application service unavailable.",
        errorResponses: { 400: "limit or offset missing or not a non-negative integer", 401: "Authentication missing or invalid", 403: "Missing permission registries:read", 404: "The organization has no marketplace store", 503: "Application service unavailable" },
      },
    })
    .input(syncHistoryInput)
    .output(syncHistoryOutput)
    .query(async ({ ctx, input }) => {
      const page = await listSyncHistory(ctx.db, ctx.principal.organizationId, input);
      return { data: page.items.map(toSyncRecordDto), total: page.total, hasMore: page.hasMore, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    }),
});
