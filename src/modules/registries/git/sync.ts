// One sync of a Git registry (spec op 20), manual or scheduled:
//   1. take the registry's sync lease (a second sync of the same registry, from any process, is refused);
//   2. fetch and scan with no database transaction open (network I/O can take minutes);
//   3. import everything in one short transaction, together with the registry's sync state
//      and the audit entry: the catalog has all of this sync or none of it.
// A fetch that fails (unreachable, missing branch, bad credentials, limits) answers
// success: false and is recorded in lastSyncError; a catalog that cannot be written is 503.
import { performance } from "node:perf_hooks";
import type { Services } from "../../../services.js";
import { outboundPolicyOf } from "../../../lib/outbound.js";
import { writeAudit } from "../../../trpc/audit.js";
import type { RequestInfo } from "../../../trpc/context.js";
import { TRPCError } from "@trpc/server";
import { conflict, notFound, unavailable } from "../../../trpc/errors.js";
import type { Principal } from "../../../trpc/principal.js";
import { ingestManifests, type IngestOutcome } from "../../applications/ingest.js";
import { authorizationHeader } from "./credentials.js";
import { cacheDirFor, describeFetchError, fetchAndRead, GitFetchError } from "./repository.js";
import { scanCommit, type ScanResult } from "./scan.js";
import type { SyncResult } from "./schemas.js";
import { findGitRegistry } from "./service.js";
import { acquireLease, releaseLease } from "../lease.js";

export interface SyncTrigger {
  /** null for the scheduler */
  principal: Principal | null;
  request: RequestInfo | null;
}

export const SYNC_ALREADY_RUNNING = "A sync of this Git registry is already running";

export async function syncGitRegistry(services: Services, organizationId: string, registryId: string, trigger: SyncTrigger): Promise<SyncResult> {
  const { prisma, config } = services;
  const registry = await findGitRegistry(prisma, organizationId, registryId);
  if (!registry.enabled) throw conflict("Git registry is disabled");
  const timeoutMs = config.GIT_SYNC_TIMEOUT_SECONDS * 1000;
  const lease = await acquireLease(prisma.gitRegistry, registry.id, 2 * timeoutMs + 60_000);
  if (!lease) throw conflict(SYNC_ALREADY_RUNNING);

  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  try {
    let commit: string;
    let scan: ScanResult;
    try {
      const cacheDir = cacheDirFor(config.DATA_DIR, registry.id);
      ({ commit, value: scan } = await fetchAndRead({
        cacheDir,
        url: registry.url,
        branch: registry.branch,
        authorization: authorizationHeader(services.secrets, registry.authType, registry.credentialSealed),
        policy: outboundPolicyOf(config),
        timeoutMs,
        maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES,
        logger: services.logger,
      }, (oid) => scanCommit({ gitdir: cacheDir, oid }, registry.path, AbortSignal.timeout(timeoutMs))));
    } catch (err) {
      // fetchAndRead throws GitFetchErrors only; anything else (e.g. the credential cannot be
      // unsealed) is described the same way, without its details.
      const failure = err instanceof GitFetchError ? err : describeFetchError(err, { ...registry, maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES, logger: services.logger });
      await recordFailure(services, registry, trigger, failure.message);
      return { ...emptyResult(registry.id, elapsed()), errors: [failure.message] };
    }

    let outcome: IngestOutcome;
    try {
      outcome = await prisma.$transaction(async (tx) => {
        const imported = await ingestManifests(tx, organizationId, { type: "git", registryId: registry.id, revision: commit }, scan.admitted);
        const now = new Date();
        const { count } = await tx.gitRegistry.updateMany({
          where: { id: registry.id, organizationId },
          data: { lastSyncAt: now, lastSyncAttemptAt: now, lastSyncError: null, lastSyncCommit: commit },
        });
        if (count === 0) throw notFound("Git registry"); // deleted while it was being fetched
        await writeAudit(tx, trigger.request, trigger.principal, auditRecord(registry, "success", {
          commit, found: scan.found, imported: imported.imported, updated: imported.updated,
          rejected: scan.rejected.length, errors: scan.errors.length + imported.errors.length,
        }, trigger));
        return imported;
      });
    } catch (err) {
      if (err instanceof TRPCError) throw err;
      services.logger.error({ registryId: registry.id, err: { message: (err as Error)?.message } }, "git sync: the catalog could not be written");
      await recordFailure(services, registry, trigger, "the application catalog could not be written; nothing was imported");
      throw unavailable("Application service unavailable");
    }

    return {
      success: true,
      registryId: registry.id,
      scope: "tenant",
      applicationsFound: scan.found,
      applicationsImported: outcome.imported,
      applicationsUpdated: outcome.updated,
      errors: [...scan.errors, ...outcome.errors],
      rejectedManifests: scan.rejected,
      syncDuration: elapsed(),
      commit,
    };
  } finally {
    await releaseLease(prisma.gitRegistry, registry.id, lease).catch((err: Error) =>
      services.logger.warn({ registryId: registry.id, err: err.message }, "git sync: could not release the lease; it expires by itself"));
  }
}

function emptyResult(registryId: string, syncDuration: number): SyncResult {
  return {
    success: false, registryId, scope: "tenant", applicationsFound: 0, applicationsImported: 0, applicationsUpdated: 0,
    errors: [], rejectedManifests: [], syncDuration, commit: "",
  };
}

type RegistryRef = { id: string; organizationId: string; name: string };

function auditRecord(registry: RegistryRef, outcome: "success" | "failure", changes: Record<string, unknown>, trigger: SyncTrigger) {
  return {
    action: "registries.git.sync",
    outcome,
    organizationId: registry.organizationId,
    entityType: "git_registry",
    entityId: registry.id,
    changes: { ...changes, trigger: trigger.principal ? "manual" : "scheduler" },
  } as const;
}

/** Best effort: the registry says why the sync failed, and the audit log that it did. */
async function recordFailure(services: Services, registry: RegistryRef, trigger: SyncTrigger, message: string) {
  try {
    await services.prisma.$transaction(async (tx) => {
      await tx.gitRegistry.updateMany({ where: { id: registry.id }, data: { lastSyncError: message, lastSyncAttemptAt: new Date() } });
      await writeAudit(tx, trigger.request, trigger.principal, { ...auditRecord(registry, "failure", {}, trigger), message });
    });
  } catch (err) {
    services.logger.error({ registryId: registry.id, err: { message: (err as Error)?.message } }, "git sync: could not record the failure");
  }
}

