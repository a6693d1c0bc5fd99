// The six kinds of fleet-as-code documents and how each maps onto its module: the spec is
// the module's own create input (its zod schema, without the name: that is metadata.name),
// and creating, changing and deleting go through the module's own service functions, so a
// document is held to exactly the rules of the API. Secret fields never appear in a
// document: they are set through the API, and a resource still waiting for one is
// "pending secret" (docs/config-as-code.md).
import { z } from "zod";
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import type { Principal } from "../../trpc/principal.js";
import type { Kind } from "./documents.js";
import { inputIssues, invalidInputMessage } from "../../trpc/errors.js";
import type { DeploymentEvents } from "../deployments/events.js";
import { createDeploymentInput, updateDeploymentInput } from "../deployments/schemas.js";
import { createDeployment, deleteDeployment, updateDeployment } from "../deployments/service.js";
import { missingSecrets, openSecrets } from "../deployments/parameters.js";
import type { ManifestParameter } from "../applications/manifest/index.js";
import { createRuleInput, updateRuleInput } from "../alerts/schemas.js";
import { createRule, deleteRule, updateRule } from "../alerts/service.js";
import { createTargetInput, updateTargetInput } from "../notification-targets/schemas.js";
import { createTarget, deleteTarget, updateTarget } from "../notification-targets/service.js";
import { createRoleInput } from "../roles/schemas.js";
import { createRole, deleteRole, updateRole } from "../roles/service.js";
import { createGitRegistryInput, updateGitRegistryInput } from "../registries/git/schemas.js";
import { createGitRegistry, deleteGitRegistry, updateGitRegistry } from "../registries/git/service.js";
import { createOciRegistryInput, updateOciRegistryInput } from "../registries/oci/schemas.js";
import { createOciRegistry, deleteOciRegistry, updateOciRegistry } from "../registries/oci/service.js";
import { createLayerInput, updateLayerInput } from "../config-layers/schemas.js";
import { createLayer, deleteLayer, updateLayer } from "../config-layers/service.js";
import type { FileSpec } from "../config-layers/effective.js";

export interface KindContext {
  db: DbTx;
  services: Services;
  /** the caller, acting in `organizationId` */
  principal: Principal;
  organizationId: string;
  events: DeploymentEvents;
  /** who applies and from which commit (plan.ts sets it): a ConfigLayer revision's comment names them */
  origin?: { owner: string; commit: string | null };
}

/** A resource of the organization as a document would declare it. */
export interface Existing {
  id: string;
  name: string;
  spec: Record<string, unknown>;
  managedBy: string | null;
  managedCommit: string | null;
  /** secret fields the resource still lacks */
  pendingSecrets: string[];
}

/** A spec the kind's schema refuses: the field (a path into the spec) and the API's message. */
export class SpecInvalid extends Error {
  constructor(readonly path: PropertyKey[], message: string) {
    super(message);
  }
}

type Spec = Record<string, unknown>;

export interface KindHandler {
  kind: Kind;
  read: string;
  write: string;
  /** the module's create input: the document's spec plus its name */
  schema: z.ZodType;
  /** fields a document must not hold (set through the API) */
  secretFields: string[];
  /** what an absent field means, for comparing (the column's default) */
  defaults: Spec;
  /** the spec as the schema reads it (defaults filled, transforms applied), name and secrets left out */
  normalize(ctx: { existing: Map<Kind, Existing[]> }, spec: Spec): Spec;
  list(ctx: KindContext): Promise<Existing[]>;
  create(ctx: KindContext, name: string, spec: Spec): Promise<string>;
  /** `changed` names the top-level fields whose value differs; `desired` is the normalized spec */
  update(ctx: KindContext, id: string, desired: Spec, changed: string[]): Promise<void>;
  remove(ctx: KindContext, id: string): Promise<void>;
  mark(db: DbTx, id: string, managedBy: string | null, managedCommit: string | null): Promise<unknown>;
  /** the order among creations and updates of this kind (lower first; absent: the documents' order) */
  rank?(spec: Spec): number;
}

/** Parses with the module's schema; invalid input becomes a SpecInvalid naming the fields as the API does. */
function parseWith<T>(schema: z.ZodType<T>, value: unknown): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  return invalid(parsed.error);
}

function invalid(error: z.ZodError): never {
  throw new SpecInvalid(error.issues[0]!.path as PropertyKey[], invalidInputMessage(inputIssues(error)));
}

function refuseSecrets(spec: Spec, fields: string[]) {
  for (const field of fields) {
    if (spec[field] !== undefined) throw new SpecInvalid([field], `Invalid input: ${field}: a secret is never written in a document; set it through the API once the resource exists`);
  }
}

function strip(value: Spec, fields: string[]): Spec {
  const out: Spec = {};
  for (const [k, v] of Object.entries(value)) if (!fields.includes(k) && k !== "name" && v !== undefined && v !== null) out[k] = v;
  return out;
}

/** Absent fields as null, for the module's update input (which clears what null names). */
const updateFields = (desired: Spec, changed: string[], defaults: Spec) =>
  Object.fromEntries(changed.map((f) => [f, desired[f] ?? defaults[f] ?? null]));

/** A field the module cannot change in place: the plan refuses it with the API's reason. */
function refuseImmutable(changed: string[], field: string, what: string) {
  if (changed.includes(field)) throw new SpecInvalid([field], `Invalid input: ${field}: ${what} cannot change; delete the document's resource and declare a new one`);
}

const deployment: KindHandler = {
  kind: "Deployment",
  read: "deployments:read",
  write: "deployments:write",
  schema: createDeploymentInput,
  secretFields: [],
  defaults: { parameters: {}, continuous: false, onLeave: "remove" },
  normalize(_ctx, spec) {
    // A scheduled start that has passed is history, not intent: it is neither exported nor compared.
    const { startAt, ...rest } = spec;
    const keep = typeof startAt === "string" && Date.parse(startAt) > Date.now() ? { startAt } : {};
    return strip(parseWith(createDeploymentInput, { ...rest, ...keep, name: "n" }) as Spec, []);
  },
  async list(ctx) {
    // the predecessor rows of in-place upgrades are the deployment's old revision, not resources of their own
    const rows = await ctx.db.deployment.findMany({
      where: { organizationId: ctx.organizationId, upgradedToId: null }, orderBy: { name: "asc" }, include: { appVersion: { select: { parameters: true } } },
    });
    return rows.map((r) => ({
      id: r.id, name: r.name, managedBy: r.managedBy, managedCommit: r.managedCommit,
      // required secret parameters without a value: a draft that cannot start yet
      pendingSecrets: missingSecrets(r.appVersion.parameters as unknown as Record<string, ManifestParameter>, r.secretParameterNames).map((n) => `parameters.${n}`),
      spec: strip({
        description: r.description, applicationId: r.applicationId, version: r.version, profileId: r.profileId,
        parameters: r.parameters, target: r.labelSelector ? { labelSelector: r.labelSelector } : { deviceIds: r.targetDeviceIds },
        strategy: r.strategy, retry: r.retry, startAt: r.startAt && r.startAt.getTime() > Date.now() ? r.startAt.toISOString() : null,
        maintenanceWindows: r.maintenanceWindows, disruptionBudget: r.disruptionBudget, continuous: r.continuous, onLeave: r.onLeave,
      }, []),
    }));
  },
  async create(ctx, name, spec) {
    const input = parseWith(createDeploymentInput, { ...spec, name });
    const created = await createDeployment(ctx.db, ctx.services.secrets, ctx.organizationId, ctx.principal.userId, input, { pendingSecrets: true });
    assertNoSecretValues(Object.keys(input.parameters), created.secretParameterNames);
    return created.id;
  },
  async update(ctx, id, desired, changed) {
    refuseImmutable(changed, "applicationId", "a deployment's application");
    const fields = updateFields(desired, changed, this.defaults);
    if (fields.parameters) {
      // The document holds no secret values: the ones set through the API stay.
      const row = await ctx.db.deployment.findFirstOrThrow({ where: { id, organizationId: ctx.organizationId }, select: { secretParameters: true } });
      fields.parameters = { ...openSecrets(ctx.services.secrets, row.secretParameters), ...(fields.parameters as Spec) };
    }
    const input = parseWith(updateDeploymentInput, { id, ...fields });
    const { after } = await updateDeployment(ctx.db, ctx.services.secrets, ctx.organizationId, input, ctx.events, { pendingSecrets: true });
    assertNoSecretValues(Object.keys((desired.parameters as Spec | undefined) ?? {}), after.secretParameterNames);
  },
  async remove(ctx, id) {
    await deleteDeployment(ctx.db, ctx.organizationId, id, false, ctx.events);
  },
  mark: (db, id, by, commit) => db.deployment.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
};

function assertNoSecretValues(given: string[], secretNames: string[]) {
  const secret = given.find((n) => secretNames.includes(n));
  if (secret) throw new SpecInvalid(["parameters", secret], `Invalid input: parameters.${secret}: a secret parameter is never written in a document; set it through PATCH /deployments/{id}`);
}

/** Target references of a rule: a name (a NotificationTarget document or an existing target) or an id. */
function targetNames(existing: Map<Kind, Existing[]>, refs: unknown): string[] {
  const targets = existing.get("NotificationTarget") ?? [];
  const byId = new Map(targets.map((t) => [t.id, t.name]));
  return [...new Set((Array.isArray(refs) ? refs : []).map((r) => byId.get(String(r)) ?? String(r)))].sort();
}

const PLACEHOLDER_ID = "00000000-0000-4000-8000-000000000000";

async function resolveTargetIds(ctx: KindContext, refs: string[]): Promise<string[]> {
  if (refs.length === 0) return [];
  const uuid = z.uuid();
  const rows = await ctx.db.notificationTarget.findMany({
    where: { organizationId: ctx.organizationId, OR: [{ name: { in: refs } }, { id: { in: refs.filter((r) => uuid.safeParse(r).success) } }] },
    select: { id: true, name: true },
  });
  return refs.map((ref, i) => {
    const row = rows.find((r) => r.name === ref) ?? rows.find((r) => r.id === ref);
    if (!row) throw new SpecInvalid(["targetIds", i], `Invalid input: targetIds: unknown notification target ${ref}`);
    return row.id;
  });
}

const alertRule: KindHandler = {
  kind: "AlertRule",
  read: "alerts:read",
  write: "alerts:write",
  schema: createRuleInput,
  secretFields: [],
  defaults: { labelSelector: {}, targetIds: [] },
  normalize(ctx, spec) {
    const refs = Array.isArray(spec.targetIds) ? spec.targetIds : spec.targetIds;
    const parsed = parseWith(createRuleInput, { ...spec, name: "n", targetIds: Array.isArray(refs) ? refs.map(() => PLACEHOLDER_ID) : refs });
    return strip({ ...parsed, targetIds: targetNames(ctx.existing, refs) }, []);
  },
  async list(ctx) {
    const rows = await ctx.db.alertRule.findMany({
      where: { organizationId: ctx.organizationId }, include: { targets: { select: { target: { select: { name: true } } } } }, orderBy: { name: "asc" },
    });
    return rows.map((r) => ({
      id: r.id, name: r.name, managedBy: r.managedBy, managedCommit: r.managedCommit, pendingSecrets: [],
      spec: strip({
        description: r.description, condition: r.condition, labelSelector: r.labelSelector, severity: r.severity, cooldownSeconds: r.cooldownSeconds,
        enabled: r.enabled, targetIds: r.targets.map((t) => t.target.name).sort(),
      }, []),
    }));
  },
  async create(ctx, name, spec) {
    const targetIds = await resolveTargetIds(ctx, (spec.targetIds as string[] | undefined) ?? []);
    const input = parseWith(createRuleInput, { ...spec, name, targetIds });
    return (await createRule(ctx.db, ctx.organizationId, input)).id;
  },
  async update(ctx, id, desired, changed) {
    const fields = updateFields(desired, changed, this.defaults);
    if (fields.targetIds) fields.targetIds = await resolveTargetIds(ctx, fields.targetIds as string[]);
    await updateRule(ctx.db, ctx.organizationId, parseWith(updateRuleInput, { id, ...fields }));
  },
  async remove(ctx, id) {
    await deleteRule(ctx.db, ctx.organizationId, id);
  },
  mark: (db, id, by, commit) => db.alertRule.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
};

// A target's URL is sealed at rest (a Slack URL is a credential) and its signing secret too:
// both are set through the API. The schema's "needs a url" rule is checked by the service's
// delivery instead, and the target is "pending secret" until the URL is set.
const URL_PLACEHOLDER = "https://pending-secret.invalid/";
const notificationTarget: KindHandler = {
  kind: "NotificationTarget",
  read: "alerts:read",
  write: "alerts:write",
  schema: createTargetInput,
  secretFields: ["url", "secret"],
  defaults: {},
  normalize(_ctx, spec) {
    refuseSecrets(spec, this.secretFields);
    const needsUrl = spec.type === "webhook" || spec.type === "slack";
    return strip(parseWith(createTargetInput, { ...spec, name: "n", ...(needsUrl ? { url: URL_PLACEHOLDER } : {}) }) as Spec, this.secretFields);
  },
  async list(ctx) {
    const rows = await ctx.db.notificationTarget.findMany({ where: { organizationId: ctx.organizationId }, orderBy: { name: "asc" } });
    return rows.map((r) => ({
      id: r.id, name: r.name, managedBy: r.managedBy, managedCommit: r.managedCommit,
      pendingSecrets: r.type !== "email" && !r.url ? ["url"] : [],
      spec: strip({ type: r.type, ...(r.type === "email" ? { recipients: r.recipients } : {}), enabled: r.enabled }, []),
    }));
  },
  async create(ctx, name, spec) {
    const { url: _placeholder, ...input } = parseWith(createTargetInput, { ...spec, name, ...(spec.type !== "email" ? { url: URL_PLACEHOLDER } : {}) });
    return (await createTarget(ctx.db, ctx.services, ctx.organizationId, input)).id;
  },
  async update(ctx, id, desired, changed) {
    refuseImmutable(changed, "type", "a notification target's type");
    await updateTarget(ctx.db, ctx.services, ctx.organizationId, parseWith(updateTargetInput, { id, ...updateFields(desired, changed, this.defaults) }));
  },
  async remove(ctx, id) {
    await deleteTarget(ctx.db, ctx.organizationId, id);
  },
  mark: (db, id, by, commit) => db.notificationTarget.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
};

const role: KindHandler = {
  kind: "Role",
  read: "roles:read",
  write: "roles:write",
  schema: createRoleInput,
  secretFields: [],
  defaults: { description: "" },
  normalize(_ctx, spec) {
    const parsed = parseWith(createRoleInput, { ...spec, name: "nn" });
    return strip({ ...parsed, permissions: [...new Set(parsed.permissions)].sort() }, []);
  },
  async list(ctx) {
    const rows = await ctx.db.role.findMany({ where: { organizationId: ctx.organizationId }, orderBy: { name: "asc" } });
    return rows.map((r) => ({
      id: r.id, name: r.name, managedBy: r.managedBy, managedCommit: r.managedCommit, pendingSecrets: [],
      spec: strip({ description: r.description || null, permissions: [...r.permissions].sort() }, []),
    }));
  },
  async create(ctx, name, spec) {
    return (await createRole(ctx.db, ctx.principal, parseWith(createRoleInput, { ...spec, name }))).id;
  },
  async update(ctx, id, desired, changed) {
    const { name: _n, ...fields } = parseWith(createRoleInput.partial(), updateFields(desired, changed, this.defaults));
    await updateRole(ctx.db, ctx.principal, id, fields);
  },
  async remove(ctx, id) {
    await deleteRole(ctx.db, ctx.principal, id);
  },
  mark: (db, id, by, commit) => db.role.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
};

const registryPending = (r: { authType: string; credentialSealed: string | null }) => (r.authType !== "NONE" && !r.credentialSealed ? ["credential"] : []);

interface RegistryRow { id: string; name: string; managedBy: string | null; managedCommit: string | null; authType: string; credentialSealed: string | null }

/** Git and OCI registries alike: the credential is the secret, set through PATCH; a registry without it is pending secret. */
function registryKind<Create extends { credential?: string }, Update extends { id: string }, Row extends RegistryRow>(r: {
  kind: Kind;
  schema: z.ZodType<Create>;
  updateSchema: z.ZodType<Update>;
  rows(ctx: KindContext): Promise<Row[]>;
  specOf(row: Row): Spec;
  create(ctx: KindContext, input: Create): Promise<{ id: string }>;
  update(ctx: KindContext, input: Update): Promise<unknown>;
  remove(ctx: KindContext, id: string): Promise<unknown>;
  mark: KindHandler["mark"];
  sorted?: string[];
}): KindHandler {
  const secretFields = ["credential"];
  const sort = (spec: Spec) => ({ ...spec, ...Object.fromEntries((r.sorted ?? []).filter((f) => Array.isArray(spec[f])).map((f) => [f, [...(spec[f] as string[])].sort()])) });
  return {
    kind: r.kind, read: "registries:read", write: "registries:write", schema: r.schema, secretFields, defaults: {},
    normalize(_ctx, spec) {
      refuseSecrets(spec, secretFields);
      return strip(sort(parseWith(r.schema, { ...spec, name: "nn" }) as Spec), secretFields);
    },
    async list(ctx) {
      return (await r.rows(ctx)).map((row) => ({
        id: row.id, name: row.name, managedBy: row.managedBy, managedCommit: row.managedCommit, pendingSecrets: registryPending(row), spec: strip(sort(r.specOf(row)), []),
      }));
    },
    async create(ctx, name, spec) {
      return (await r.create(ctx, parseWith(r.schema, { ...spec, name }))).id;
    },
    async update(ctx, id, desired, changed) {
      await r.update(ctx, parseWith(r.updateSchema, { id, ...updateFields(desired, changed, {}) }));
    },
    async remove(ctx, id) {
      await r.remove(ctx, id);
    },
    mark: r.mark,
  };
}

const gitRegistry = registryKind({
  kind: "GitRegistry",
  schema: createGitRegistryInput,
  updateSchema: updateGitRegistryInput,
  rows: (ctx) => ctx.db.gitRegistry.findMany({ where: { organizationId: ctx.organizationId }, orderBy: { name: "asc" } }),
  specOf: (row) => ({ url: row.url, branch: row.branch, path: row.path, authType: row.authType, syncIntervalMinutes: row.syncIntervalMinutes, enabled: row.enabled }),
  create: (ctx, input) => createGitRegistry(ctx.db, ctx.services.secrets, ctx.organizationId, input, { credentialLater: true }),
  update: (ctx, input) => updateGitRegistry(ctx.db, ctx.services.secrets, ctx.organizationId, input),
  remove: (ctx, id) => deleteGitRegistry(ctx.db, ctx.organizationId, id),
  mark: (db, id, by, commit) => db.gitRegistry.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
});

const ociRegistry = registryKind({
  kind: "OciRegistry",
  schema: createOciRegistryInput,
  updateSchema: updateOciRegistryInput,
  sorted: ["repositories"],
  rows: (ctx) => ctx.db.ociRegistry.findMany({ where: { organizationId: ctx.organizationId }, orderBy: { name: "asc" } }),
  specOf: (row) => ({
    description: row.description, url: row.url, registryType: row.registryType, authType: row.authType, verifyTls: row.verifyTls, enabled: row.enabled,
    repositories: row.repositories, syncIntervalMinutes: row.syncIntervalMinutes,
  }),
  create: (ctx, input) => createOciRegistry(ctx.db, ctx.services.secrets, ctx.organizationId, input, { credentialLater: true }),
  update: (ctx, input) => updateOciRegistry(ctx.db, ctx.services.secrets, ctx.organizationId, input),
  remove: (ctx, id) => deleteOciRegistry(ctx.db, ctx.organizationId, id),
  mark: (db, id, by, commit) => db.ociRegistry.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
});

// A configuration layer (docs/configuration.md): the spec is POST /config-layers' body without
// its name, secrets and comment. Its secrets are set through PATCH /config-layers/{id} with only
// `secrets` (the ownership guard lets that through) and are kept when the document's content
// changes. A change of content is a new revision whose comment names the owner and commit; a
// change of placement only (selector, order, description) is none, as through the API.
const LAYER_CONTENT = ["variables", "files", "activation"];
const layerSchema = createLayerInput.omit({ comment: true });

/** Files as a comparison reads them: the mode in four digits, a binary file without `template`. */
function canonicalFiles(files: unknown): Spec[] | undefined {
  if (!Array.isArray(files)) return undefined;
  return (files as Spec[]).map(({ template, mode, ...f }) => ({
    ...f, mode: String(mode).padStart(4, "0"), ...(f.contentBase64 === undefined ? { template } : {}),
  }));
}

const layerPrincipal = (ctx: KindContext): Principal => ({ ...ctx.principal, organizationId: ctx.organizationId });
const layerComment = (ctx: KindContext) =>
  ctx.origin ? `applied as code by ${ctx.origin.owner}${ctx.origin.commit ? ` (commit ${ctx.origin.commit})` : ""}` : "applied as code";

const configLayer: KindHandler = {
  kind: "ConfigLayer",
  read: "config:read",
  write: "config:write",
  schema: layerSchema,
  secretFields: ["secrets"],
  defaults: { variables: {}, files: [], activation: null },
  normalize(_ctx, spec) {
    refuseSecrets(spec, this.secretFields);
    const parsed = parseWith(layerSchema, { ...spec, name: "n" }) as Spec;
    return strip({ ...parsed, files: canonicalFiles(parsed.files) }, this.secretFields);
  },
  async list(ctx) {
    const rows = await ctx.db.configLayer.findMany({
      where: { organizationId: ctx.organizationId }, orderBy: { name: "asc" }, include: { revisions: { orderBy: { revision: "desc" }, take: 1 } },
    });
    return rows.map((r) => {
      const current = r.revisions[0];
      const files = (current.files as unknown as FileSpec[]).map((f) => ({ ...f }));
      return {
        id: r.id, name: r.name, managedBy: r.managedBy, managedCommit: r.managedCommit, pendingSecrets: [],
        spec: strip({
          kind: r.kind, selector: r.kind === "selector" ? r.selector : null, order: r.order, deviceId: r.deviceId, description: r.description,
          variables: current.variables, files, activation: current.activation,
        }, []),
      };
    });
  },
  async create(ctx, name, spec) {
    const input = parseWith(layerSchema, { ...spec, name });
    return (await createLayer(ctx.db, ctx.services.secrets, layerPrincipal(ctx), { ...input, comment: layerComment(ctx) })).id;
  },
  async update(ctx, id, desired, changed) {
    refuseImmutable(changed, "kind", "a layer's kind");
    refuseImmutable(changed, "deviceId", "the device of an override layer");
    const fields = updateFields(desired, changed, this.defaults);
    const comment = changed.some((f) => LAYER_CONTENT.includes(f)) ? { comment: layerComment(ctx) } : {};
    // secrets are not given: the ones set through the API stay
    await updateLayer(ctx.db, ctx.services.secrets, layerPrincipal(ctx), parseWith(updateLayerInput, { id, ...fields, ...comment }));
  },
  async remove(ctx, id) {
    await deleteLayer(ctx.db, ctx.services.secrets, ctx.organizationId, id);
  },
  mark: (db, id, by, commit) => db.configLayer.update({ where: { id }, data: { managedBy: by, managedCommit: commit } }),
  // the defaults first, then selector layers by order, then overrides: a template names variables below it more often than above
  rank: (spec) => (spec.kind === "organization" ? -2e6 : spec.kind === "device" ? 2e6 : Number(spec.order ?? 0)),
};

/** In the order an apply creates and updates them (a rule names targets declared beside it); deletes go the other way. */
export const HANDLERS: readonly KindHandler[] = [notificationTarget, alertRule, role, gitRegistry, ociRegistry, configLayer, deployment];
export const handlerOf = (kind: Kind) => HANDLERS.find((h) => h.kind === kind)!;
