// /organizations/{orgId}/config: fleet as code (docs/config-as-code.md). Documents in,
// a plan out (nothing written), the same plan applied in one transaction, the organization's
// resources exported as documents, and the documents' JSON Schema. What a caller may plan,
// apply or export is what their permissions allow on each kind (deployments:write for a
// Deployment document, ...); a document of a kind they may not touch is refused.
import { z } from "zod";
import { TRPCError } from "@trpc/server";
import { authedProcedure, denyAccess, router } from "../../trpc/procedures.js";
import { can } from "../../trpc/principal.js";
import { HANDLERS } from "./kinds.js";
import {
  allowPruneOnce, createSource, createSourceInput, deleteSource, findSource, planSource, RESOURCE_STATUSES, rotateWebhookSecret, sourceOutput, sourceResources,
  pruneLimitBound, prunePercentBound, SYNC_STATUSES, syncSource, toSourceDto, TRIGGER_TYPES, updateSource, updateSourceInput, webhookPathOf,
} from "./sources.js";
import { pageOf, pageOutput, pagingInput } from "../../lib/paging.js";
import { changedFields } from "../../trpc/audit.js";
import { organizationOfPath } from "../members/organization-scope.js";
import { DeploymentEvents, eventsOf } from "../deployments/events.js";
import type { AuthedContext } from "../../trpc/procedures.js";
import { ACTIONS, runPlan, type PlanResult, type PruneGuard } from "./plan.js";
import { documentJsonSchema, exportDocuments } from "./export.js";
import type { KindContext } from "./kinds.js";
import { counted } from "../../lib/plural.js";
import type { AuditNote } from "../../trpc/audit.js";

const TAG = "Configuration as code";
const orgPath = z.object({ orgId: z.uuid() });
const bodyBoolean = z.boolean().pipe(z.boolean());

const planInput = orgPath.extend({
  files: z.array(z.object({
    path: z.string().trim().min(1).max(500).describe("the file's path in the repository (named in refusals)"),
    content: z.string().max(1024 * 1024).describe("YAML: one or more documents separated by ---"),
  })).min(1).max(500),
  prune: bodyBoolean.default(false).describe("delete the resources this owner manages that no document declares any more"),
  adopt: bodyBoolean.default(false).describe("take over resources of the same kind and name that no one manages as code yet"),
  commit: z.string().regex(/^[0-9a-f]{7,64}$/, "a Git commit id (hex)").optional().describe("the commit the documents come from, recorded in the owner mark"),
  pruneLimit: pruneLimitBound.nullable().default(null)
    .describe("the prune guard (as a config source's): a prune that would delete more resources refuses every deletion (null: no limit; fleet apply sends 10)"),
  prunePercent: prunePercentBound.default(null)
    .describe("the prune guard's share: a prune that would delete more than this percent of the resources direct applies manage refuses every deletion (null: no share limit)"),
});

/** The guard an apply asked for (none unless pruneLimit or prunePercent is given): a config source's rule (plan.ts). */
const pruneGuardOf = (input: { pruneLimit: number | null; prunePercent: number | null }): PruneGuard | null =>
  input.pruneLimit === null && input.prunePercent === null ? null
    : { limit: input.pruneLimit, percent: input.prunePercent, owned: "direct applies manage", past: "nothing is deleted unless pruneLimit and prunePercent allow it" };

const planEntry = z.object({
  kind: z.string(),
  name: z.string().nullable(),
  action: z.enum(ACTIONS),
  file: z.string().nullable(),
  line: z.number().int().nullable(),
  message: z.string().nullable().describe("refused: the API's message; exists_unmanaged: why nothing happens"),
  changes: z.array(z.object({ field: z.string(), old: z.unknown(), new: z.unknown() })).describe("update: the fields that change, old and new"),
  managedBy: z.string().nullable().describe("the owner mark: apply:<who> or a config source; null = managed through the API"),
  status: z.enum(["in sync", "pending secret"]).nullable(),
  pendingSecrets: z.array(z.string()).describe("secret fields the resource waits for (set them through the API)"),
  id: z.string().nullable(),
});

const planOutput = z.object({
  applied: z.boolean(),
  summary: z.object(Object.fromEntries(ACTIONS.map((a) => [a, z.number().int()])) as Record<(typeof ACTIONS)[number], z.ZodNumber>),
  resources: z.array(planEntry),
});

function summarize(result: PlanResult, applied: boolean): z.infer<typeof planOutput> {
  const summary = Object.fromEntries(ACTIONS.map((a) => [a, result.entries.filter((e) => e.action === a).length])) as z.infer<typeof planOutput>["summary"];
  return { applied, summary, resources: result.entries };
}

async function kindContext(ctx: AuthedContext, orgId: string, audit: { organizationId?: string | null } | null, events: DeploymentEvents): Promise<KindContext> {
  const org = await organizationOfPath(ctx.db, ctx.principal, orgId, audit);
  return { db: ctx.db, services: ctx.services, principal: { ...ctx.principal, organizationId: org.id }, organizationId: org.id, events };
}

async function ownerOf(ctx: AuthedContext): Promise<string> {
  const user = await ctx.db.user.findUnique({ where: { id: ctx.principal.userId }, select: { email: true } });
  return `apply:${user?.email ?? ctx.principal.userId}${ctx.principal.apiKeyId ? ` (API key ${ctx.principal.apiKeyId})` : ""}`;
}

type Ctx = AuthedContext & { audit: AuditNote | null; afterCommit: (effect: () => void) => void };

/** Plan or apply in the mutation's transaction; its audit entry names the files and what happened to how many resources. */
async function run(ctx: Ctx, input: z.infer<typeof planInput>, mode: "plan" | "apply"): Promise<PlanResult> {
  const kctx = await kindContext(ctx, input.orgId, ctx.audit, mode === "apply" ? eventsOf(ctx) : new DeploymentEvents());
  const options = { prune: input.prune, adopt: input.adopt, owner: await ownerOf(ctx), commit: input.commit ?? null, pruneGuard: pruneGuardOf(input) };
  const result = await runPlan({ ...kctx, request: ctx.request, log: log(ctx) }, input.files, options, mode);
  ctx.audit!.changes = {
    files: input.files.map((f) => f.path), prune: input.prune, adopt: input.adopt, commit: options.commit,
    ...(options.pruneGuard ? { pruneLimit: input.pruneLimit, prunePercent: input.prunePercent } : {}),
    ...Object.fromEntries(ACTIONS.map((a) => [a, result.entries.filter((e) => e.action === a).length])),
  };
  return result;
}

/** A source applies every kind: managing one takes the write (reading: the read) permission of all six. */
async function assertAllKinds(ctx: AuthedContext, path: string, action: "read" | "write") {
  const missing = HANDLERS.map((h) => h[action]).find((p) => !can(ctx.principal, p));
  if (missing) await denyAccess(ctx, ctx.principal, path, `Missing permission ${missing}`);
}

const sourcePath = orgPath.extend({ id: z.uuid() });

const syncEntry = z.object({
  id: z.string(),
  commit: z.string().nullable().describe("null: the fetch failed"),
  status: z.enum(SYNC_STATUSES),
  message: z.string(),
  counts: z.object({ created: z.number().int(), updated: z.number().int(), deleted: z.number().int(), unchanged: z.number().int(), refused: z.number().int() }),
  trigger: z.object({
    type: z.enum(TRIGGER_TYPES),
    id: z.string().nullable().describe("the user's or API key's id"),
    name: z.string().nullable().describe("the user's e-mail, the key's name, the webhook's style (github, gitlab, gitea) or poll"),
  }),
  refusals: z.array(z.object({ kind: z.string(), name: z.string().nullable(), file: z.string().nullable(), line: z.number().int().nullable(), message: z.string().nullable() })),
  startedAt: z.string(),
  finishedAt: z.string(),
});
const SOURCES = "/organizations/{orgId}/config/sources";

const log = (ctx: AuthedContext) => (err: unknown) => ctx.services.logger.error({ err: err instanceof Error ? err.message : String(err), requestId: ctx.request.requestId }, "config: internal error");

export const configRouter = router({
  schema: authedProcedure
    .meta({
      openapi: {
        method: "GET", path: "/organizations/{orgId}/config/schema", tags: [TAG],
        summary: "The JSON Schema of a configuration document (for editors)",
        description: "Generated from the same zod schemas as the API's create inputs: each kind's spec is its create input without the name (metadata.name) and without secret fields.",
      },
    })
    .input(orgPath)
    .output(z.record(z.string(), z.unknown()))
    .query(async ({ ctx, input }) => {
      await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      return documentJsonSchema();
    }),

  export: authedProcedure
    .meta({
      openapi: {
        method: "GET", path: "/organizations/{orgId}/config/export", tags: [TAG],
        summary: "The organization's deployments, alert rules, notification targets, roles and registries as documents",
        description: "One YAML stream of every resource of the kinds the caller may read; owner marks and missing secrets as comments. Planning the export answers unchanged for everything.",
      },
    })
    .input(orgPath)
    .output(z.object({ documents: z.string(), count: z.number().int(), kinds: z.array(z.string()) }))
    .query(async ({ ctx, input }) => exportDocuments(await kindContext(ctx, input.orgId, null, new DeploymentEvents()))),

  plan: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/organizations/{orgId}/config/plan", tags: [TAG],
        summary: "Plan documents: what an apply would do, per resource; nothing is written",
        description:
          "Each resource: create, update (the changed fields, old and new), unchanged, delete (prune only), refused (file, line and the API's message) " +
          "or exists_unmanaged (a resource of that name the API manages; adopt takes it over). Every change is tried through the API's own rules and rolled back.",
      },
      audit: { entity: "config", action: "config.plan" },
    })
    .input(planInput)
    .output(planOutput)
    .mutation(async ({ ctx, input }) => summarize(await run(ctx, input, "plan"), false)),

  applyDocuments: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: "/organizations/{orgId}/config/apply", tags: [TAG],
        summary: "Apply documents in one transaction: all of them or nothing",
        description:
          "The plan, carried out through the modules' own operations (a Deployment edit follows the same rules as PATCH /deployments/{id}); every resource " +
          "applied is marked as managed (apply:<who>, and the commit when given) and audited. Any refused document refuses the whole apply (400, or 409 " +
          "when every refusal is a conflict) naming file and line, and nothing changes.",
      },
      audit: { entity: "config", action: "config.apply" },
    })
    .input(planInput)
    .output(planOutput)
    .mutation(async ({ ctx, input }) => {
      const result = await run(ctx, input, "apply");
      if (result.refused > 0) {
        const refused = result.entries.filter((e) => e.action === "refused");
        const where = refused.slice(0, 5).map((e) => `${e.file ?? "(prune)"}${e.line ? `:${e.line}` : ""} ${e.kind}${e.name ? ` "${e.name}"` : ""}: ${e.message}`);
        const conflictOnly = refused.every((e) => e.conflict);
        throw new TRPCError({
          code: conflictOnly ? "CONFLICT" : "BAD_REQUEST",
          message: `Nothing applied: ${counted(refused.length, "document")} refused: ${where.join("; ")}${refused.length > 5 ? "; ..." : ""}`,
        });
      }
      return summarize(result, true);
    }),

  sourcesList: authedProcedure
    .meta({ openapi: { method: "GET", path: SOURCES, tags: [TAG], summary: "The organization's config sources with their last sync" } })
    .input(orgPath)
    .output(z.object({ items: z.array(sourceOutput) }))
    .query(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      await assertAllKinds(ctx, path, "read");
      const rows = await ctx.db.configSource.findMany({ where: { organizationId: org.id }, orderBy: { name: "asc" } });
      return { items: rows.map(toSourceDto) };
    }),

  sourcesCreate: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: SOURCES, tags: [TAG], summary: "Create a config source: a Git repository, branch and folder of documents",
        description: "url, branch, path, authType and credential as for a Git registry (the same checks and outbound address policy); prune and adopt as in an apply. Nothing is fetched until a sync.",
      },
      successStatus: 201,
      audit: { entity: "config_source" },
    })
    .input(orgPath.extend(createSourceInput.shape))
    .output(sourceOutput.extend({ webhookSecret: z.string().describe("the webhook's secret: shown this once (rotate it with POST .../webhook-secret)") }))
    .mutation(async ({ ctx, input: { orgId, ...input }, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, orgId, ctx.audit);
      await assertAllKinds(ctx, path, "write");
      const { row, webhookSecret } = await createSource(ctx.db, ctx.services, org.id, ctx.principal.userId, input);
      if (ctx.audit) ctx.audit.entityId = row.id;
      return { ...toSourceDto(row), webhookSecret };
    }),

  sourcesUpdate: authedProcedure
    .meta({
      openapi: {
        method: "PATCH", path: `${SOURCES}/{id}`, tags: [TAG], summary: "Edit a config source (not its name: that is the owner mark of what it applied)",
        description:
          "url, branch, path, authType and credential as for a Git registry; prune, adopt, the prune guard (pruneLimit, prunePercent) and pollIntervalSeconds " +
          "(0 or at least 30). The editor becomes the source's acting user (whose role bounds what it applies). Pointing it elsewhere makes the next poll apply the new place.",
      },
      audit: { entity: "config_source" },
    })
    .input(sourcePath.extend(updateSourceInput.shape))
    .output(sourceOutput)
    .mutation(async ({ ctx, input: { orgId, id, ...input }, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, orgId, ctx.audit);
      await assertAllKinds(ctx, path, "write");
      const { before, row } = await updateSource(ctx.db, ctx.services, org.id, id, ctx.principal.userId, input);
      if (ctx.audit) ctx.audit.changes = changedFields(before, { ...input, credential: undefined, ...(input.credential !== undefined ? { credentialChanged: true } : {}) });
      return toSourceDto(row);
    }),

  sourcesRotateWebhookSecret: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: `${SOURCES}/{id}/webhook-secret`, tags: [TAG], summary: "Make a new webhook secret for a config source (shown once; the old one stops working)",
      },
      audit: { entity: "config_source" },
    })
    .input(sourcePath)
    .output(z.object({ id: z.string(), webhookPath: z.string(), webhookSecret: z.string() }))
    .mutation(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      await assertAllKinds(ctx, path, "write");
      const { row, webhookSecret } = await rotateWebhookSecret(ctx.db, ctx.services, org.id, input.id);
      if (ctx.audit) ctx.audit.changes = { webhookSecret: "rotated" };
      return { id: row.id, webhookPath: webhookPathOf(row.id), webhookSecret };
    }),

  sourcesPlan: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: `${SOURCES}/{id}/plan`, tags: [TAG], summary: "Plan a config source: fetch its branch and answer what a sync would do; nothing is written",
        description:
          "The branch's documents planned as the source would apply them (its owner mark, prune, adopt and prune guard): per resource create, update (changed fields, " +
          "old and new), unchanged, delete, refused (file, line, the API's message) or exists_unmanaged. failure names why nothing could be planned (the fetch failed).",
      },
      audit: false, // network I/O first; the plan writes its own entry
    })
    .input(sourcePath)
    .output(z.object({ commit: z.string().nullable(), failure: z.string().nullable(), summary: planOutput.shape.summary.nullable(), resources: z.array(planEntry) }))
    .mutation(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      await assertAllKinds(ctx, path, "read");
      const { commit, failure, result } = await planSource(ctx.services, ctx.principal, ctx.request, org.id, input.id);
      const planned = result ? summarize(result, false) : null;
      return { commit, failure, summary: planned?.summary ?? null, resources: planned?.resources ?? [] };
    }),

  sourcesSyncs: authedProcedure
    .meta({
      openapi: {
        method: "GET", path: `${SOURCES}/{id}/syncs`, tags: [TAG], summary: "A config source's sync history, newest first (the last 100 syncs are kept)",
        description: "Each sync: the commit, applied/refused/failed and why, the counts, who triggered it (a user, an API key, a webhook or the poll) and when.",
      },
    })
    .input(sourcePath.extend(pagingInput))
    .output(pageOutput(syncEntry))
    .query(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      await assertAllKinds(ctx, path, "read");
      const source = await findSource(ctx.db, org.id, input.id);
      const where = { sourceId: source.id };
      const [rows, total] = await Promise.all([
        ctx.db.configSourceSync.findMany({ where, orderBy: [{ startedAt: "desc" }, { id: "desc" }], take: input.limit, skip: input.offset }),
        ctx.db.configSourceSync.count({ where }),
      ]);
      const ids = (type: string) => [...new Set(rows.filter((r) => r.triggerType === type && r.triggeredBy).map((r) => r.triggeredBy!))];
      const [users, keys] = await Promise.all([
        ctx.db.user.findMany({ where: { id: { in: ids("user") } }, select: { id: true, email: true } }),
        ctx.db.apiKey.findMany({ where: { id: { in: ids("api_key") }, organizationId: org.id }, select: { id: true, name: true } }),
      ]);
      const names = new Map<string, string>([...users.map((u) => [u.id, u.email] as const), ...keys.map((k) => [k.id, k.name] as const)]);
      return pageOf(rows.map((r) => ({
        id: r.id, commit: r.commit, status: r.status as (typeof SYNC_STATUSES)[number], message: r.message,
        counts: { created: r.created, updated: r.updated, deleted: r.deleted, unchanged: r.unchanged, refused: r.refused },
        trigger: {
          type: r.triggerType as (typeof TRIGGER_TYPES)[number], id: r.triggerType === "user" || r.triggerType === "api_key" ? r.triggeredBy : null,
          name: r.triggerType === "webhook" ? r.triggeredBy : r.triggerType === "schedule" ? "poll" : (names.get(r.triggeredBy ?? "") ?? null),
        },
        refusals: (r.refusals ?? []) as z.infer<typeof syncEntry>["refusals"],
        startedAt: r.startedAt.toISOString(), finishedAt: r.finishedAt.toISOString(),
      })), total, input.offset);
    }),

  sourcesResources: authedProcedure
    .meta({
      openapi: {
        method: "GET", path: `${SOURCES}/{id}/resources`, tags: [TAG], summary: "The resources of a config source and the status of each",
        description:
          "in sync; pending secret (pendingSecrets names the fields to set through the API); refused (a document of the last sync was refused: file, line, why); " +
          "drifted (the resource differs from what the last applied sync left; sync now applies the documents again).",
      },
    })
    .input(sourcePath)
    .output(z.object({ items: z.array(z.object({
      kind: z.string(), name: z.string(), id: z.string().nullable(), status: z.enum(RESOURCE_STATUSES), managedCommit: z.string().nullable(),
      pendingSecrets: z.array(z.string()), file: z.string().nullable(), line: z.number().int().nullable(), message: z.string().nullable(),
    })) }))
    .query(async ({ ctx, input, path }) => {
      const kctx = await kindContext(ctx, input.orgId, null, new DeploymentEvents());
      await assertAllKinds(ctx, path, "read");
      return { items: await sourceResources(kctx, await findSource(ctx.db, kctx.organizationId, input.id)) };
    }),

  sourcesGet: authedProcedure
    .meta({ openapi: { method: "GET", path: `${SOURCES}/{id}`, tags: [TAG], summary: "A config source and its last sync (commit applied, status, why)" } })
    .input(sourcePath)
    .output(sourceOutput)
    .query(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      await assertAllKinds(ctx, path, "read");
      return toSourceDto(await findSource(ctx.db, org.id, input.id));
    }),

  sourcesDelete: authedProcedure
    .meta({
      openapi: { method: "DELETE", path: `${SOURCES}/{id}`, tags: [TAG], summary: "Delete a config source; the resources it applied stay, unowned (released counts them)" },
      audit: { entity: "config_source" },
    })
    .input(sourcePath)
    .output(z.object({ id: z.string(), deleted: z.literal(true), released: z.number().int() }))
    .mutation(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      await assertAllKinds(ctx, path, "write");
      return deleteSource(ctx.db, org.id, input.id);
    }),

  sourcesAllowPrune: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: `${SOURCES}/{id}/allow-prune`, tags: [TAG], summary: "Let the next sync delete more than the source's prune limit, once",
        description: "The prune guard refuses a sync that would delete more than pruneLimit resources (nothing changes); this allows the next sync to, and that sync spends the allowance.",
      },
      audit: { entity: "config_source" },
    })
    .input(sourcePath)
    .output(sourceOutput)
    .mutation(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId, ctx.audit);
      await assertAllKinds(ctx, path, "write");
      return toSourceDto(await allowPruneOnce(ctx.db, org.id, input.id));
    }),

  sourcesSync: authedProcedure
    .meta({
      openapi: {
        method: "POST", path: `${SOURCES}/{id}/sync`, tags: [TAG], summary: "Sync a config source now: fetch its branch and apply its documents",
        description:
          "All or nothing, as an apply, with the source as owner (source:<name>) and the commit in the owner marks. status applied, refused (a document refused: " +
          "nothing changed, the last applied commit stays; message names file and line) or failed (the fetch failed). Recorded on the source and audited. " +
          "expectedCommit (the commit a plan answered): applied only if the branch is still there; if it moved, 409 naming both commits, nothing applied or recorded (plan again).",
      },
      audit: false, // network I/O first; the sync writes its own entries
    })
    .input(sourcePath.extend({
      expectedCommit: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/, "a full commit id (40 hex digits), as the plan answers it").optional()
        .describe("the commit the plan showed: the sync applies it, or answers 409 when the branch moved since"),
    }))
    .output(z.object({
      status: z.enum(SYNC_STATUSES), commit: z.string().nullable(), message: z.string(),
      summary: planOutput.shape.summary.nullable(), resources: z.array(planEntry),
    }))
    .mutation(async ({ ctx, input, path }) => {
      const org = await organizationOfPath(ctx.db, ctx.principal, input.orgId);
      await assertAllKinds(ctx, path, "write");
      const answer = await syncSource(
        ctx.services, { type: ctx.principal.apiKeyId ? "api_key" : "user", principal: ctx.principal, request: ctx.request }, org.id, input.id, { expectedCommit: input.expectedCommit },
      );
      const planned = answer.result ? summarize(answer.result, answer.status === "applied") : null;
      return { status: answer.status as (typeof SYNC_STATUSES)[number], commit: answer.commit, message: answer.message, summary: planned?.summary ?? null, resources: planned?.resources ?? [] };
    }),
});
