// One run of a marketplace store sync (always inside a job, jobs.ts), the OCI sync's pattern
// and code (../registries/oci/sync.ts):
//   1. take the store's lease (a second run of the same store is refused);
//   2. read the combined registry list with no transaction open: each registry's listed
//      repositories (a global registry that lists none: its catalog), a repository found
//      twice taken from the first registry, every tag as in the OCI sync; progress published
//      at every step;
//   3. import the admitted packages in one short transaction with the store's sync state, the
//      sync record (with the per-product breakdown) and the audit entry.
// A registry that cannot be read is an error of the run; when no registry of the list could
// be read, the run failed. A catalog that cannot be written: a failed run and 503.
import { performance } from "node:perf_hooks";
import { TRPCError } from "@trpc/server";
import type { DbTx } from "../../db/client.js";
import type { MarketplaceStore, MarketplaceSyncRecord } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import { writeAudit } from "../../trpc/audit.js";
import { conflict, notFound, unavailable } from "../../trpc/errors.js";
import { describeRegistryFailure } from "../registries/oci/health.js";
import { acquireLease, releaseLease } from "../registries/lease.js";
import {
  emptyReadResult,
  importPackages,
  listCatalog,
  readRepository,
  registryClient,
  runCounts,
  SYNC_TIMEOUT_MS,
  type ReadItem,
  type ReadResult,
} from "../registries/oci/sync.js";
import { progressOf, progressTracker, storeProgress, type ProgressTracker } from "./progress.js";
import type { ProductDto, RegistryReportDto, SkippedRepositoryDto } from "./schemas.js";
import { APPLICATION_SERVICE_UNAVAILABLE, combinedRegistries, findStore, type CombinedRegistry } from "./service.js";

export const STORE_SYNC_RUNNING = "A sync of the marketplace store is already running";
export const STORE_DISABLED = "Marketplace store is disabled";

export interface RunOptions {
  /** the user id of a manual run, "scheduler", or null */
  triggeredBy: string | null;
  jobId: string | null;
  /** the job's signal: aborted at its timeout or at shutdown */
  signal?: AbortSignal;
}

interface Run {
  status: "success" | "failed";
  errors: string[];
  perRepository: RegistryReportDto[];
  products: ProductDto[];
  skippedRepositories: SkippedRepositoryDto[];
  found: number;
  imported: number;
  updated: number;
  durationMs: number;
}

interface Gathered {
  read: ReadResult;
  /** the registry each repository was taken from */
  origin: Map<string, CombinedRegistry>;
  skippedRepositories: SkippedRepositoryDto[];
  errors: string[];
  failedRegistries: number;
}

export async function runStoreSync(services: Services, organizationId: string, options: RunOptions): Promise<MarketplaceSyncRecord> {
  const { prisma } = services;
  const store = await findStore(prisma, organizationId);
  if (!store.enabled) {
    await endQueued(services, store, options.jobId);
    throw conflict(STORE_DISABLED);
  }
  const lease = await acquireLease(prisma.marketplaceStore, store.id, 2 * SYNC_TIMEOUT_MS);
  if (!lease) throw conflict(STORE_SYNC_RUNNING);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    const registries = await combinedRegistries(prisma, store);
    const tracker = progressTracker(services, organizationId, {
      ...progressOf({ id: store.id, progress: {} }),
      state: "running", jobId: options.jobId, triggeredBy: options.triggeredBy, startedAt: new Date().toISOString(), registriesTotal: registries.length,
    });
    await tracker.save();
    const signal = AbortSignal.any([AbortSignal.timeout(SYNC_TIMEOUT_MS), ...(options.signal ? [options.signal] : [])]);
    const gathered = await gather(services, registries, signal, tracker);
    const status = registries.length > 0 && gathered.failedRegistries === registries.length ? "failed" : "success";

    let record: MarketplaceSyncRecord;
    try {
      record = await prisma.$transaction(async (tx) => {
        const run = await importGathered(tx, organizationId, gathered);
        const now = new Date();
        const { count } = await tx.marketplaceStore.updateMany({
          where: { id: store.id, organizationId },
          data: status === "success"
            ? { lastSyncAt: now, lastSyncAttemptAt: now, lastSyncError: null }
            : { lastSyncAttemptAt: now, lastSyncError: gathered.errors[0] ?? null },
        });
        if (count === 0) throw notFound("Marketplace store"); // removed while it was being read
        return writeRun(tx, store, options.triggeredBy, { ...run, status, durationMs: elapsed() });
      }, { timeout: 60_000 });
    } catch (err) {
      if (err instanceof TRPCError) throw err;
      services.logger.error({ storeId: store.id, err: { message: (err as Error)?.message } }, "marketplace sync: the catalog could not be written");
      record = await recordFailure(services, store, options.triggeredBy, elapsed());
      tracker.set({ state: "failed", finishedAt: new Date().toISOString(), syncRecordId: record.id, currentRegistry: null, currentRepository: null });
      await tracker.save().catch(() => undefined);
      throw unavailable(APPLICATION_SERVICE_UNAVAILABLE);
    }
    tracker.set({
      state: record.status === "success" ? "succeeded" : "failed", finishedAt: new Date().toISOString(), syncRecordId: record.id,
      currentRegistry: null, currentRepository: null, applicationsImported: record.applicationsImported, applicationsUpdated: record.applicationsUpdated,
      errors: (record.errors as string[]).length,
    });
    await tracker.save();
    return record;
  } finally {
    await releaseLease(prisma.marketplaceStore, store.id, lease).catch((err: Error) =>
      services.logger.warn({ storeId: store.id, err: err.message }, "marketplace sync: could not release the lease; it expires by itself"));
  }
}

/** A queued run that will not happen (the store was disabled meanwhile): the progress says idle again. */
async function endQueued(services: Services, store: MarketplaceStore, jobId: string | null) {
  const progress = progressOf(store);
  if (progress.state !== "queued" || progress.jobId !== jobId) return;
  await storeProgress(services.prisma, services, store.organizationId, { ...progress, state: "idle", finishedAt: new Date().toISOString() });
}

/** Step 2: every registry of the list, in order; a repository is read from the first registry that has it. */
async function gather(services: Services, registries: CombinedRegistry[], signal: AbortSignal, tracker: ProgressTracker): Promise<Gathered> {
  const gathered: Gathered = { read: emptyReadResult(), origin: new Map(), skippedRepositories: [], errors: [], failedRegistries: 0 };
  const { read } = gathered;
  for (const registry of registries) {
    const { row, source } = registry;
    let current: string | null = null;
    let toRead = 0;
    let readHere = 0;
    try {
      const client = registryClient(services, row, signal);
      // A global registry that lists no repository is discovered through its catalog.
      const repositories = row.repositories.length > 0 || row.kind === "tenant" ? row.repositories : await listCatalog(client);
      toRead = repositories.filter((repository) => !gathered.origin.has(repository)).length;
      tracker.repositoriesKnown(toRead);
      for (const repository of repositories) {
        const first = gathered.origin.get(repository);
        if (first) {
          gathered.skippedRepositories.push({
            registryId: source.id, registryName: source.name, repository, reason: `already taken from the earlier registry "${first.source.name}"`,
          });
          continue;
        }
        gathered.origin.set(repository, registry);
        tracker.repository(source.name, repository);
        current = repository;
        await readRepository(client, repository, read, () => tracker.tag());
        current = null;
        readHere += 1;
        await tracker.repositoryDone({
          applicationsFound: read.perRepository.reduce((n, r) => n + r.found, 0),
          skipped: read.skipped.length,
          errors: read.errors.length + gathered.errors.length,
        });
      }
    } catch (err) {
      // The registry could not be read (unreachable, credential refused): its other repositories are not tried.
      const message = `${source.name}: ${describeRegistryFailure(err)}`;
      gathered.failedRegistries += 1;
      // Its unread repositories leave the total, so that a finished run's bar is full.
      tracker.repositoriesKnown(-(toRead - readHere));
      gathered.errors.push(message);
      read.perRepository.find((r) => r.repository === current)?.errors.push(message);
    }
  }
  return gathered;
}

const versionKey = (item: ReadItem) => `${item.manifest.appKey}\u0000${item.manifest.version}`;

/** Step 3, inside the transaction: the import and the per-product breakdown. */
async function importGathered(tx: DbTx, organizationId: string, gathered: Gathered): Promise<Omit<Run, "status" | "durationMs">> {
  const { read, origin } = gathered;
  const registryOf = (repository: string) => origin.get(repository)!.source;
  const product = (repository: string, tag: string, fields: Pick<ProductDto, "outcome"> & Partial<ProductDto>): ProductDto => ({
    registryId: registryOf(repository).id, registryName: registryOf(repository).name, repository, tag, ...fields,
  });
  const products: ProductDto[] = [
    ...read.skipped.map((s) => product(s.repository, s.tag, { outcome: "skipped", reason: s.reason })),
    ...read.failedTags.map((s) => product(s.repository, s.tag, { outcome: "skipped", reason: s.reason })),
  ];
  // The same application version in two repositories: the first one read provides it.
  const firstPath = new Map<string, string>();
  const items = read.items.filter((item) => {
    const first = firstPath.get(versionKey(item));
    if (first === undefined) {
      firstPath.set(versionKey(item), item.path);
      return true;
    }
    products.push(product(item.repository, tagOf(item), {
      outcome: "skipped", reason: `application "${item.manifest.appKey}" version ${item.manifest.version} is already provided by ${first}`,
      application: item.manifest.appKey, version: item.manifest.version,
    }));
    return false;
  });
  const outcome = await importPackages(tx, organizationId, { items, perRepository: read.perRepository }, (item) => registryOf(item.repository).id, (item, result) => {
    products.push(product(item.repository, tagOf(item), {
      outcome: result.imported > 0 ? "imported" : result.updated > 0 ? "updated" : "unchanged",
      application: item.manifest.appKey, version: item.manifest.version,
    }));
  });
  const perRepository = read.perRepository.map((report) => {
    const { source } = origin.get(report.repository)!;
    return { ...report, registryId: source.id, registryName: source.name, registryKind: source.kind };
  });
  return {
    errors: [...gathered.errors, ...read.errors, ...outcome.errors],
    perRepository,
    products: products.sort((a, b) => a.repository.localeCompare(b.repository) || a.tag.localeCompare(b.tag)),
    skippedRepositories: gathered.skippedRepositories,
    found: read.perRepository.reduce((n, r) => n + r.found, 0),
    imported: outcome.imported,
    updated: outcome.updated,
  };
}

/** The tag of a package read as `<repository>:<tag>`. */
const tagOf = (item: ReadItem) => item.path.slice(item.repository.length + 1);

async function writeRun(tx: DbTx, store: MarketplaceStore, triggeredBy: string | null, run: Run): Promise<MarketplaceSyncRecord> {
  const record = await tx.marketplaceSyncRecord.create({
    data: {
      organizationId: store.organizationId,
      storeId: store.id,
      ...runCounts(run),
      perRepository: run.perRepository,
      products: run.products,
      skippedRepositories: run.skippedRepositories,
      triggeredBy,
    },
  });
  const manual = triggeredBy !== null && triggeredBy !== "scheduler";
  await writeAudit(tx, null, null, {
    action: "marketplace.sync",
    outcome: run.status === "success" ? "success" : "failure",
    organizationId: store.organizationId,
    entityType: "marketplace_store",
    entityId: store.id,
    ...(manual ? { actor: { type: "user" as const, id: triggeredBy, userId: triggeredBy } } : {}),
    changes: {
      syncRecordId: record.id, found: run.found, imported: run.imported, updated: run.updated,
      skipped: run.products.filter((p) => p.outcome === "skipped").length, errors: run.errors.length,
      trigger: manual ? "manual" : triggeredBy ?? "unknown",
    },
    ...(run.status === "failed" ? { message: run.errors[0] } : {}),
  });
  return record;
}

/** The catalog could not be written: the history and the audit log say so, nothing was imported. */
async function recordFailure(services: Services, store: MarketplaceStore, triggeredBy: string | null, durationMs: number) {
  const message = "the application catalog could not be written; nothing was imported";
  return services.prisma.$transaction(async (tx) => {
    await tx.marketplaceStore.updateMany({ where: { id: store.id }, data: { lastSyncError: message, lastSyncAttemptAt: new Date() } });
    return writeRun(tx, store, triggeredBy, {
      status: "failed", errors: [message], perRepository: [], products: [], skippedRepositories: [], found: 0, imported: 0, updated: 0, durationMs,
    });
  });
}
