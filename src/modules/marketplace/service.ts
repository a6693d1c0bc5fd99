// Marketplace store rules: one store per organization, found by the caller's organization
// (so another tenant's store is never reachable), the combined registry list it syncs, and
// its sync history (spec op 1).
import { TRPCError } from "@trpc/server";
import { ZodRealError } from "zod";
import type { DbTx } from "../../db/client.js";
import type { GlobalOciRegistry, MarketplaceStore, OciRegistry } from "../../generated/prisma/client.js";
import { pageOf } from "../../lib/paging.js";
import { notFound, translateDatabaseError, unavailable } from "../../trpc/errors.js";
import type { PutStoreInput, RegistrySource } from "./schemas.js";

export const APPLICATION_SERVICE_UNAVAILABLE = "Application service unavailable";

export async function findStore(db: DbTx, organizationId: string): Promise<MarketplaceStore> {
  const store = await db.marketplaceStore.findUnique({ where: { organizationId } });
  if (!store) throw notFound("Marketplace store");
  return store;
}

export type RegistryRow = (OciRegistry & { kind: "tenant" }) | (GlobalOciRegistry & { kind: "global" });
export interface CombinedRegistry {
  source: RegistrySource;
  row: RegistryRow;
}

/**
 * The combined registry list a sync reads, in order: the organization's enabled OCI registries
 * (oldest first), then the enabled global registries in priority order (then oldest first):
 * the mandatory ones always, the others when the store includes all of them or names them.
 * A repository found twice is taken from the first registry that lists it.
 */
export async function combinedRegistries(db: DbTx, store: Pick<MarketplaceStore, "organizationId" | "includeAllGlobalRegistries" | "globalRegistryIds">): Promise<CombinedRegistry[]> {
  const [own, globals] = await Promise.all([
    db.ociRegistry.findMany({ where: { organizationId: store.organizationId, enabled: true }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] }),
    db.globalOciRegistry.findMany({
      where: {
        enabled: true,
        ...(store.includeAllGlobalRegistries ? {} : { OR: [{ mandatory: true }, { id: { in: store.globalRegistryIds } }] }),
      },
      orderBy: [{ priority: "asc" }, { createdAt: "asc" }, { id: "asc" }],
    }),
  ]);
  return [
    ...own.map((r) => ({ row: { ...r, kind: "tenant" as const }, source: { id: r.id, kind: "tenant" as const, name: r.name, mandatory: false, priority: null } })),
    ...globals.map((r) => ({ row: { ...r, kind: "global" as const }, source: { id: r.id, kind: "global" as const, name: r.name, mandatory: r.mandatory, priority: r.priority } })),
  ];
}

/** 400 naming each unknown id in globalRegistryIds. */
async function assertGlobalRegistriesExist(db: DbTx, ids: string[]) {
  if (ids.length === 0) return;
  const found = new Set((await db.globalOciRegistry.findMany({ where: { id: { in: ids } }, select: { id: true } })).map((r) => r.id));
  const issues = ids.flatMap((id, index) => (found.has(id) ? [] : [{ code: "custom" as const, path: ["globalRegistryIds", index], message: `no global registry ${id}`, input: id }]));
  if (issues.length > 0) throw new TRPCError({ code: "BAD_REQUEST", message: "Input validation failed", cause: new ZodRealError(issues) });
}

/** Creates the organization's store or replaces its configuration; the sync state stays. */
export async function putStore(db: DbTx, organizationId: string, input: PutStoreInput): Promise<{ store: MarketplaceStore; created: boolean }> {
  await assertGlobalRegistriesExist(db, input.globalRegistryIds);
  const existing = await db.marketplaceStore.findUnique({ where: { organizationId }, select: { id: true } });
  const data = {
    enabled: input.enabled,
    syncIntervalMinutes: input.syncIntervalMinutes,
    includeAllGlobalRegistries: input.includeAllGlobalRegistries,
    globalRegistryIds: input.globalRegistryIds,
  };
  const store = await db.marketplaceStore.upsert({ where: { organizationId }, create: { organizationId, ...data }, update: data });
  return { store, created: !existing };
}

export async function setStoreEnabled(db: DbTx, organizationId: string, enabled: boolean): Promise<MarketplaceStore> {
  const store = await findStore(db, organizationId);
  if (store.enabled === enabled) return store;
  return db.marketplaceStore.update({ where: { id: store.id }, data: { enabled } });
}

/** Removes the store and its history; applications it imported stay in the catalog. */
export async function deleteStore(db: DbTx, organizationId: string): Promise<MarketplaceStore> {
  const store = await findStore(db, organizationId);
  await db.marketplaceStore.delete({ where: { id: store.id } });
  return store;
}

/** Spec op 1: newest first; a database that cannot be read is "Application service unavailable" (503). */
export async function listSyncHistory(db: DbTx, organizationId: string, input: { limit: number; offset: number }) {
  try {
    const store = await findStore(db, organizationId);
    const where = { storeId: store.id, organizationId };
    const [items, total] = await Promise.all([
      db.marketplaceSyncRecord.findMany({ where, orderBy: [{ createdAt: "desc" }, { id: "desc" }], skip: input.offset, take: input.limit }),
      db.marketplaceSyncRecord.count({ where }),
    ]);
    const page = pageOf(items, total, input.offset);
    return { ...page, ...(page.hasMore && items.length > 0 ? { nextCursor: String(input.offset + items.length) } : {}) };
  } catch (err) {
    if (translateDatabaseError(err)?.code === "SERVICE_UNAVAILABLE") throw unavailable(APPLICATION_SERVICE_UNAVAILABLE);
    throw err;
  }
}
