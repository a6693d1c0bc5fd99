// One sync of an OCI registry, manual (or later scheduled), the pattern of the Git sync:
//   1. take the registry's sync lease (a second sync of the same registry is refused, 409);
//   2. read the listed repositories with no database transaction open: tags (Link paging),
//      each tag's manifest by digest, and the manifest layer of application packages;
//   3. import the admitted manifests with the shared ingest (src/modules/applications/ingest.ts)
//      in one short transaction, together with the registry's sync state, the sync record and
//      the audit entry.
// Tags that are not application packages (a plain image, an index, no description layer) are
// skipped with a reason. A registry that cannot be read records a failed run (success: false).
import { createHash } from "node:crypto";
import { performance } from "node:perf_hooks";
import { TRPCError } from "@trpc/server";
import type { DbTx } from "../../../db/client.js";
import type { OciRegistry, OciSyncRecord } from "../../../generated/prisma/client.js";
import { outboundPolicyOf } from "../../../lib/outbound.js";
import type { Services } from "../../../services.js";
import { writeAudit } from "../../../trpc/audit.js";
import { conflict, notFound, unavailable } from "../../../trpc/errors.js";
import { ingestManifests, type IngestItem } from "../../applications/ingest.js";
import { manifestDigest, MAX_MANIFEST_BYTES, parseManifest } from "../../applications/manifest/index.js";
import type { SyncTrigger } from "../git/sync.js";
import { createDistributionClient, RegistryError, type DistributionClient } from "./distribution.js";
import { describeRegistryFailure } from "./health.js";
import { acquireLease, releaseLease } from "../lease.js";
import { findOciRegistry } from "./service.js";

export const APP_ARTIFACT_TYPES = new Set(["application/vnd.margo.app.v1+json", "application/vnd.fleet.app.v1+json"]);
export const APP_DESCRIPTION_LAYER = "application/vnd.margo.app.description.v1+yaml";
export const MANIFEST_ACCEPT = [
  "application/vnd.oci.image.manifest.v1+json",
  "application/vnd.oci.image.index.v1+json",
  "application/vnd.docker.distribution.manifest.v2+json",
  "application/vnd.docker.distribution.manifest.list.v2+json",
].join(", ");
/** Tags read per repository and per page. */
export const MAX_TAGS_PER_REPOSITORY = 1000;
const TAG_PAGE_SIZE = 100;
const MAX_OCI_MANIFEST_BYTES = 4 * 1024 * 1024;
export const SYNC_TIMEOUT_MS = 5 * 60_000;
const SYNC_MAX_BYTES = 64 * 1024 * 1024;
/** Repositories read from a registry's catalog (GET /v2/_catalog) when none are listed. */
export const MAX_CATALOG_REPOSITORIES = 1000;

export const SYNC_ALREADY_RUNNING = "A sync of this OCI registry is already running";

export interface RepositoryReport { repository: string; tagCount: number; found: number; imported: number; updated: number; errors: string[] }
export interface SkippedTag { repository: string; tag: string; reason: string }

export type ReadItem = IngestItem & { repository: string; revision: string };

export interface ReadResult {
  items: ReadItem[];
  perRepository: RepositoryReport[];
  skipped: SkippedTag[];
  errors: string[];
  /** tags that could not be read (their message is in errors too) */
  failedTags: SkippedTag[];
}

export const emptyReadResult = (): ReadResult => ({ items: [], perRepository: [], skipped: [], errors: [], failedTags: [] });

/** The /v2/ client of a stored registry (tenant or global), its credential unsealed for this run only. */
export function registryClient(
  services: Services, registry: Pick<OciRegistry, "url" | "authType" | "credentialSealed" | "verifyTls">, signal: AbortSignal, maxBytes = SYNC_MAX_BYTES,
) {
  const credential = registry.credentialSealed ? services.secrets.decrypt(registry.credentialSealed) : undefined;
  return createDistributionClient({
    url: registry.url, authType: registry.authType, credential, verifyTls: registry.verifyTls,
    policy: outboundPolicyOf(services.config), signal, maxBytes,
  });
}

export async function syncOciRegistry(services: Services, organizationId: string, registryId: string, trigger: SyncTrigger): Promise<OciSyncRecord> {
  const { prisma } = services;
  const registry = await findOciRegistry(prisma, organizationId, registryId);
  if (!registry.enabled) throw conflict("OCI registry is disabled");
  const lease = await acquireLease(prisma.ociRegistry, registry.id, 2 * SYNC_TIMEOUT_MS);
  if (!lease) throw conflict(SYNC_ALREADY_RUNNING);
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const triggeredBy = trigger.principal ? trigger.principal.userId ?? null : "scheduler";
  try {
    let read: ReadResult;
    try {
      const client = registryClient(services, registry, AbortSignal.timeout(SYNC_TIMEOUT_MS));
      read = emptyReadResult();
      for (const repository of registry.repositories) await readRepository(client, repository, read);
    } catch (err) {
      const message = describeRegistryFailure(err);
      return await recordRun(services, registry, trigger, triggeredBy, {
        status: "failed", errors: [message], perRepository: [], skipped: [], found: 0, imported: 0, updated: 0, durationMs: elapsed(),
      });
    }

    try {
      return await prisma.$transaction(async (tx) => {
        const { imported, updated, errors } = await importPackages(tx, organizationId, read, () => registry.id);
        const now = new Date();
        const { count } = await tx.ociRegistry.updateMany({
          where: { id: registry.id, organizationId },
          data: { lastSyncAt: now, lastSyncAttemptAt: now, lastSyncError: null },
        });
        if (count === 0) throw notFound("OCI registry"); // deleted while it was being read
        return writeRun(tx, registry, trigger, triggeredBy, {
          status: "success", errors: [...read.errors, ...errors], perRepository: read.perRepository, skipped: read.skipped,
          found: read.perRepository.reduce((n, r) => n + r.found, 0), imported, updated, durationMs: elapsed(),
        });
      });
    } catch (err) {
      if (err instanceof TRPCError) throw err;
      services.logger.error({ registryId: registry.id, err: { message: (err as Error)?.message } }, "oci sync: the catalog could not be written");
      await recordRun(services, registry, trigger, triggeredBy, {
        status: "failed", errors: ["the application catalog could not be written; nothing was imported"], perRepository: [], skipped: [],
        found: 0, imported: 0, updated: 0, durationMs: elapsed(),
      }).catch(() => undefined);
      throw unavailable("Application service unavailable");
    }
  } finally {
    await releaseLease(prisma.ociRegistry, registry.id, lease).catch((err: Error) =>
      services.logger.warn({ registryId: registry.id, err: err.message }, "oci sync: could not release the lease; it expires by itself"));
  }
}

interface Run {
  status: "success" | "failed";
  errors: string[];
  perRepository: RepositoryReport[];
  skipped: SkippedTag[];
  found: number;
  imported: number;
  updated: number;
  durationMs: number;
}
type RegistryRef = { id: string; organizationId: string; name: string };

/** The counted columns of a sync record (OCI registry or marketplace store) for a run. */
export function runCounts(run: { status: string; errors: string[]; perRepository: unknown[]; found: number; imported: number; updated: number; durationMs: number }) {
  return {
    status: run.status,
    repositoriesFound: run.perRepository.length,
    applicationsFound: run.found,
    applicationsImported: run.imported,
    applicationsUpdated: run.updated,
    errors: run.errors,
    syncDurationMs: run.durationMs,
  };
}

async function writeRun(tx: DbTx, registry: RegistryRef, trigger: SyncTrigger, triggeredBy: string | null, run: Run) {
  const record = await tx.ociSyncRecord.create({
    data: {
      organizationId: registry.organizationId,
      registryId: registry.id,
      ...runCounts(run),
      perRepository: run.perRepository as object[],
      skipped: run.skipped as object[],
      triggeredBy,
    },
  });
  await writeAudit(tx, trigger.request, trigger.principal, {
    action: "registries.oci.sync",
    outcome: run.status === "success" ? "success" : "failure",
    organizationId: registry.organizationId,
    entityType: "oci_registry",
    entityId: registry.id,
    changes: {
      syncRecordId: record.id, found: run.found, imported: run.imported, updated: run.updated, skipped: run.skipped.length,
      errors: run.errors.length, trigger: trigger.principal ? "manual" : "scheduler",
    },
    ...(run.status === "failed" ? { message: run.errors[0] } : {}),
  });
  return record;
}

/** A failed run: the registry says why, the history and the audit log that it happened. */
async function recordRun(services: Services, registry: RegistryRef, trigger: SyncTrigger, triggeredBy: string | null, run: Run) {
  return services.prisma.$transaction(async (tx) => {
    const { count } = await tx.ociRegistry.updateMany({ where: { id: registry.id }, data: { lastSyncError: run.errors[0] ?? null, lastSyncAttemptAt: new Date() } });
    if (count === 0) throw notFound("OCI registry");
    return writeRun(tx, registry, trigger, triggeredBy, run);
  });
}

/**
 * Imports read packages with the shared ingest, one by one (each has its own revision, the
 * manifest digest), adding the counts to their repository's report. `onItem` sees each outcome.
 */
export async function importPackages(
  tx: DbTx,
  organizationId: string,
  read: Pick<ReadResult, "items" | "perRepository">,
  registryIdOf: (item: ReadItem) => string,
  onItem?: (item: ReadItem, outcome: { imported: number; updated: number; errors: string[] }) => void,
) {
  const total = { imported: 0, updated: 0, errors: [] as string[] };
  for (const item of read.items) {
    const outcome = await ingestManifests(tx, organizationId, { type: "oci", registryId: registryIdOf(item), revision: item.revision }, [item]);
    const report = read.perRepository.find((r) => r.repository === item.repository)!;
    report.imported += outcome.imported;
    report.updated += outcome.updated;
    report.errors.push(...outcome.errors);
    total.errors.push(...outcome.errors);
    total.imported += outcome.imported;
    total.updated += outcome.updated;
    onItem?.(item, outcome);
  }
  return total;
}

export const sha256 = (data: Buffer) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

export async function readBody(client: DistributionClient, res: Awaited<ReturnType<DistributionClient["request"]>>, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += chunk.length;
    if (size > limit) {
      await client.drain(res);
      throw new RegistryError(`a response exceeded ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export async function expectOk(client: DistributionClient, res: Awaited<ReturnType<DistributionClient["request"]>>, what: string) {
  if (res.status === 200) return;
  await client.drain(res);
  if (res.status === 401 || res.status === 403) throw new RegistryError(`${what}: the registry refused the credential (${res.status})`, res.status);
  throw new RegistryError(`${what}: the registry answered ${res.status}`, res.status);
}

/** A paged name list of the distribution API, following `Link: <...>; rel="next"` pages. */
async function listPaged(client: DistributionClient, first: string, field: "tags" | "repositories", what: string, max: number, scope?: string): Promise<string[]> {
  const names: string[] = [];
  let next: string | null = first;
  while (next && names.length < max) {
    const res = await client.request(next, { accept: "application/json", scope });
    await expectOk(client, res, what);
    let body: Partial<Record<typeof field, string[] | null>>;
    try {
      body = JSON.parse((await readBody(client, res, 1024 * 1024)).toString("utf8")) as typeof body;
    } catch (err) {
      if (err instanceof RegistryError) throw err;
      throw new RegistryError(`${what}: the list is not JSON`);
    }
    names.push(...(body[field] ?? []).filter((t) => typeof t === "string"));
    // RFC 5988 Link header, relative to the page that named it.
    const link = /<([^>]+)>\s*;\s*rel="?next"?/i.exec(res.headers.link ?? "");
    next = link ? new URL(link[1]!, res.url).toString() : null;
  }
  return names.slice(0, max);
}

/** Every tag of a repository (at most MAX_TAGS_PER_REPOSITORY). */
export function listTags(client: DistributionClient, repository: string): Promise<string[]> {
  return listPaged(client, `/v2/${repository}/tags/list?n=${TAG_PAGE_SIZE}`, "tags", `${repository}: tags`, MAX_TAGS_PER_REPOSITORY, `repository:${repository}:pull`);
}

/** The registry's repositories from its catalog (GET /v2/_catalog), for registries that list none. */
export function listCatalog(client: DistributionClient): Promise<string[]> {
  return listPaged(client, `/v2/_catalog?n=${TAG_PAGE_SIZE}`, "repositories", "catalog", MAX_CATALOG_REPOSITORIES, "registry:catalog:*");
}

interface Descriptor { mediaType?: string; digest?: string; size?: number }
interface OciManifest { mediaType?: string; artifactType?: string; config?: Descriptor; layers?: Descriptor[]; manifests?: unknown[] }

/**
 * Reads one repository into `result`: its report, the admitted packages, the skipped tags.
 * A missing repository is this repository's error; an unreachable registry or a refused
 * credential throws (it fails the registry). `onTag` is told each tag before it is read.
 */
export async function readRepository(client: DistributionClient, repository: string, result: ReadResult, onTag?: (tag: string) => void): Promise<RepositoryReport> {
  const report: RepositoryReport = { repository, tagCount: 0, found: 0, imported: 0, updated: 0, errors: [] };
  result.perRepository.push(report);
  const scope = `repository:${repository}:pull`;
  let tags: string[];
  try {
    tags = await listTags(client, repository);
  } catch (err) {
    if (!(err instanceof RegistryError) || err.status === 401 || err.status === 403) throw err;
    report.errors.push(err.message);
    result.errors.push(err.message);
    return report;
  }
  report.tagCount = tags.length;
  for (const tag of tags) {
    onTag?.(tag);
    const skip = (reason: string) => result.skipped.push({ repository, tag, reason });
    try {
      // The tag names a digest; the manifest is read by that digest and checked against it.
      const head = await client.request(`/v2/${repository}/manifests/${encodeURIComponent(tag)}`, { method: "HEAD", accept: MANIFEST_ACCEPT, scope });
      await client.drain(head);
      if (head.status !== 200) throw new RegistryError(`${repository}:${tag}: the registry answered ${head.status}`, head.status);
      const digest = head.headers["docker-content-digest"];
      if (!digest || !/^sha256:[0-9a-f]{64}$/.test(digest)) throw new RegistryError(`${repository}:${tag}: the registry named no sha256 digest`);
      const res = await client.request(`/v2/${repository}/manifests/${digest}`, { accept: MANIFEST_ACCEPT, scope });
      await expectOk(client, res, `${repository}:${tag}`);
      const raw = await readBody(client, res, MAX_OCI_MANIFEST_BYTES);
      if (sha256(raw) !== digest) throw new RegistryError(`${repository}:${tag}: the manifest does not match its digest`);
      let manifest: OciManifest;
      try {
        manifest = JSON.parse(raw.toString("utf8")) as OciManifest;
      } catch {
        skip("the manifest is not JSON");
        continue;
      }
      const mediaType = manifest.mediaType ?? res.headers["content-type"] ?? "";
      if (manifest.manifests !== undefined || /index|manifest\.list/.test(mediaType)) {
        skip(`an image index (${mediaType || "no media type"}), not an application package`);
        continue;
      }
      const artifactType = manifest.artifactType ?? manifest.config?.mediaType ?? "";
      if (!APP_ARTIFACT_TYPES.has(artifactType)) {
        skip(`not an application package: artifactType ${artifactType || "(none)"}`);
        continue;
      }
      const layer = (manifest.layers ?? []).find((l) => l.mediaType === APP_DESCRIPTION_LAYER);
      if (!layer?.digest || !/^sha256:[0-9a-f]{64}$/.test(layer.digest)) {
        skip(`no layer of media type ${APP_DESCRIPTION_LAYER}`);
        continue;
      }
      if ((layer.size ?? 0) > MAX_MANIFEST_BYTES) {
        skip(`the application description is larger than ${MAX_MANIFEST_BYTES / 1024} KiB`);
        continue;
      }
      const blobRes = await client.request(`/v2/${repository}/blobs/${layer.digest}`, { scope });
      await expectOk(client, blobRes, `${repository}:${tag}: description layer`);
      const blob = await readBody(client, blobRes, MAX_MANIFEST_BYTES);
      if (sha256(blob) !== layer.digest) throw new RegistryError(`${repository}:${tag}: the description layer does not match its digest`);
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(blob);
      } catch {
        skip("the application description is not UTF-8 text");
        continue;
      }
      const reference = `${repository}:${tag}`;
      const parsed = parseManifest(text, reference);
      if (parsed.kind === "error") {
        skip(parsed.message);
        continue;
      }
      report.found += 1;
      if (parsed.kind === "rejected") {
        skip(parsed.reason);
        continue;
      }
      if (parsed.manifest.version !== tag) {
        skip(`the tag differs from metadata.version ${parsed.manifest.version}`);
        continue;
      }
      result.items.push({
        repository, revision: digest, path: reference, manifest: parsed.manifest, warnings: [...parsed.warnings],
        digest: manifestDigest(text), icon: null,
      });
    } catch (err) {
      if (!(err instanceof RegistryError)) throw err;
      report.errors.push(err.message);
      result.errors.push(err.message);
      result.failedTags.push({ repository, tag, reason: err.message });
    }
  }
  return report;
}
