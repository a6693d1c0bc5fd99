// Configuration layers: create, change (each change a new immutable revision), roll back (a new
// revision with an earlier one's content), delete; the effective configuration of a device and
// a preview over the devices of a selector. Writes of one organization's layers take one
// advisory lock, so the checks across layers (orders, references) see every other write.
import { TRPCError } from "@trpc/server";
import type { DbTx } from "../../db/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import type { Principal } from "../../trpc/principal.js";
import { badRequest, conflict, invalidField, notFound } from "../../trpc/errors.js";
import { labelsOf, type Labels } from "../devices/labels.js";
import { selectorsOverlap } from "../devices/selector.js";
import {
  ConfigurationError, computeEffective, prepareLayers, revisionsOf,
  type DeviceContext, type FileSpec, type LayerKind, type LayerState,
} from "./effective.js";
import { LIMITS, type CreateLayerInput, type EffectiveDto, type FileInput, type LayerDto, type RolloutDto, type RolloutInput, type LayerSummaryDto, type RevisionDto, type UpdateLayerInput } from "./schemas.js";
import { layerStateOf, loadLayerRevisions, loadLayers, openLayerSecrets, sealLayerSecrets } from "./store.js";
import { cancelLiveRollout, liveRollouts, releaseOrRollOut, type Release } from "./rollout.js";
import { variablesOf } from "./template.js";
import { rootsRefusal, type LayerPlacement } from "./roots.js";
import { KNOWN_FACTS } from "../agent/schemas.js";
import { ownerMark } from "../../lib/owner-mark.js";

const withCurrent = {
  device: { select: { name: true } },
  revisions: { orderBy: { revision: "desc" as const }, take: 1 },
} as const;

type LayerRecord = Awaited<ReturnType<typeof findLayer>>;
type RevisionRecord = NonNullable<LayerRecord>["revisions"][number];

function findLayer(db: DbTx, organizationId: string, id: string) {
  return db.configLayer.findFirst({ where: { id, organizationId }, include: withCurrent });
}

async function layerOrThrow(db: DbTx, organizationId: string, id: string) {
  const layer = await findLayer(db, organizationId, id);
  if (!layer) throw notFound("Configuration layer");
  return layer;
}

/** One writer of an organization's layers at a time (the cross-layer checks read the others). */
async function lockLayers(db: DbTx, organizationId: string) {
  await db.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${"config-layers:" + organizationId}))`;
}

const iso = (d: Date) => d.toISOString();

function fileOutputOf(f: FileSpec) {
  const binary = f.contentBase64 !== undefined;
  return {
    path: f.path, mode: f.mode, owner: f.owner ?? null, template: !binary && f.template !== false, binary,
    sizeBytes: binary ? Buffer.from(f.contentBase64!, "base64").length : Buffer.byteLength(f.content ?? "", "utf8"),
    content: binary ? null : f.content ?? "",
    contentBase64: binary ? f.contentBase64! : null,
  };
}

function revisionDto(row: RevisionRecord): RevisionDto {
  return {
    layerId: row.layerId,
    revision: row.revision,
    variables: row.variables as Record<string, string>,
    files: (row.files as unknown as FileSpec[]).map(fileOutputOf),
    secretNames: row.secretNames as string[],
    activation: (row.activation ?? null) as { command: string[] } | null,
    comment: row.comment,
    restoredFrom: row.restoredFrom,
    createdById: row.createdById,
    createdAt: iso(row.createdAt),
  };
}

function summaryDto(row: NonNullable<LayerRecord>, rollout: RolloutDto | null): LayerSummaryDto {
  const current = row.revisions[0];
  return {
    id: row.id, name: row.name, kind: row.kind as LayerKind,
    selector: row.kind === "selector" ? labelsOf(row.selector) : null,
    order: row.order, deviceId: row.deviceId, deviceName: row.device?.name ?? null, description: row.description,
    revision: row.currentRevision,
    releasedRevision: row.releasedRevision,
    rollout,
    variableCount: Object.keys(current.variables as object).length,
    fileCount: (current.files as unknown[]).length,
    secretNames: current.secretNames as string[],
    createdAt: iso(row.createdAt), updatedAt: iso(row.updatedAt),
    ...ownerMark(row),
  };
}

function layerDto(row: NonNullable<LayerRecord>, rollout: RolloutDto | null): LayerDto {
  return { ...summaryDto(row, rollout), content: revisionDto(row.revisions[0]) };
}

/** A layer as answered, with its live rollout. */
async function answerLayer(db: DbTx, row: NonNullable<LayerRecord>): Promise<LayerDto> {
  return layerDto(row, (await liveRollouts(db, [row.id])).get(row.id) ?? null);
}

/** Files as stored: the mode in four digits, no undefined fields. */
function storedFiles(files: FileInput[]): FileSpec[] {
  return files.map((f) => ({
    path: f.path,
    ...(f.contentBase64 !== undefined ? { contentBase64: f.contentBase64 } : { content: f.content ?? "", template: f.template }),
    mode: f.mode.padStart(4, "0"),
    ...(f.owner ? { owner: f.owner } : {}),
  }));
}

/**
 * The checks that look across layers, on the organization's layers as they will be: every
 * template readable, every `vars.NAME` defined by some layer, and no two selector layers at
 * one order that can match one device (selectors without a key of different values).
 * Throws 400 (template, reference) or 409 (order) naming layer, key and name.
 */
function checkLayerSet(layers: LayerState[], changed: LayerState | null) {
  let prepared;
  try {
    prepared = prepareLayers(layers);
  } catch (err) {
    if (err instanceof ConfigurationError) throw badRequest(err.message);
    throw err;
  }
  const defined = new Set(layers.flatMap((l) => [...Object.keys(l.variables), ...Object.keys(l.secrets)]));
  for (const layer of prepared) {
    const uses: Array<[string, string[]]> = [
      ...[...layer.variablePieces].map(([name, pieces]): [string, string[]] => [`variables.${name}`, variablesOf(pieces)]),
      ...[...layer.filePieces].map(([path, pieces]): [string, string[]] => [`files[${path}]`, pieces ? variablesOf(pieces) : []]),
    ];
    for (const [key, names] of uses) {
      const missing = names.find((n) => !defined.has(n));
      if (missing) throw badRequest(`layer "${layer.name}" ${key}: {{ vars.${missing} }} names the variable ${missing}, which no layer defines`);
    }
  }
  if (changed?.kind === "selector") {
    const rival = layers.find((l) => l.id !== changed.id && l.kind === "selector" && l.order === changed.order && selectorsOverlap(l.selector ?? {}, changed.selector ?? {}));
    if (rival) {
      throw conflict(
        `order: layers "${changed.name}" and "${rival.name}" are both at order ${changed.order} and can both match one device ` +
        `(labels ${JSON.stringify({ ...rival.selector, ...changed.selector })}): give one of them another order`,
      );
    }
  }
}

/** 400 naming the field when a file lies outside the allowed roots a device the layer applies to reported (roots.ts). */
async function checkRoots(db: DbTx, organizationId: string, layer: LayerPlacement, files: FileSpec[], fieldOf: (index: number) => string[]) {
  const refusal = await rootsRefusal(db, organizationId, layer, files.map((f, i) => ({ path: f.path, field: fieldOf(i) })));
  if (refusal) throw invalidField(refusal.field, refusal.message);
}

interface Content {
  variables: Record<string, string>;
  files: FileSpec[];
  secrets: Record<string, string>;
  activation: { command: string[] } | null;
}

function stateOf(secrets: SecretBox, base: { id: string; name: string; kind: string; order: number | null; selector: unknown; deviceId: string | null }, revision: number, content: Content): LayerState {
  return layerStateOf(secrets, {
    ...base, revision, variables: content.variables, files: content.files,
    secretsSealed: sealLayerSecrets(secrets, content.secrets), activation: content.activation,
  });
}

export async function createLayer(db: DbTx, secrets: SecretBox, principal: Principal, input: CreateLayerInput): Promise<LayerDto> {
  const { organizationId } = principal;
  if (input.kind !== "selector") {
    if (input.selector !== undefined) throw invalidField("selector", `only a layer of kind selector has one`);
    if (input.order !== undefined) throw invalidField("order", `only a layer of kind selector has one`);
  } else {
    if (input.selector === undefined) throw invalidField("selector", "required for kind selector ({} matches every device)");
    if (input.order === undefined) throw invalidField("order", "required for kind selector (the higher wins)");
  }
  if (input.kind === "device" && !input.deviceId) throw invalidField("deviceId", "required for kind device");
  if (input.kind !== "device" && input.deviceId) throw invalidField("deviceId", "only a layer of kind device has one");

  await lockLayers(db, organizationId);
  if (input.deviceId && !(await db.device.findFirst({ where: { id: input.deviceId, organizationId }, select: { id: true } }))) throw notFound("Device");
  const uniqueScope = input.kind === "organization" ? "organization" : input.kind === "device" ? `device:${input.deviceId}` : null;
  const taken = await db.configLayer.findFirst({
    where: { organizationId, OR: [{ name: input.name }, ...(uniqueScope ? [{ uniqueScope }] : [])] },
    select: { name: true, uniqueScope: true },
  });
  if (taken?.name === input.name) throw conflict(`name: a layer named "${input.name}" exists`);
  if (taken) throw conflict(input.kind === "organization" ? `kind: the organization has its default layer already ("${taken.name}")` : `deviceId: the device has its override layer already ("${taken.name}")`);

  const content: Content = { variables: input.variables ?? {}, files: storedFiles(input.files ?? []), secrets: input.secrets ?? {}, activation: input.activation ?? null };
  const base = { id: "00000000-0000-0000-0000-000000000000", name: input.name, kind: input.kind, order: input.order ?? null, selector: input.selector ?? null, deviceId: input.deviceId ?? null };
  const others = await loadLayers(db, secrets, organizationId);
  const proposed = stateOf(secrets, base, 1, content);
  checkLayerSet([...others, proposed], proposed);
  await checkRoots(db, organizationId, base, content.files, (i) => ["files", String(i), "path"]);

  const created = await db.configLayer.create({
    data: {
      organizationId, name: input.name, kind: input.kind, selector: input.selector ?? undefined, order: input.order ?? null,
      deviceId: input.deviceId ?? null, uniqueScope, description: input.description ?? null, currentRevision: 1,
      revisions: { create: revisionData(secrets, principal, organizationId, 1, content, input.comment ?? null, null) },
    },
    include: withCurrent,
  });
  return layerDto(created, null);
}

function revisionData(secrets: SecretBox, principal: Principal, organizationId: string, revision: number, content: Content, comment: string | null, restoredFrom: number | null) {
  return {
    organizationId, revision,
    variables: content.variables, files: content.files as object[],
    secretNames: Object.keys(content.secrets).sort(), secretsSealed: sealLayerSecrets(secrets, content.secrets),
    activation: content.activation ?? undefined, comment, restoredFrom,
    createdById: principal.apiKeyId ?? principal.userId,
  };
}

function contentOf(secrets: SecretBox, revision: RevisionRecord): Content {
  return {
    variables: revision.variables as Record<string, string>,
    files: revision.files as unknown as FileSpec[],
    secrets: openLayerSecrets(secrets, revision.secretsSealed),
    activation: (revision.activation ?? null) as Content["activation"],
  };
}

/** Placement (name, selector, order, description) changes the layer; content a new revision. */
/**
 * Placement (name, selector, order, description) changes the layer; content a new revision,
 * released at once, or with `rollout` rolled out by a job (rollout.ts). `by` names the operator.
 */
export async function updateLayer(db: DbTx, secrets: SecretBox, principal: Principal, input: UpdateLayerInput, by = "an operator"): Promise<{ layer: LayerDto; newRevision: boolean; release: Release | null }> {
  const { organizationId } = principal;
  await lockLayers(db, organizationId);
  const row = await layerOrThrow(db, organizationId, input.id);
  if (row.kind !== "selector") {
    if (input.selector !== undefined) throw invalidField("selector", `only a layer of kind selector has one`);
    if (input.order !== undefined) throw invalidField("order", `only a layer of kind selector has one`);
  }
  if (input.name !== undefined && input.name !== row.name && (await db.configLayer.findFirst({ where: { organizationId, name: input.name }, select: { id: true } }))) {
    throw conflict(`name: a layer named "${input.name}" exists`);
  }
  const before = contentOf(secrets, row.revisions[0]);
  const changesContent = input.variables !== undefined || input.files !== undefined || input.secrets !== undefined || input.activation !== undefined;
  if (input.rollout && !changesContent) throw invalidField("rollout", "rollout: only a change of content (variables, files, secrets, activation) writes a revision to roll out");
  const content: Content = {
    variables: input.variables ?? before.variables,
    files: input.files ? storedFiles(input.files) : before.files,
    secrets: mergeSecrets(before.secrets, input.secrets),
    activation: input.activation === undefined ? before.activation : input.activation,
  };
  if (Object.keys(content.secrets).length > LIMITS.secrets) throw invalidField("secrets", `at most ${LIMITS.secrets} per layer`);
  const revision = changesContent ? row.currentRevision + 1 : row.currentRevision;
  const base = {
    id: row.id, name: input.name ?? row.name, kind: row.kind, order: input.order ?? row.order,
    selector: input.selector ?? row.selector, deviceId: row.deviceId,
  };
  const others = (await loadLayers(db, secrets, organizationId)).filter((l) => l.id !== row.id);
  const proposed = stateOf(secrets, base, revision, content);
  checkLayerSet([...others, proposed], proposed);
  // new files, or the files kept on the devices a new selector reaches
  if (input.files || input.selector) await checkRoots(db, organizationId, base, content.files, (i) => (input.files ? ["files", String(i), "path"] : ["selector"]));

  await db.configLayer.update({
    where: { id: row.id },
    data: {
      name: base.name, order: base.order, selector: base.selector ?? undefined,
      ...(input.description !== undefined ? { description: input.description } : {}),
      currentRevision: revision,
      // updatedAt moves with every write: the heartbeat's stamp of the layer set
      updatedAt: new Date(),
      ...(changesContent ? { revisions: { create: revisionData(secrets, principal, organizationId, revision, content, input.comment ?? null, null) } } : {}),
    },
  });
  const release = changesContent ? await releaseOrRollOut(db, principal, { ...base, id: row.id }, revision, input.rollout, by) : null;
  return { layer: await answerLayer(db, (await findLayer(db, organizationId, row.id))!), newRevision: changesContent, release };
}

function mergeSecrets(before: Record<string, string>, given: Record<string, string | null> | undefined): Record<string, string> {
  if (!given) return before;
  const merged = { ...before };
  for (const [name, value] of Object.entries(given)) {
    if (value === null) delete merged[name];
    else merged[name] = value;
  }
  return merged;
}

/** A new revision with the content of `revision` (secrets included): the history only grows. */
export async function rollbackLayer(db: DbTx, secrets: SecretBox, principal: Principal, input: { id: string; revision: number; comment?: string; rollout?: RolloutInput }, by = "an operator"): Promise<{ layer: LayerDto; release: Release }> {
  const { organizationId } = principal;
  await lockLayers(db, organizationId);
  const row = await layerOrThrow(db, organizationId, input.id);
  if (input.revision === row.currentRevision) throw conflict(`revision: ${input.revision} is the revision in effect already`);
  const target = await db.configLayerRevision.findFirst({ where: { layerId: row.id, revision: input.revision } });
  if (!target) throw invalidField("revision", `layer "${row.name}" has no revision ${input.revision} (1 to ${row.currentRevision})`);
  const content = contentOf(secrets, target);
  const revision = row.currentRevision + 1;
  const others = (await loadLayers(db, secrets, organizationId)).filter((l) => l.id !== row.id);
  // an earlier revision may name variables another layer no longer defines
  checkLayerSet([...others, stateOf(secrets, row, revision, content)], null);
  await checkRoots(db, organizationId, row, content.files, () => ["revision"]);
  await db.configLayer.update({
    where: { id: row.id },
    data: {
      currentRevision: revision, updatedAt: new Date(),
      revisions: {
        create: {
          ...revisionData(secrets, principal, organizationId, revision, content, input.comment ?? `rollback to revision ${input.revision}`, input.revision),
          // the same sealed value: nothing is sealed again
          secretsSealed: target.secretsSealed,
        },
      },
    },
  });
  const release = await releaseOrRollOut(db, principal, row, revision, input.rollout, by);
  return { layer: await answerLayer(db, (await findLayer(db, organizationId, row.id))!), release };
}

export async function deleteLayer(db: DbTx, secrets: SecretBox, organizationId: string, id: string): Promise<{ id: string; name: string; deleted: true }> {
  await lockLayers(db, organizationId);
  const row = await layerOrThrow(db, organizationId, id);
  const rest = (await loadLayers(db, secrets, organizationId)).filter((l) => l.id !== row.id);
  try {
    checkLayerSet(rest, null);
  } catch (err) {
    // what the remaining layers would lack is this layer's: a conflict with the request
    if (err instanceof TRPCError && err.code === "BAD_REQUEST") throw conflict(`Cannot delete layer "${row.name}": ${err.message}`);
    throw err;
  }
  await cancelLiveRollout(db, organizationId, row);
  await db.configLayer.delete({ where: { id: row.id } });
  return { id: row.id, name: row.name, deleted: true };
}

export async function getLayer(db: DbTx, organizationId: string, id: string): Promise<LayerDto> {
  return answerLayer(db, await layerOrThrow(db, organizationId, id));
}

export async function listLayers(db: DbTx, organizationId: string, filter: { kind?: LayerKind[]; deviceId?: string; limit: number; offset: number }) {
  const where = {
    organizationId,
    ...(filter.kind?.length ? { kind: { in: filter.kind } } : {}),
    ...(filter.deviceId ? { deviceId: filter.deviceId } : {}),
  };
  const [rows, total] = await Promise.all([
    db.configLayer.findMany({ where, include: withCurrent, orderBy: [{ kind: "asc" }, { order: "asc" }, { name: "asc" }], take: filter.limit, skip: filter.offset }),
    db.configLayer.count({ where }),
  ]);
  const rollouts = await liveRollouts(db, rows.map((r) => r.id));
  return { rows: rows.map((r) => summaryDto(r, rollouts.get(r.id) ?? null)), total };
}

export async function listRevisions(db: DbTx, organizationId: string, id: string, page: { limit: number; offset: number }) {
  const row = await layerOrThrow(db, organizationId, id);
  const [rows, total] = await Promise.all([
    db.configLayerRevision.findMany({ where: { layerId: row.id }, orderBy: { revision: "desc" }, take: page.limit, skip: page.offset }),
    db.configLayerRevision.count({ where: { layerId: row.id } }),
  ]);
  return { rows: rows.map(revisionDto), total };
}

export async function getRevision(db: DbTx, organizationId: string, id: string, revision: number): Promise<RevisionDto> {
  const row = await layerOrThrow(db, organizationId, id);
  const found = await db.configLayerRevision.findFirst({ where: { layerId: row.id, revision } });
  if (!found) throw notFound(`Revision ${revision} of layer "${row.name}"`);
  return revisionDto(found);
}

interface DeviceRow {
  id: string;
  name: string;
  labels: unknown;
  facts: unknown;
  os: string | null;
  arch: string | null;
  agentVersion: string | null;
  hardwareModel: string | null;
  ipAddress: string | null;
}

/**
 * The layers a device gets now: the released revisions, and the revision of a live rollout that
 * handed it one (delivered or succeeded: heartbeat.ts gives it the same).
 */
async function devicesLayers(db: DbTx, secrets: SecretBox, organizationId: string, deviceId: string) {
  const [released, rolledOut] = await Promise.all([
    loadLayers(db, secrets, organizationId, [deviceId], "released"),
    db.$queryRaw<Array<{ layerId: string; revision: number }>>`
      SELECT da."configLayerId"::text AS "layerId", da."configRevision" AS "revision"
        FROM "ActionJob" j JOIN "DeviceAction" da ON da."jobId" = j."id" AND da."deviceId" = ${deviceId}::uuid
       WHERE j."organizationId" = ${organizationId}::uuid AND j."kind" = 'apply-configuration' AND j."state" IN ('in_progress', 'paused')
         AND da."state" IN ('delivered', 'succeeded')`,
  ]);
  const replaced = new Map((await loadLayerRevisions(db, secrets, rolledOut)).map((l) => [l.id, l]));
  return released.map((l) => replaced.get(l.id) ?? l);
}

/** What templates see of a device: its name, id, labels, and facts with the named ones (os, arch, ...) among them. */
export function deviceContextOf(row: DeviceRow): DeviceContext {
  const facts: Record<string, unknown> = { ...((row.facts ?? {}) as Record<string, unknown>) };
  for (const name of KNOWN_FACTS) if (row[name] !== null && row[name] !== undefined) facts[name] = row[name];
  return { id: row.id, name: row.name, labels: labelsOf(row.labels), facts };
}

const DEVICE_FIELDS = { id: true, name: true, labels: true, facts: true, os: true, arch: true, agentVersion: true, hardwareModel: true, ipAddress: true } as const;

export async function effectiveOf(db: DbTx, secrets: SecretBox, organizationId: string, deviceId: string): Promise<EffectiveDto> {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { ...DEVICE_FIELDS, configState: true } });
  if (!device) throw notFound("Device");
  const prepared = prepareLayers(await devicesLayers(db, secrets, organizationId, device.id));
  let effective;
  try {
    effective = computeEffective(prepared, deviceContextOf(device));
  } catch (err) {
    if (err instanceof ConfigurationError) throw conflict(`The configuration of device "${device.name}" cannot be computed: ${err.message}`);
    throw err;
  }
  const state = device.configState;
  return {
    deviceId: device.id,
    deviceName: device.name,
    revision: effective.revision,
    layers: effective.layers,
    variables: Object.entries(effective.variables).map(([name, v]) => ({
      name, layerId: v.layerId, layer: v.layer, revision: v.revision, value: v.secret ? null : v.value, secret: v.secret, overrode: v.overrode,
    })),
    files: effective.files.map((f) => ({
      layerId: f.layerId, layer: f.layer, revision: f.revision, path: f.path, mode: f.mode, owner: f.owner ?? null, binary: f.binary, secret: f.secret,
      sizeBytes: f.sizeBytes, sha256: f.secret ? null : f.sha256,
      content: f.secret || f.binary ? null : Buffer.from(f.contentBase64, "base64").toString("utf8"),
      overrode: f.overrode,
    })),
    activations: effective.activations,
    reported: state ? {
      revision: state.revision, state: state.state, message: state.message, appliedRevision: state.appliedRevision,
      drift: (state.drift as Array<{ path: string; sha256?: string }>).map((d) => ({ path: d.path, sha256: d.sha256 ?? null })),
      reportedAt: state.reportedAt ? iso(state.reportedAt) : null,
    } : null,
    inSync: state?.appliedRevision === effective.revision,
  };
}

/**
 * Asks the device to rewrite the files it reported drifted: its next heartbeat answer is the
 * full configuration with `restore: true` (the agent rewrites what differs). 409 when the
 * device reported no drift.
 */
export async function requestRestore(db: DbTx, organizationId: string, deviceId: string): Promise<{ deviceId: string; paths: string[] }> {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true, name: true, configState: true } });
  if (!device) throw notFound("Device");
  const drift = (device.configState?.drift ?? []) as Array<{ path: string }>;
  if (!drift.length) throw conflict(`Device "${device.name}" reported no files changed by hand: nothing to restore`);
  await db.deviceConfigState.update({ where: { deviceId: device.id }, data: { restoreRequested: true } });
  return { deviceId: device.id, paths: drift.map((d) => d.path) };
}

/**
 * The revision (or why there is none) of each device a selector matches, a page at a time, by
 * name: the layers are read once and every device computed from them in memory.
 */
export async function previewSelector(db: DbTx, secrets: SecretBox, organizationId: string, selector: Labels, page: { limit: number; offset: number }) {
  const [devices, [{ total }]] = await Promise.all([
    db.$queryRaw<Array<DeviceRow & { appliedRevision: string | null }>>`
      SELECT d."id"::text AS "id", d."name", d."labels", d."facts", d."os", d."arch", d."agentVersion", d."hardwareModel", d."ipAddress",
             s."appliedRevision"
        FROM "Device" d LEFT JOIN "DeviceConfigState" s ON s."deviceId" = d."id"
       WHERE d."organizationId" = ${organizationId}::uuid AND d."labels" @> ${JSON.stringify(selector)}::jsonb
       ORDER BY d."name", d."id" LIMIT ${page.limit} OFFSET ${page.offset}`,
    db.$queryRaw<Array<{ total: number }>>`
      SELECT count(*)::int AS "total" FROM "Device" d
       WHERE d."organizationId" = ${organizationId}::uuid AND d."labels" @> ${JSON.stringify(selector)}::jsonb`,
  ]);
  // what devices get outside a rollout (a device a live rollout handed its revision gets that one: the effective view)
  const prepared = prepareLayers(await loadLayers(db, secrets, organizationId, devices.map((d) => d.id), "released"));
  const results = revisionsOf(prepared, devices.map(deviceContextOf));
  const rows = devices.map((d, i) => {
    const result = results[i];
    return {
      deviceId: d.id, deviceName: d.name,
      revision: "revision" in result ? result.revision : null,
      error: "error" in result ? result.error : null,
      appliedRevision: d.appliedRevision,
    };
  });
  return { rows, total };
}
