// The live progress of a store's sync: a snapshot kept on the store row (so that any process
// can answer it) and published on the event bus at every step (LISTEN/NOTIFY carries it to
// the other processes on PostgreSQL), where the progress stream (progress-route.ts) picks it up.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import { eventBusOf } from "../../lib/events.js";
import type { Services } from "../../services.js";
import type { Progress } from "./schemas.js";

export const PROGRESS_EVENT = "marketplace.sync_progress";

declare module "../../lib/events.js" {
  interface FleetEvents {
    "marketplace.sync_progress": Progress & { organizationId: string };
  }
}

export function idleProgress(storeId: string): Progress {
  return {
    storeId, state: "idle", jobId: null, triggeredBy: null, startedAt: null, finishedAt: null, registriesTotal: 0,
    currentRegistry: null, currentRepository: null, repositoriesDone: 0, repositoriesTotal: 0, tagsRead: 0, applicationsFound: 0,
    applicationsImported: 0, applicationsUpdated: 0, skipped: 0, errors: 0, syncRecordId: null, updatedAt: new Date().toISOString(),
  };
}

/** The stored snapshot, completed with defaults (an untouched store is idle). */
export function progressOf(store: { id: string; progress: Prisma.JsonValue }): Progress {
  const stored = (store.progress ?? {}) as Partial<Progress>;
  return { ...idleProgress(store.id), ...(typeof stored === "object" && !Array.isArray(stored) ? stored : {}), storeId: store.id };
}

export async function saveProgress(db: DbTx, organizationId: string, progress: Progress): Promise<void> {
  progress.updatedAt = new Date().toISOString();
  await db.marketplaceStore.updateMany({ where: { id: progress.storeId, organizationId }, data: { progress: progress as unknown as Prisma.InputJsonValue } });
}

export function publishProgress(services: Services, organizationId: string, progress: Progress): void {
  eventBusOf(services).publish(PROGRESS_EVENT, { ...progress, organizationId });
}

/** Writes the snapshot now and tells the subscribers after (the caller's transaction, if any, decides when it is seen). */
export async function storeProgress(db: DbTx, services: Services, organizationId: string, progress: Progress): Promise<void> {
  await saveProgress(db, organizationId, progress);
  publishProgress(services, organizationId, progress);
}

/**
 * The progress of one run: every step is published at once; the snapshot on the row is written
 * when a repository ends (and at the start and the end of the run), so that the run does not
 * write a row per tag.
 */
export function progressTracker(services: Services, organizationId: string, start: Progress) {
  const progress: Progress = { ...start };
  const publish = () => {
    progress.updatedAt = new Date().toISOString();
    publishProgress(services, organizationId, progress);
  };
  const save = () => storeProgress(services.prisma, services, organizationId, progress);
  return {
    progress,
    save,
    repository(registryName: string, repository: string) {
      progress.currentRegistry = registryName;
      progress.currentRepository = repository;
      publish();
    },
    /** the repositories a registry will read, known once its list is (progress bars measure against the total) */
    repositoriesKnown(count: number) {
      progress.repositoriesTotal += count;
      publish();
    },
    tag() {
      progress.tagsRead += 1;
      publish();
    },
    async repositoryDone(counts: Pick<Progress, "applicationsFound" | "skipped" | "errors">) {
      progress.repositoriesDone += 1;
      Object.assign(progress, counts);
      await save();
    },
    set(fields: Partial<Progress>) {
      Object.assign(progress, fields);
    },
  };
}
export type ProgressTracker = ReturnType<typeof progressTracker>;
