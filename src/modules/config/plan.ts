// Plan and apply (docs/config-as-code.md). One engine for both: the documents are compared
// with the organization's resources, then every change is carried out through the modules'
// own service functions inside the caller's transaction, each under a savepoint so that one
// refusal is recorded with the API's own message and the others still run. A plan rolls
// everything back to where it started (nothing written); an apply keeps all of it, or, when
// anything was refused, nothing.
import { TRPCError } from "@trpc/server";
import type { DbTx } from "../../db/client.js";
import type { RequestInfo } from "../../trpc/context.js";
import { writeAudit, type AuditRecord } from "../../trpc/audit.js";
import { can } from "../../trpc/principal.js";
import { translateDatabaseError } from "../../trpc/errors.js";
import { counted } from "../../lib/plural.js";
import { parseFiles, type Kind, type ParsedDocument, type SourceFile } from "./documents.js";
import { HANDLERS, handlerOf, SpecInvalid, type Existing, type KindContext, type KindHandler } from "./kinds.js";

export const ACTIONS = ["create", "update", "unchanged", "delete", "refused", "exists_unmanaged"] as const;
export type Action = (typeof ACTIONS)[number];

export interface FieldChange {
  field: string;
  old: unknown;
  new: unknown;
}

export interface PlanEntry {
  kind: Kind | string;
  name: string | null;
  action: Action;
  file: string | null;
  line: number | null;
  message: string | null;
  changes: FieldChange[];
  /** the owner mark the resource carries now (null: the API manages it) */
  managedBy: string | null;
  /** after the plan: in sync, or pending secret (naming the fields in pendingSecrets) */
  status: "in sync" | "pending secret" | null;
  pendingSecrets: string[];
  id: string | null;
  /** why a refusal would answer 409 rather than 400 (not in the answer) */
  conflict?: boolean;
}

export interface PlanOptions {
  prune: boolean;
  adopt: boolean;
  /** the owner mark applied resources get: "apply:<who>" or a source's name */
  owner: string;
  commit: string | null;
  /** the prune guard (a config source's, or the one an apply asks for); none: prune deletes whatever it finds */
  pruneGuard?: PruneGuard | null;
}

/**
 * The prune guard: a prune deleting more than `limit` resources, or more than `percent` percent
 * of the resources this owner manages, refuses every one of its deletions (nothing changes).
 */
export interface PruneGuard {
  /** null: no count limit */
  limit: number | null;
  /** null: no share limit */
  percent: number | null;
  /** the owner's resources as the refusal names them: "this source owns" */
  owned: string;
  /** the refusal's last words: how to get past the guard */
  past: string;
}

/** The guard's refusal of `deletes` deletions out of `owned` resources, or null when it lets them through. */
function pruneGuardRefusal(guard: PruneGuard, deletes: number, owned: number): string | null {
  if (guard.limit != null && deletes > guard.limit) {
    return `prune would delete ${counted(deletes, "resource")}, more than the limit of ${guard.limit}; ${guard.past}`;
  }
  if (guard.percent != null && deletes > 0 && deletes * 100 > owned * guard.percent) {
    return `prune would delete ${deletes} of the ${counted(owned, "resource")} ${guard.owned} (${Math.round((deletes * 100) / Math.max(owned, 1))} %), ` +
      `more than its share of ${guard.percent} %; ${guard.past}`;
  }
  return null;
}

export interface PlanResult {
  entries: PlanEntry[];
  refused: number;
}

/** Direct applies by anyone are one owner ("apply"); a config source is its own. */
export const ownerClass = (managedBy: string) => (managedBy.startsWith("apply:") ? "apply" : managedBy);

/** JSON with sorted keys: equal values compare equal whatever order their keys came in. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value).sort().filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

export function diff(handler: KindHandler, current: Record<string, unknown>, desired: Record<string, unknown>): FieldChange[] {
  const fields = [...new Set([...Object.keys(current), ...Object.keys(desired)])].sort();
  const withDefault = (spec: Record<string, unknown>, f: string) => spec[f] ?? handler.defaults[f] ?? null;
  return fields
    .filter((f) => canonical(withDefault(current, f)) !== canonical(withDefault(desired, f)))
    .map((f) => ({ field: f, old: withDefault(current, f), new: withDefault(desired, f) }));
}

const entry = (fields: Partial<PlanEntry> & Pick<PlanEntry, "kind" | "name" | "action">): PlanEntry => ({
  file: null, line: null, message: null, changes: [], managedBy: null, status: null, pendingSecrets: [], id: null, ...fields,
});

/** The line of the field an API message names ("Invalid input: parameters.mode: ..."), else the document's. */
function lineOfMessage(doc: ParsedDocument, message: string): number {
  const field = /^Invalid input: ([A-Za-z0-9_.]+):/.exec(message)?.[1];
  return field ? doc.lineOf(field.split(".").map((p) => (/^\d+$/.test(p) ? Number(p) : p))) : doc.line;
}

const isConflict = (err: unknown) => (err instanceof TRPCError && err.code === "CONFLICT") || translateDatabaseError(err)?.code === "CONFLICT";

function messageOf(err: unknown, log: (err: unknown) => void): string {
  if (err instanceof SpecInvalid) return err.message;
  if (err instanceof TRPCError && err.code !== "INTERNAL_SERVER_ERROR") return err.message;
  const translated = translateDatabaseError(err);
  if (translated) return translated.message;
  log(err);
  return "Internal error (logged on the server)";
}

interface Step {
  entry: PlanEntry;
  handler: KindHandler;
  doc: ParsedDocument | null;
  desired: Record<string, unknown> | null;
}

let savepoints = 0;

/**
 * Plans (mode "plan": rolled back) or applies (mode "apply": kept unless anything is refused)
 * the documents in the caller's transaction `ctx.db`.
 */
export async function runPlan(
  ctx: KindContext & { request: RequestInfo | null; log: (err: unknown) => void; actor?: AuditRecord["actor"] },
  files: SourceFile[],
  options: PlanOptions,
  mode: "plan" | "apply",
): Promise<PlanResult> {
  ctx = { ...ctx, origin: { owner: options.owner, commit: options.commit } };
  const { documents, refusals } = parseFiles(files);
  const entries: PlanEntry[] = refusals.map((r) => entry({ kind: r.kind ?? "unknown", name: r.name, action: "refused", file: r.file, line: r.line, message: r.message }));
  const need = (h: KindHandler) => (mode === "apply" ? h.write : h.read);

  const existing = new Map<Kind, Existing[]>();
  for (const h of HANDLERS) existing.set(h.kind, can(ctx.principal, h.read) ? await h.list(ctx) : []);
  const normalizeCtx = { existing };
  const owner = ownerClass(options.owner);

  const steps: Step[] = [];
  for (const doc of documents) {
    const handler = handlerOf(doc.kind);
    const at = { kind: doc.kind, name: doc.name, file: doc.file, line: doc.line };
    if (!can(ctx.principal, need(handler))) {
      entries.push(entry({ ...at, action: "refused", message: `Missing permission ${need(handler)}` }));
      continue;
    }
    let desired: Record<string, unknown>;
    try {
      desired = handler.normalize(normalizeCtx, doc.spec);
    } catch (err) {
      const message = messageOf(err, ctx.log);
      entries.push(entry({ ...at, action: "refused", message, line: err instanceof SpecInvalid ? doc.lineOf(err.path) : doc.line }));
      continue;
    }
    const current = existing.get(doc.kind)!.find((r) => r.name === doc.name);
    if (!current) {
      steps.push({ entry: entry({ ...at, action: "create" }), handler, doc, desired });
      continue;
    }
    const base = { ...at, id: current.id, managedBy: current.managedBy };
    if (current.managedBy && ownerClass(current.managedBy) !== owner) {
      entries.push(entry({ ...base, action: "refused", conflict: true, message: `${doc.kind} "${doc.name}" is managed by ${current.managedBy}; only its owner changes it` }));
      continue;
    }
    if (!current.managedBy && !options.adopt) {
      entries.push(entry({ ...base, action: "exists_unmanaged", message: `${doc.kind} "${doc.name}" exists and is not managed as code; set adopt to take it over` }));
      continue;
    }
    let currentSpec: Record<string, unknown>;
    try {
      currentSpec = handler.normalize(normalizeCtx, current.spec);
    } catch {
      currentSpec = current.spec; // a resource the schema no longer admits as it is: every field counts as changed
    }
    const changes = diff(handler, currentSpec, desired);
    steps.push({ entry: entry({ ...base, action: changes.length ? "update" : "unchanged", changes }), handler, doc, desired });
  }

  // Prune: what this owner manages and the documents no longer declare.
  const declared = new Set(documents.map((d) => `${d.kind}\u0000${d.name}`));
  const deletes: Step[] = [];
  if (options.prune) {
    for (const h of [...HANDLERS].reverse()) {
      for (const r of existing.get(h.kind)!) {
        if (!r.managedBy || ownerClass(r.managedBy) !== owner || declared.has(`${h.kind}\u0000${r.name}`)) continue;
        const at = { kind: h.kind, name: r.name, id: r.id, managedBy: r.managedBy };
        if (!can(ctx.principal, need(h))) entries.push(entry({ ...at, action: "refused", message: `Missing permission ${need(h)}` }));
        else deletes.push({ entry: entry({ ...at, action: "delete" }), handler: h, doc: null, desired: null });
      }
    }
  }

  if (options.pruneGuard && deletes.length > 0) {
    // owned as prune counts them: every direct apply is one owner
    const owned = HANDLERS.reduce((n, h) => n + existing.get(h.kind)!.filter((r) => r.managedBy && ownerClass(r.managedBy) === owner).length, 0);
    const message = pruneGuardRefusal(options.pruneGuard, deletes.length, owned);
    if (message) for (const d of deletes.splice(0)) entries.push({ ...d.entry, action: "refused", conflict: true, message });
  }

  // Carried out in dependency order: deletes first (rules before their targets), then creations and updates.
  const rankOf = (s: Step) => (s.handler.rank && s.desired ? s.handler.rank(s.desired) : 0);
  const ordered = [...deletes, ...HANDLERS.flatMap((h) => steps.filter((s) => s.handler === h).sort((a, b) => rankOf(a) - rankOf(b)))];
  const outer = `cfg_${++savepoints}`;
  await ctx.db.$executeRawUnsafe(`SAVEPOINT ${outer}`);
  try {
    for (const step of ordered) {
      const e = step.entry;
      const sp = `cfg_${++savepoints}`;
      await ctx.db.$executeRawUnsafe(`SAVEPOINT ${sp}`);
      try {
        if (e.action === "delete") await step.handler.remove(ctx, e.id!);
        else if (e.action === "create") e.id = await step.handler.create(ctx, step.doc!.name, step.doc!.spec);
        else if (e.action === "update") await step.handler.update(ctx, e.id!, step.desired!, e.changes.map((c) => c.field));
        if (e.action !== "delete" && (e.action !== "unchanged" || e.managedBy !== options.owner || (options.commit && options.commit !== null))) {
          await step.handler.mark(ctx.db, e.id!, options.owner, options.commit);
        }
        if (mode === "apply" && (e.action !== "unchanged" || e.managedBy !== options.owner)) {
          await writeAudit(ctx.db, ctx.request, ctx.principal, {
            action: `config.${e.action === "unchanged" ? "adopt" : e.action}`, outcome: "success", organizationId: ctx.organizationId,
            entityType: step.handler.kind, entityId: e.id,
            changes: { name: e.name, managedBy: options.owner, commit: options.commit, ...(e.changes.length ? { fields: e.changes.map((c) => c.field) } : {}) },
            actor: ctx.actor,
          });
        }
        await ctx.db.$executeRawUnsafe(`RELEASE SAVEPOINT ${sp}`);
      } catch (err) {
        await ctx.db.$executeRawUnsafe(`ROLLBACK TO SAVEPOINT ${sp}`);
        const message = messageOf(err, ctx.log);
        Object.assign(e, {
          action: "refused", message, changes: e.changes, conflict: isConflict(err),
          line: step.doc ? (err instanceof SpecInvalid ? step.doc.lineOf(err.path) : lineOfMessage(step.doc, message)) : null,
        });
      }
      entries.push(e);
    }
    // Status after the change: secrets the resources still wait for.
    const after = new Map<Kind, Map<string, Existing>>();
    for (const h of HANDLERS) {
      if (!ordered.some((s) => s.handler === h)) continue;
      after.set(h.kind, new Map((await h.list(ctx)).map((r) => [r.name, r])));
    }
    for (const e of entries) {
      if (e.action === "refused" || e.action === "delete" || e.action === "exists_unmanaged" || !e.name) continue;
      const now = after.get(e.kind as Kind)?.get(e.name);
      e.pendingSecrets = now?.pendingSecrets ?? [];
      e.status = e.pendingSecrets.length ? "pending secret" : "in sync";
      if (mode === "apply") e.managedBy = now?.managedBy ?? e.managedBy;
    }
  } finally {
    const refused = entries.some((e) => e.action === "refused");
    if (mode === "plan" || refused) await ctx.db.$executeRawUnsafe(`ROLLBACK TO SAVEPOINT ${outer}`);
    await ctx.db.$executeRawUnsafe(`RELEASE SAVEPOINT ${outer}`);
  }
  const order = (e: PlanEntry) => ACTIONS.indexOf(e.action);
  entries.sort((a, b) => (a.file ?? "~").localeCompare(b.file ?? "~") || (a.line ?? 0) - (b.line ?? 0) || order(a) - order(b));
  return { entries, refused: entries.filter((e) => e.action === "refused").length };
}

export type { DbTx };
