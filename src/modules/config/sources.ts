// Config sources (docs/config-as-code.md): a Git repository, branch and folder whose YAML
// documents are applied to the organization, with the source as owner ("source:<name>").
// The fetch is the Git registries' (isomorphic-git over smart HTTP, the outbound address
// policy, one deadline and byte budget); the apply is the same engine as POST .../config/apply,
// in one transaction: a refused or failed sync changes nothing and keeps the last good commit.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import * as git from "isomorphic-git";
import type { ConfigSource } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit } from "../../trpc/audit.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { outboundPolicyOf } from "../../lib/outbound.js";
import { counted } from "../../lib/plural.js";
import { createGitRegistryInput } from "../registries/git/schemas.js";
import { assertCredentialFits, authorizationHeader, sealCredential } from "../registries/git/credentials.js";
import { assertUrlNotForbidden } from "../registries/url.js";
import { describeFetchError, fetchAndRead, GitFetchError } from "../registries/git/repository.js";
import { findManifests } from "../registries/git/scan.js";
import { DeploymentEvents } from "../deployments/events.js";
import { runPlan, type PlanResult } from "./plan.js";
import type { SourceFile } from "./documents.js";

/** The connection fields are a Git registry's (same checks); prune and adopt as in an apply. */
export const createSourceInput = createGitRegistryInput.pick({ name: true, url: true, branch: true, path: true, authType: true, credential: true }).extend({
  prune: z.boolean().pipe(z.boolean()).default(false).describe("delete what the source applied and no longer holds"),
  adopt: z.boolean().pipe(z.boolean()).default(false).describe("take over resources of the same name no one manages as code"),
  pruneLimit: z.number().int().min(0).max(10_000).default(10).describe("the prune guard: a sync that would delete more resources is refused until allowed once"),
});
export type CreateSourceInput = z.infer<typeof createSourceInput>;

export const sourceOutput = z.object({
  id: z.string(), name: z.string(), url: z.string(), branch: z.string(), path: z.string(), authType: z.string(), hasCredentials: z.boolean(),
  prune: z.boolean(), adopt: z.boolean(), pruneLimit: z.number().int(), pruneAllowedOnce: z.boolean().describe("the next sync may delete more than pruneLimit"), owner: z.string().describe("the owner mark of the resources it applies"),
  lastAppliedCommit: z.string().nullable(), lastAppliedAt: z.string().nullable(),
  lastSyncStatus: z.enum(["applied", "refused", "failed"]).nullable(), lastSyncMessage: z.string().nullable(), lastSyncAt: z.string().nullable(),
  createdAt: z.string(), updatedAt: z.string(),
});

export const ownerOfSource = (name: string) => `source:${name}`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toSourceDto(row: ConfigSource): z.infer<typeof sourceOutput> {
  return {
    id: row.id, name: row.name, url: row.url, branch: row.branch, path: row.path, authType: row.authType, hasCredentials: row.credentialSealed !== null,
    prune: row.prune, adopt: row.adopt, pruneLimit: row.pruneLimit, pruneAllowedOnce: row.pruneAllowedOnce, owner: ownerOfSource(row.name),
    lastAppliedCommit: row.lastAppliedCommit, lastAppliedAt: iso(row.lastAppliedAt),
    lastSyncStatus: row.lastSyncStatus as "applied" | "refused" | "failed" | null, lastSyncMessage: row.lastSyncMessage, lastSyncAt: iso(row.lastSyncAt),
    createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString(),
  };
}

export async function findSource(db: DbTx, organizationId: string, id: string): Promise<ConfigSource> {
  const row = await db.configSource.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Config source");
  return row;
}

export async function createSource(db: DbTx, services: Services, organizationId: string, input: CreateSourceInput): Promise<ConfigSource> {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
  if (await db.configSource.findFirst({ where: { organizationId, name: input.name }, select: { id: true } })) throw conflict(`A config source named "${input.name}" already exists`);
  return db.configSource.create({
    data: {
      organizationId, name: input.name, url: input.url, branch: input.branch, path: input.path, authType: input.authType,
      credentialSealed: sealCredential(services.secrets, input.credential), prune: input.prune, adopt: input.adopt, pruneLimit: input.pruneLimit,
    },
  });
}

const MANAGED_TABLES = ["deployment", "alertRule", "notificationTarget", "role", "gitRegistry", "ociRegistry"] as const;

/** The source goes; what it applied stays, unowned (the API manages it again). */
export async function deleteSource(db: DbTx, organizationId: string, id: string) {
  const row = await findSource(db, organizationId, id);
  let released = 0;
  for (const table of MANAGED_TABLES) {
    const { count } = await (db[table] as { updateMany(args: object): Promise<{ count: number }> }).updateMany({
      where: { organizationId, managedBy: ownerOfSource(row.name) }, data: { managedBy: null, managedCommit: null },
    });
    released += count;
  }
  await db.configSource.delete({ where: { id: row.id } });
  return { id: row.id, deleted: true as const, released };
}

/** Every *.yaml / *.yml below the source's folder at `oid`, with its path in the repository. */
async function readDocuments(gitdir: string, oid: string, folder: string): Promise<SourceFile[]> {
  const found = await findManifests({ gitdir, oid }, folder, (name) => /\.ya?ml$/i.test(name));
  const files: SourceFile[] = [];
  for (const file of found) {
    const { blob } = await git.readBlob({ fs, gitdir, oid: file.oid });
    files.push({ path: file.path, content: Buffer.from(blob).toString("utf8") });
  }
  return files;
}

export interface SyncAnswer {
  status: "applied" | "refused" | "failed";
  commit: string | null;
  message: string;
  result: PlanResult | null;
}

/**
 * Fetches the branch and applies its documents as the source, in one transaction. The
 * outcome is recorded on the source and audited (with the caller, and the source named).
 */
export async function syncSource(services: Services, principal: Principal, request: RequestInfo | null, organizationId: string, id: string): Promise<SyncAnswer> {
  const { prisma, config } = services;
  const source = await findSource(prisma, organizationId, id);
  const record = async (db: DbTx, answer: SyncAnswer) => {
    const now = new Date();
    await db.configSource.update({
      where: { id: source.id },
      data: {
        lastSyncStatus: answer.status, lastSyncMessage: answer.message.slice(0, 2000), lastSyncAt: now,
        // an allowance of the prune guard is spent by the sync it let through
        ...(answer.status === "applied" ? { lastAppliedCommit: answer.commit, lastAppliedAt: now, pruneAllowedOnce: false } : {}),
      },
    });
    await writeAudit(db, request, principal, {
      action: "config.sourceSync", outcome: answer.status === "applied" ? "success" : "failure", organizationId, entityType: "config_source", entityId: source.id,
      changes: { source: source.name, commit: answer.commit, status: answer.status, ...(answer.result ? { refused: answer.result.refused } : {}) },
      message: answer.message,
    });
    return answer;
  };

  let commit: string;
  let files: SourceFile[];
  const cacheDir = path.resolve(config.DATA_DIR, "config-cache", source.id);
  try {
    ({ commit, value: files } = await fetchAndRead({
      cacheDir, url: source.url, branch: source.branch,
      authorization: authorizationHeader(services.secrets, source.authType, source.credentialSealed),
      policy: outboundPolicyOf(config), timeoutMs: config.GIT_SYNC_TIMEOUT_SECONDS * 1000, maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES, logger: services.logger,
    }, (oid) => readDocuments(cacheDir, oid, source.path)));
  } catch (err) {
    const failure = err instanceof GitFetchError ? err : describeFetchError(err, { url: source.url, branch: source.branch, maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES, logger: services.logger });
    return record(prisma, { status: "failed", commit: null, message: failure.message, result: null });
  }

  const events = new DeploymentEvents();
  const refusedAnswer = { value: null as SyncAnswer | null };
  const applied = await prisma.$transaction(async (tx) => {
    const result = await runPlan(
      { db: tx, services, principal: { ...principal, organizationId }, organizationId, events, request, log: (err) => services.logger.error({ err: String(err) }, "config source: internal error") },
      files, { prune: source.prune, adopt: source.adopt, owner: ownerOfSource(source.name), commit, maxDeletes: source.pruneAllowedOnce ? null : source.pruneLimit }, "apply",
    );
    if (result.refused > 0) {
      const refused = result.entries.filter((e) => e.action === "refused");
      refusedAnswer.value = {
        status: "refused", commit, result,
        message: `${counted(refused.length, "document")} refused at ${commit.slice(0, 12)}: ` +
          refused.slice(0, 5).map((e) => `${e.file ?? "(prune)"}${e.line ? `:${e.line}` : ""} ${e.kind}${e.name ? ` "${e.name}"` : ""}: ${e.message}`).join("; "),
      };
      return null; // runPlan rolled its changes back; the refusal is recorded below, on its own
    }
    return record(tx, { status: "applied", commit, message: `applied ${commit.slice(0, 12)}: ${counted(files.length, "file")}`, result });
  });
  if (applied) {
    events.publishTo(services);
    return applied;
  }
  return record(prisma, refusedAnswer.value!);
}

/** Lets the next sync delete more than the source's prune limit, once. */
export async function allowPruneOnce(db: DbTx, organizationId: string, id: string): Promise<ConfigSource> {
  const row = await findSource(db, organizationId, id);
  return db.configSource.update({ where: { id: row.id }, data: { pruneAllowedOnce: true } });
}
