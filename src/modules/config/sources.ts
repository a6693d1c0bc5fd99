// Config sources (docs/config-as-code.md): a Git repository, branch and folder whose YAML
// documents are applied to the organization, with the source as owner ("source:<name>").
// The fetch is the Git registries' (isomorphic-git over smart HTTP, the outbound address
// policy, one deadline and byte budget); the apply is the same engine as POST .../config/apply,
// in one transaction: a refused or failed sync changes nothing and keeps the last good commit.
import fs from "node:fs";
import path from "node:path";
import { z } from "zod";
import type { ConfigSource } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { DbTx } from "../../db/client.js";
import type { Principal } from "../../trpc/principal.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit, type AuditRecord } from "../../trpc/audit.js";
import { conflict, notFound } from "../../trpc/errors.js";
import { outboundPolicyOf } from "../../lib/outbound.js";
import { counted } from "../../lib/plural.js";
import { createGitRegistryInput, updateGitRegistryInput } from "../registries/git/schemas.js";
import { assertCredentialFits, authorizationHeader, sealCredential } from "../registries/git/credentials.js";
import { assertUrlNotForbidden } from "../registries/url.js";
import { describeFetchError, fetchAndRead, GitFetchError } from "../registries/git/repository.js";
import { findManifests } from "../registries/git/scan.js";
import { DeploymentEvents } from "../deployments/events.js";
import { ACTIONS, canonical, runPlan, type PlanEntry, type PlanOptions, type PlanResult } from "./plan.js";
import type { Kind, SourceFile } from "./documents.js";
import { HANDLERS, type Existing, type KindContext, type KindHandler } from "./kinds.js";
import { randomToken, sha256Hex } from "../../lib/crypto.js";
import { isomorphicGit } from "../../lib/on-first-use.js";
import { connectionChanges } from "../registries/rules.js";

/** The connection fields are a Git registry's (same checks); prune and adopt as in an apply. */
export const MIN_POLL_SECONDS = 30;
/** The prune guard's bounds, for a source and for a direct apply (router.ts). */
export const pruneLimitBound = z.number().int().min(0).max(10_000);
export const prunePercentBound = z.number().int().min(0).max(100).nullable();
const pruneLimit = pruneLimitBound.describe("the prune guard: a sync that would delete more resources is refused until allowed once");
const prunePercent = prunePercentBound
  .describe("the prune guard's share: a sync that would delete more than this percent of the resources the source owns is refused until allowed once (null: no share limit)");
const pollIntervalSeconds = z.number().int().min(0).max(86_400)
  .refine((v) => v === 0 || v >= MIN_POLL_SECONDS, { message: `0 (no polling) or at least ${MIN_POLL_SECONDS} seconds` })
  .describe("seconds between polls of the branch; 0: no polling (webhook and sync now only)");
export const createSourceInput = createGitRegistryInput.pick({ name: true, url: true, branch: true, path: true, authType: true, credential: true }).extend({
  prune: z.boolean().pipe(z.boolean()).default(false).describe("delete what the source applied and no longer holds"),
  adopt: z.boolean().pipe(z.boolean()).default(false).describe("take over resources of the same name no one manages as code"),
  pruneLimit: pruneLimit.default(10),
  prunePercent: prunePercent.default(null),
  pollIntervalSeconds: pollIntervalSeconds.default(120),
});
export type CreateSourceInput = z.infer<typeof createSourceInput>;

/** PATCH: every field but the name (the owner mark of what the source applied is its name). */
export const updateSourceInput = updateGitRegistryInput.pick({ url: true, branch: true, path: true, authType: true, credential: true }).extend({
  prune: z.boolean().pipe(z.boolean()).optional().describe("delete what the source applied and no longer holds"),
  adopt: z.boolean().pipe(z.boolean()).optional().describe("take over resources of the same name no one manages as code"),
  pruneLimit: pruneLimit.optional(),
  prunePercent: prunePercent.optional(),
  pollIntervalSeconds: pollIntervalSeconds.optional(),
});
export type UpdateSourceInput = z.infer<typeof updateSourceInput>;

export const SYNC_STATUSES = ["applied", "refused", "failed"] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];
export const TRIGGER_TYPES = ["user", "api_key", "webhook", "schedule"] as const;
export type TriggerType = (typeof TRIGGER_TYPES)[number];

/** The webhook's path under /api/v1 (src/modules/config/webhook-route.ts). */
export const webhookPathOf = (id: string) => `/api/v1/config-sources/${id}/webhook`;

export const sourceOutput = z.object({
  id: z.string(), name: z.string(), url: z.string(), branch: z.string(), path: z.string(), authType: z.string(), hasCredentials: z.boolean(),
  prune: z.boolean(), adopt: z.boolean(), pruneLimit: z.number().int(), prunePercent: z.number().int().nullable(),
  pruneAllowedOnce: z.boolean().describe("the next sync may delete more than the prune guard allows"), owner: z.string().describe("the owner mark of the resources it applies"),
  pollIntervalSeconds: z.number().int().describe("0: no polling"),
  webhookPath: z.string().describe("POST here from the Git host (GitHub, GitLab or Gitea style signature)"),
  hasWebhookSecret: z.boolean().describe("false: the webhook answers 401 until a secret is made (POST .../webhook-secret)"),
  actingUserId: z.string().nullable().describe("the user whose role bounds what the source applies: who created or last edited it"),
  lastAppliedCommit: z.string().nullable(), lastAppliedAt: z.string().nullable(),
  lastSyncStatus: z.enum(SYNC_STATUSES).nullable(), lastSyncMessage: z.string().nullable(), lastSyncAt: z.string().nullable(),
  lastSyncCommit: z.string().nullable().describe("the commit the last sync fetched (a poll or webhook finding it again does nothing)"),
  createdAt: z.string(), updatedAt: z.string(),
});

export const ownerOfSource = (name: string) => `source:${name}`;
const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function toSourceDto(row: ConfigSource): z.infer<typeof sourceOutput> {
  return {
    id: row.id, name: row.name, url: row.url, branch: row.branch, path: row.path, authType: row.authType, hasCredentials: row.credentialSealed !== null,
    prune: row.prune, adopt: row.adopt, pruneLimit: row.pruneLimit, prunePercent: row.prunePercent, pruneAllowedOnce: row.pruneAllowedOnce, owner: ownerOfSource(row.name),
    pollIntervalSeconds: row.pollIntervalSeconds, webhookPath: webhookPathOf(row.id), hasWebhookSecret: row.webhookSecretSealed !== null, actingUserId: row.actingUserId,
    lastAppliedCommit: row.lastAppliedCommit, lastAppliedAt: iso(row.lastAppliedAt),
    lastSyncStatus: row.lastSyncStatus as SyncStatus | null, lastSyncMessage: row.lastSyncMessage, lastSyncAt: iso(row.lastSyncAt), lastSyncCommit: row.lastSyncCommit,
    createdAt: row.createdAt.toISOString(), updatedAt: row.updatedAt.toISOString(),
  };
}

export async function findSource(db: DbTx, organizationId: string, id: string): Promise<ConfigSource> {
  const row = await db.configSource.findFirst({ where: { id, organizationId } });
  if (!row) throw notFound("Config source");
  return row;
}

/** A new webhook secret: shown once, kept sealed (HMAC verification needs it back). */
function newWebhookSecret(services: Services): { secret: string; sealed: string } {
  const secret = randomToken("whsec_", 40);
  return { secret, sealed: services.secrets.encrypt(secret) };
}

export async function createSource(db: DbTx, services: Services, organizationId: string, actingUserId: string, input: CreateSourceInput): Promise<{ row: ConfigSource; webhookSecret: string }> {
  assertUrlNotForbidden(input.url);
  assertCredentialFits(input.authType, input.credential);
  if (await db.configSource.findFirst({ where: { organizationId, name: input.name }, select: { id: true } })) throw conflict(`A config source named "${input.name}" already exists`);
  const webhook = newWebhookSecret(services);
  const row = await db.configSource.create({
    data: {
      organizationId, name: input.name, url: input.url, branch: input.branch, path: input.path, authType: input.authType,
      credentialSealed: sealCredential(services.secrets, input.credential), prune: input.prune, adopt: input.adopt, pruneLimit: input.pruneLimit,
      prunePercent: input.prunePercent, pollIntervalSeconds: input.pollIntervalSeconds, webhookSecretSealed: webhook.sealed, actingUserId,
    },
  });
  return { row, webhookSecret: webhook.secret };
}

/**
 * PATCH: the editor becomes the acting user. Pointing the source elsewhere (url, branch, path)
 * forgets the last fetched commit, so the next poll or webhook applies the new place.
 */
export async function updateSource(db: DbTx, services: Services, organizationId: string, id: string, actingUserId: string, input: UpdateSourceInput) {
  const current = await findSource(db, organizationId, id);
  const connection = connectionChanges(services.secrets, current, input);
  const elsewhere = connection.urlChanged || (input.branch !== undefined && input.branch !== current.branch) || (input.path !== undefined && input.path !== current.path);
  const row = await db.configSource.update({
    where: { id: current.id },
    data: {
      ...connection.columns,
      ...(input.branch !== undefined ? { branch: input.branch } : {}),
      ...(input.path !== undefined ? { path: input.path } : {}),
      ...(input.prune !== undefined ? { prune: input.prune } : {}),
      ...(input.adopt !== undefined ? { adopt: input.adopt } : {}),
      ...(input.pruneLimit !== undefined ? { pruneLimit: input.pruneLimit } : {}),
      ...(input.prunePercent !== undefined ? { prunePercent: input.prunePercent } : {}),
      ...(input.pollIntervalSeconds !== undefined ? { pollIntervalSeconds: input.pollIntervalSeconds } : {}),
      ...(elsewhere ? { lastSyncCommit: null } : {}),
      actingUserId,
    },
  });
  return { before: current, row };
}

/** A new webhook secret replaces the old one at once; the answer is the only time it is shown. */
export async function rotateWebhookSecret(db: DbTx, services: Services, organizationId: string, id: string) {
  const current = await findSource(db, organizationId, id);
  const webhook = newWebhookSecret(services);
  const row = await db.configSource.update({ where: { id: current.id }, data: { webhookSecretSealed: webhook.sealed } });
  return { row, webhookSecret: webhook.secret };
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
  const git = await isomorphicGit();
  for (const file of found) {
    const { blob } = await git.readBlob({ fs, gitdir, oid: file.oid });
    files.push({ path: file.path, content: Buffer.from(blob).toString("utf8") });
  }
  return files;
}

/** Who asked for a sync: a user or API key (sync now), a verified webhook push, or the poll. */
export type SyncTrigger =
  | { type: "user" | "api_key"; principal: Principal; request: RequestInfo | null }
  | { type: "webhook"; style: string }
  | { type: "schedule" };

export interface SyncAnswer {
  /** unchanged: a poll or webhook found the commit the last sync already fetched; nothing was done but lastSyncAt */
  status: SyncStatus | "unchanged";
  commit: string | null;
  message: string;
  result: PlanResult | null;
  /** the history entry written (null for unchanged) */
  syncId: string | null;
}

/** How many history entries a source keeps (older ones are deleted by the sync that adds one). */
export const SYNC_HISTORY_KEEP = 100;

const refusedLine = (e: PlanEntry) => `${e.file ?? "(prune)"}${e.line ? `:${e.line}` : ""} ${e.kind}${e.name ? ` "${e.name}"` : ""}: ${e.message}`;

/**
 * The principal a source acts as: its acting user (who created or last edited it) with that
 * user's current role in the organization, so a source never applies more than its user could.
 */
async function sourcePrincipal(db: DbTx, source: ConfigSource): Promise<Principal | string> {
  if (!source.actingUserId) return "the source has no acting user: edit it (PATCH) to act as yourself";
  const user = await db.user.findUnique({
    where: { id: source.actingUserId },
    select: { status: true, isSuperAdmin: true, memberships: { where: { organizationId: source.organizationId }, select: { role: { select: { permissions: true } } } } },
  });
  if (!user || user.status !== "active") return "the source's acting user is disabled or removed: edit the source (PATCH) to act as yourself";
  const permissions = user.isSuperAdmin ? ["*"] : user.memberships[0]?.role.permissions;
  if (!permissions) return "the source's acting user left the organization: edit the source (PATCH) to act as yourself";
  return {
    kind: "user", userId: source.actingUserId, apiKeyId: null, sessionId: null, organizationId: source.organizationId,
    permissionSets: [new Set(permissions)], isSuperAdmin: false,
  };
}

/** The audit actor of a sync: the caller of sync now, else the source itself ("source:<name>"). */
function actorOf(source: ConfigSource, trigger: SyncTrigger): AuditRecord["actor"] | undefined {
  if (trigger.type === "user" || trigger.type === "api_key") return undefined;
  return { type: "system", id: ownerOfSource(source.name), userId: source.actingUserId };
}

/** Fetches the source's branch and reads its documents; a failure is described in the Git registries' words. */
async function fetchDocuments(services: Services, source: ConfigSource): Promise<{ commit: string; files: SourceFile[] } | { failure: string }> {
  const { config } = services;
  const cacheDir = path.resolve(config.DATA_DIR, "config-cache", source.id);
  try {
    const { commit, value: files } = await fetchAndRead({
      cacheDir, url: source.url, branch: source.branch,
      authorization: authorizationHeader(services.secrets, source.authType, source.credentialSealed),
      policy: outboundPolicyOf(config), timeoutMs: config.GIT_SYNC_TIMEOUT_SECONDS * 1000, maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES, logger: services.logger,
    }, (oid) => readDocuments(cacheDir, oid, source.path));
    return { commit, files };
  } catch (err) {
    const failure = err instanceof GitFetchError ? err : describeFetchError(err, { url: source.url, branch: source.branch, maxBytes: config.GIT_SYNC_MAX_FETCH_BYTES, logger: services.logger });
    return { failure: failure.message };
  }
}

/** The plan options of a source: its owner mark, prune and adopt, and the prune guard unless allowed once. */
const planOptionsOf = (source: ConfigSource, commit: string): PlanOptions => ({
  prune: source.prune, adopt: source.adopt, owner: ownerOfSource(source.name), commit,
  pruneGuard: source.pruneAllowedOnce ? null
    : { limit: source.pruneLimit, percent: source.prunePercent, owned: "this source owns", past: "nothing is deleted until it is allowed once" },
});

const logOf = (services: Services) => (err: unknown) => services.logger.error({ err: err instanceof Error ? err.message : String(err) }, "config source: internal error");

/**
 * The source's plan: its branch fetched now and planned as a sync would apply it (as the
 * source, with its prune guard); nothing is written but the audit entry. `failure` when the
 * fetch failed or the source cannot act.
 */
export async function planSource(services: Services, principal: Principal, request: RequestInfo | null, organizationId: string, id: string) {
  const source = await findSource(services.prisma, organizationId, id);
  const acting = await sourcePrincipal(services.prisma, source);
  const fetched = typeof acting === "string" ? { failure: acting } : await fetchDocuments(services, source);
  return services.prisma.$transaction(async (tx) => {
    const failure = "failure" in fetched ? fetched.failure : null;
    const result = "failure" in fetched ? null : await runPlan(
      { db: tx, services, principal: acting as Principal, organizationId, events: new DeploymentEvents(), request, log: logOf(services) },
      fetched.files, planOptionsOf(source, fetched.commit), "plan",
    );
    const commit = "failure" in fetched ? null : fetched.commit;
    await writeAudit(tx, request, principal, {
      action: "config.sourcePlan", outcome: failure ? "failure" : "success", organizationId, entityType: "config_source", entityId: source.id,
      changes: { source: source.name, commit, ...(result ? Object.fromEntries(ACTIONS.map((a) => [a, result.entries.filter((e) => e.action === a).length])) : {}) },
      message: failure,
    });
    return { commit, failure, result };
  });
}

/** kind/name (a name holds no "/"): the key of a resource in appliedHashes. */
export const resourceKey = (kind: string, name: string) => `${kind}/${name}`;
export const specHash = (spec: Record<string, unknown>) => sha256Hex(canonical(spec)).slice(0, 32);

/** What the source's resources are now, normalized as a plan reads them (for the drift hashes and the status). */
export async function ownedResources(ctx: KindContext, owner: string) {
  const existing = new Map<Kind, Existing[]>();
  for (const h of HANDLERS) existing.set(h.kind, await h.list(ctx));
  const owned: Array<{ handler: KindHandler; resource: Existing; hash: string }> = [];
  for (const h of HANDLERS) {
    for (const r of existing.get(h.kind)!) {
      if (r.managedBy !== owner) continue;
      let spec: Record<string, unknown>;
      try {
        spec = h.normalize({ existing }, r.spec);
      } catch {
        spec = r.spec;
      }
      owned.push({ handler: h, resource: r, hash: specHash(spec) });
    }
  }
  return owned;
}

/**
 * Fetches the branch and applies its documents as the source, in one transaction. The
 * outcome is recorded on the source and in its history, and audited (with the caller for
 * sync now, else with the source as actor). `skipSameCommit` (poll and webhook): when the
 * branch is at the commit the last sync fetched, nothing happens but lastSyncAt.
 * `expectedCommit` (sync now after a plan): the commit the person reviewed; when the branch
 * moved since, nothing is applied or recorded and the answer is a 409 naming both commits.
 */
export async function syncSource(
  services: Services, trigger: SyncTrigger, organizationId: string, id: string, options: { skipSameCommit?: boolean; expectedCommit?: string } = {},
): Promise<SyncAnswer> {
  const { prisma } = services;
  const startedAt = new Date();
  const source = await findSource(prisma, organizationId, id);
  // A webhook push that arrives from now on asks again (the schedule picks it up).
  await prisma.configSource.updateMany({ where: { id: source.id, syncRequestedAt: { not: null } }, data: { syncRequestedAt: null } });
  const userPrincipal = trigger.type === "user" || trigger.type === "api_key" ? trigger.principal : null;
  const request = trigger.type === "user" || trigger.type === "api_key" ? trigger.request : null;
  const actor = actorOf(source, trigger);
  const owner = ownerOfSource(source.name);

  const record = async (db: DbTx, answer: Omit<SyncAnswer, "syncId">, hashes?: Record<string, string>): Promise<SyncAnswer> => {
    const now = new Date();
    await db.configSource.update({
      where: { id: source.id },
      data: {
        lastSyncStatus: answer.status, lastSyncMessage: answer.message.slice(0, 2000), lastSyncAt: now,
        ...(answer.commit ? { lastSyncCommit: answer.commit } : {}),
        // an allowance of the prune guard is spent by the sync it let through
        ...(answer.status === "applied" ? { lastAppliedCommit: answer.commit, lastAppliedAt: now, pruneAllowedOnce: false, appliedHashes: hashes ?? {} } : {}),
      },
    });
    const count = (a: string) => answer.result?.entries.filter((e) => e.action === a).length ?? 0;
    const refusals = answer.result?.entries.filter((e) => e.action === "refused")
      .slice(0, 50).map((e) => ({ kind: e.kind, name: e.name, file: e.file, line: e.line, message: e.message })) ?? [];
    const entry = await db.configSourceSync.create({
      data: {
        sourceId: source.id, organizationId, commit: answer.commit, status: answer.status, message: answer.message.slice(0, 2000),
        created: count("create"), updated: count("update"), deleted: count("delete"), unchanged: count("unchanged"), refused: count("refused"),
        triggerType: trigger.type,
        triggeredBy: trigger.type === "webhook" ? trigger.style : userPrincipal ? (userPrincipal.apiKeyId ?? userPrincipal.userId) : null,
        refusals: refusals.length ? refusals : undefined, startedAt, finishedAt: now,
      },
    });
    // bounded history: one set-based delete of everything past the newest SYNC_HISTORY_KEEP
    await db.$executeRaw`
      DELETE FROM "ConfigSourceSync" WHERE "sourceId" = ${source.id}::uuid AND "id" NOT IN (
        SELECT "id" FROM "ConfigSourceSync" WHERE "sourceId" = ${source.id}::uuid ORDER BY "startedAt" DESC, "id" DESC LIMIT ${SYNC_HISTORY_KEEP})`;
    await writeAudit(db, request, userPrincipal, {
      action: "config.sourceSync", outcome: answer.status === "applied" ? "success" : "failure", organizationId, entityType: "config_source", entityId: source.id,
      changes: { source: source.name, commit: answer.commit, status: answer.status, trigger: trigger.type, ...(answer.result ? { refused: answer.result.refused } : {}) },
      message: answer.message, actor,
    });
    return { ...answer, syncId: entry.id };
  };

  const acting = await sourcePrincipal(prisma, source);
  const fetched = typeof acting === "string" ? { failure: acting } : await fetchDocuments(services, source);
  if ("failure" in fetched) {
    // The same failure again from a poll: lastSyncAt only, the history keeps its first entry.
    if (options.skipSameCommit && source.lastSyncStatus === "failed" && source.lastSyncMessage === fetched.failure.slice(0, 2000)) {
      await prisma.configSource.update({ where: { id: source.id }, data: { lastSyncAt: new Date() } });
      return { status: "unchanged", commit: null, message: fetched.failure, result: null, syncId: null };
    }
    return record(prisma, { status: "failed", commit: null, message: fetched.failure, result: null });
  }
  const { commit, files } = fetched;
  if (options.expectedCommit && options.expectedCommit !== commit) {
    throw conflict(`The branch ${source.branch} moved from ${options.expectedCommit.slice(0, 12)} to ${commit.slice(0, 12)} since the plan; nothing was applied: plan again`);
  }
  if (options.skipSameCommit && source.lastSyncCommit === commit) {
    await prisma.configSource.update({ where: { id: source.id }, data: { lastSyncAt: new Date() } });
    return { status: "unchanged", commit, message: `already synced ${commit.slice(0, 12)}`, result: null, syncId: null };
  }

  const events = new DeploymentEvents();
  const refusedAnswer = { value: null as Omit<SyncAnswer, "syncId"> | null };
  const applied = await prisma.$transaction(async (tx) => {
    // one sync of a source at a time: a second waits here, then applies on top of the first
    await tx.$queryRaw`SELECT "id" FROM "ConfigSource" WHERE "id" = ${source.id}::uuid FOR UPDATE`;
    const kctx = { db: tx, services, principal: acting as Principal, organizationId, events };
    const result = await runPlan({ ...kctx, request, log: logOf(services), actor }, files, planOptionsOf(source, commit), "apply");
    if (result.refused > 0) {
      const refused = result.entries.filter((e) => e.action === "refused");
      refusedAnswer.value = {
        status: "refused", commit, result,
        message: `${counted(refused.length, "document")} refused at ${commit.slice(0, 12)}: ${refused.slice(0, 5).map(refusedLine).join("; ")}`,
      };
      return null; // runPlan rolled its changes back; the refusal is recorded below, on its own
    }
    const hashes = Object.fromEntries((await ownedResources(kctx, owner)).map((o) => [resourceKey(o.handler.kind, o.resource.name), o.hash]));
    return record(tx, { status: "applied", commit, message: `applied ${commit.slice(0, 12)}: ${counted(files.length, "file")}`, result }, hashes);
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

export const RESOURCE_STATUSES = ["in sync", "pending secret", "refused", "drifted"] as const;

/**
 * Per resource of a source: in sync; pending secret (naming the fields); refused (a document
 * of the last sync was refused: file, line and why; also for a resource it would have
 * created); drifted (the resource differs from what the last applied sync left: its spec's
 * hash is not the one recorded then).
 */
export async function sourceResources(ctx: KindContext, source: ConfigSource) {
  const owner = ownerOfSource(source.name);
  const [owned, last] = await Promise.all([
    ownedResources(ctx, owner),
    ctx.db.configSourceSync.findFirst({ where: { sourceId: source.id }, orderBy: [{ startedAt: "desc" }, { id: "desc" }], select: { status: true, refusals: true } }),
  ]);
  type Refusal = { kind: string; name: string | null; file: string | null; line: number | null; message: string | null };
  const refusals = last?.status === "refused" ? ((last.refusals ?? []) as Refusal[]) : [];
  const refusalOf = new Map(refusals.filter((r) => r.name).map((r) => [resourceKey(r.kind, r.name!), r]));
  const hashes = (source.appliedHashes ?? {}) as Record<string, string>;
  const items = owned.map(({ handler, resource, hash }) => {
    const key = resourceKey(handler.kind, resource.name);
    const refusal = refusalOf.get(key);
    refusalOf.delete(key);
    const drifted = hashes[key] !== undefined && hashes[key] !== hash;
    const status: (typeof RESOURCE_STATUSES)[number] = refusal ? "refused" : drifted ? "drifted" : resource.pendingSecrets.length ? "pending secret" : "in sync";
    return {
      kind: handler.kind as string, name: resource.name, id: resource.id as string | null, status, managedCommit: resource.managedCommit, pendingSecrets: resource.pendingSecrets,
      file: refusal?.file ?? null, line: refusal?.line ?? null,
      message: refusal?.message ?? (drifted ? `differs from what commit ${(resource.managedCommit ?? "").slice(0, 12)} applied; sync now applies it again` : null),
    };
  });
  for (const r of [...refusalOf.values(), ...refusals.filter((x) => !x.name)]) {
    items.push({ kind: r.kind, name: r.name ?? "", id: null, status: "refused", managedCommit: null, pendingSecrets: [], file: r.file, line: r.line, message: r.message });
  }
  return items;
}
