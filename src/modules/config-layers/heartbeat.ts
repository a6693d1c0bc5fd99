// The heartbeat's part in device configuration (the wire contract, docs/configuration.md):
// what the device reports is stored on its DeviceConfigState row; the answer carries the
// revision of its effective configuration, in full only when the device has not applied it
// (or an operator asked to restore drifted files).
//
// Cost: the heartbeat statement itself says whether the organization has any layer (an
// index-only probe of ConfigLayer(organizationId, updatedAt)) or the device ever had a
// configuration (the primary key of DeviceConfigState); for a device with neither that is all.
// Otherwise it hands over the layer set's stamp (count and newest updatedAt): the shared layers
// are read, unsealed and parsed once per stamp and process (an in-memory cache), and only a
// device with its own override layer costs one more indexed read.
//
// A layer's rollout (an apply-configuration job, docs/configuration.md "Rollout"): the same
// statement lists the device's actions of the organization's live rollouts (an index probe of
// ActionJob(organizationId, kind, state), then DeviceAction(jobId, deviceId); nothing when none is
// live). A device whose action is admitted (handed over by the actions' exchange: dispatched,
// inside its window, within the budget) or succeeded gets the job's revision of that layer, every
// other device the released one. The action is delivered with the configuration revision it was
// handed (result.revision); the device's report of that revision ends it (applied: succeeded,
// failed: failed with the device's message) and judges the job.
import type { Services } from "../../services.js";
import type { RawDatabase } from "../../db/adapters.js";
import { perService } from "../../lib/per-service.js";
import { ConfigurationError, applicableLayers, computeEffective, configurationKey, prepareLayers, type PreparedLayer } from "./effective.js";
import type { ConfigurationAnswer, ConfigurationReport } from "./schemas.js";
import { deviceContextOf } from "./service.js";
import { sealDriftContent } from "./accept.js";
import { loadDeviceLayer, loadLayerRevisions, loadLayers } from "./store.js";
import { judgeJobsNow } from "../device-actions/agent-exchange.js";

/**
 * The heartbeat statement's column (null for a device without configuration): `device` and
 * `org` are SQL expressions of the updated device's id and organization, `row` the updated
 * row's alias (name, labels, facts and the named facts, as RETURNING gave them).
 */
export const CONFIGURATION_SQL = (row: string) => /* sql */ `
  CASE WHEN EXISTS (SELECT 1 FROM "ConfigLayer" cl WHERE cl."organizationId" = ${row}."organizationId")
         OR EXISTS (SELECT 1 FROM "DeviceConfigState" cs WHERE cs."deviceId" = ${row}."id")
  THEN (SELECT jsonb_build_object(
          'stamp', (SELECT count(*)::text || '/' || COALESCE(max(cl."updatedAt")::text, '') FROM "ConfigLayer" cl WHERE cl."organizationId" = ${row}."organizationId"),
          'override', EXISTS (SELECT 1 FROM "ConfigLayer" cl WHERE cl."deviceId" = ${row}."id"),
          'applied', cs."appliedRevision", 'state', cs."state", 'message', cs."message", 'restore', COALESCE(cs."restoreRequested", false),
          'rollout', (SELECT jsonb_agg(jsonb_build_object('id', da."id", 'layerId', da."configLayerId", 'revision', da."configRevision",
                                                          'state', da."state", 'handed', da."result"->>'revision', 'jobId', da."jobId"))
                        FROM "ActionJob" j JOIN "DeviceAction" da ON da."jobId" = j."id" AND da."deviceId" = ${row}."id"
                       WHERE j."organizationId" = ${row}."organizationId" AND j."kind" = 'apply-configuration' AND j."state" IN ('in_progress', 'paused')
                         AND da."state" IN ('pending', 'delivered', 'succeeded')),
          'device', jsonb_build_object('id', ${row}."id", 'name', ${row}."name", 'labels', ${row}."labels", 'facts', ${row}."facts",
                                       'os', ${row}."os", 'arch', ${row}."arch", 'agentVersion', ${row}."agentVersion",
                                       'hardwareModel', ${row}."hardwareModel", 'ipAddress', ${row}."ipAddress"))
          FROM (SELECT 1) one LEFT JOIN "DeviceConfigState" cs ON cs."deviceId" = ${row}."id")
  END`;

/** What the heartbeat statement hands over for a device with configuration. */
export interface ConfigurationFlags {
  stamp: string;
  override: boolean;
  applied: string | null;
  state: string | null;
  message: string | null;
  restore: boolean;
  /** the device's actions in the organization's live configuration rollouts (null: none) */
  rollout: RolloutAction[] | null;
  device: {
    id: string; name: string; labels: unknown; facts: unknown;
    os: string | null; arch: string | null; agentVersion: string | null; hardwareModel: string | null; ipAddress: string | null;
  };
}

/** A device's action in a live rollout of a layer (kind apply-configuration). */
export interface RolloutAction {
  id: string;
  jobId: string;
  layerId: string;
  revision: number;
  state: "pending" | "delivered" | "succeeded" | "failed";
  /** the configuration revision (sha256) it was handed, once it was */
  handed: string | null;
}

const CACHED_ORGANIZATIONS = 1000;
const CACHED_REVISIONS = 10_000;
/**
 * Read again at least this often even when the stamp is the same: two writes within one
 * millisecond (the column's precision) to an organization's layers leave the stamp alone.
 */
const CACHE_SECONDS = 30;

interface SharedLayers {
  stamp: string;
  readAt: number;
  layers: PreparedLayer[];
  /** revisions computed under this stamp, by configurationKey: devices alike share one */
  revisions: Map<string, string>;
  /** revisions of layers being rolled out ("layerId@revision"), read once per stamp */
  rolledOut: Map<string, PreparedLayer>;
}

/** Per process: each organization's shared layers, prepared, under the stamp they were read at. */
const sharedLayersOf = perService((_services: Services) => new Map<string, SharedLayers>());

/**
 * The layers a device gets: the released revisions, the device's own override among them, and
 * for each layer whose rollout admitted the device (`rolledOut`), the job's revision instead.
 */
async function layersFor(services: Services, organizationId: string, flags: ConfigurationFlags, rolledOut: RolloutAction[]): Promise<{ shared: SharedLayers; layers: PreparedLayer[] }> {
  const cache = sharedLayersOf(services);
  let shared = cache.get(organizationId);
  if (shared?.stamp !== flags.stamp || Date.now() - shared.readAt > CACHE_SECONDS * 1000) {
    const released = prepareLayers(await loadLayers(services.prisma, services.secrets, organizationId, [], "released"));
    shared = { stamp: flags.stamp, readAt: Date.now(), layers: released, revisions: new Map(), rolledOut: new Map() };
    cache.delete(organizationId);
    if (cache.size >= CACHED_ORGANIZATIONS) cache.delete(cache.keys().next().value!);
    cache.set(organizationId, shared);
  }
  let layers = shared.layers;
  if (flags.override) {
    const own = await loadDeviceLayer(services.prisma, services.secrets, flags.device.id);
    if (own) layers = [...layers, ...prepareLayers([own])];
  }
  if (!rolledOut.length) return { shared, layers };
  const keyOf = (r: { layerId: string; revision: number }) => `${r.layerId}@${r.revision}`;
  const missing = rolledOut.filter((r) => !shared.rolledOut.has(keyOf(r)));
  for (const layer of prepareLayers(await loadLayerRevisions(services.prisma, services.secrets, missing))) {
    shared.rolledOut.set(keyOf({ layerId: layer.id, revision: layer.revision }), layer);
  }
  const replaced = new Map(rolledOut.map((r) => [r.layerId, shared.rolledOut.get(keyOf(r))]));
  return { shared, layers: layers.map((l) => replaced.get(l.id) ?? l) };
}

const UTC_NOW = `(now() AT TIME ZONE 'UTC')`;

/**
 * The device's report ends its rollout actions that were handed the reported revision: applied,
 * succeeded; failed, failed with the device's message. One statement; returns the jobs to judge.
 */
async function endRolloutActions(raw: RawDatabase, deviceId: string, ids: string[], state: "succeeded" | "failed", message: string | null) {
  if (!ids.length) return [];
  return raw.query<{ id: string; jobId: string; organizationId: string }>(
    `UPDATE "DeviceAction" SET "state" = $3, "message" = $4, "startedAt" = COALESCE("startedAt", ${UTC_NOW}), "finishedAt" = ${UTC_NOW}, "updatedAt" = ${UTC_NOW}
      WHERE "deviceId" = $1::uuid AND "id" IN (SELECT jsonb_array_elements_text($2::text::jsonb)::uuid) AND "state" IN ('pending', 'delivered')
      RETURNING "id", "jobId"::text AS "jobId", "organizationId"::text AS "organizationId"`,
    [deviceId, JSON.stringify(ids), state, message],
  );
}

/** Notes on each action the configuration revision the device was handed for it (its result). */
async function recordHanded(raw: RawDatabase, deviceId: string, ids: string[], revision: string): Promise<void> {
  if (!ids.length) return;
  await raw.query(
    `UPDATE "DeviceAction" SET "result" = jsonb_build_object('revision', $3::text), "updatedAt" = ${UTC_NOW}
      WHERE "deviceId" = $1::uuid AND "id" IN (SELECT jsonb_array_elements_text($2::text::jsonb)::uuid) AND "state" = 'delivered'`,
    [deviceId, JSON.stringify(ids), revision],
  );
}

const uniqueJobs = (rows: Array<{ jobId: string; organizationId: string }>) => [...new Map(rows.map((r) => [r.jobId, r])).values()];

/** The device's revision, computed once per configuration key and stamp (throws ConfigurationError). */
function revisionFor(shared: SharedLayers, layers: PreparedLayer[], context: ReturnType<typeof deviceContextOf>): string {
  const key = configurationKey(applicableLayers(layers, context), context);
  let revision = shared.revisions.get(key);
  if (revision === undefined) {
    revision = computeEffective(layers, context).revision;
    if (shared.revisions.size >= CACHED_REVISIONS) shared.revisions.clear();
    shared.revisions.set(key, revision);
  }
  return revision;
}

/** Stores a report (when the device sent one) on the device's row: one statement. */
export async function recordConfigurationReport(raw: RawDatabase, device: { id: string; organizationId: string }, report: ConfigurationReport): Promise<void> {
  const applied = report.appliedRevision ?? (report.state === "applied" ? report.revision : null);
  await raw.query(
    `INSERT INTO "DeviceConfigState" ("deviceId", "organizationId", "revision", "state", "message", "appliedRevision", "drift", "reportedAt", "updatedAt")
     VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6, $7::text::jsonb, (now() AT TIME ZONE 'UTC'), (now() AT TIME ZONE 'UTC'))
     ON CONFLICT ("deviceId") DO UPDATE SET
       "revision" = EXCLUDED."revision", "state" = EXCLUDED."state", "message" = EXCLUDED."message",
       "appliedRevision" = COALESCE(EXCLUDED."appliedRevision", "DeviceConfigState"."appliedRevision"),
       "drift" = EXCLUDED."drift", "reportedAt" = EXCLUDED."reportedAt", "updatedAt" = EXCLUDED."updatedAt"`,
    [device.id, device.organizationId, report.revision, report.state, report.message ?? null, applied, JSON.stringify(report.drift ?? [])],
  );
}

/** Notes why the service cannot render the device's configuration (only when that changed). */
async function recordUnrenderable(raw: RawDatabase, device: { id: string; organizationId: string }, message: string): Promise<void> {
  await raw.query(
    `INSERT INTO "DeviceConfigState" ("deviceId", "organizationId", "state", "message", "updatedAt")
     VALUES ($1::uuid, $2::uuid, 'unrenderable', $3, (now() AT TIME ZONE 'UTC'))
     ON CONFLICT ("deviceId") DO UPDATE SET "state" = 'unrenderable', "message" = $3, "updatedAt" = (now() AT TIME ZONE 'UTC')`,
    [device.id, device.organizationId, message],
  );
}

export interface ConfigurationExchange {
  answer?: ConfigurationAnswer;
  /** the device's variables with secrets as values, computed on first call (deployment parameters) */
  variables: () => Record<string, string> | null;
}

/**
 * The configuration part of a heartbeat's answer. A device whose configuration cannot be
 * rendered (a template naming a label it lacks, two layers at one order) is given none, so
 * it keeps what it applied; why is stored for the operator (the effective view says it too).
 */
export async function configurationExchange(
  services: Services,
  device: { id: string; organizationId: string },
  flags: ConfigurationFlags | null,
  report: ConfigurationReport | undefined,
  /** the device's apply-configuration actions the actions' exchange handed over now */
  configuring?: ReadonlySet<string>,
): Promise<ConfigurationExchange> {
  const raw = services.database.opened.raw;
  if (report) await recordConfigurationReport(raw, device, sealDriftContent(services.secrets, report));
  if (!flags) return { variables: () => null };
  let rollout = flags.rollout ?? [];
  if (report && rollout.some((r) => r.state === "delivered" && r.handed === report.revision)) {
    const reported = rollout.filter((r) => r.state === "delivered" && r.handed === report.revision).map((r) => r.id);
    const state = report.state === "applied" ? "succeeded" : "failed";
    const ended = await endRolloutActions(raw, device.id, reported, state, report.state === "applied" ? null : report.message ?? "the device failed to apply it");
    await judgeJobsNow(services, uniqueJobs(ended));
    const endedIds = new Set(ended.map((r) => r.id));
    rollout = rollout.map((r) => (endedIds.has(r.id) ? { ...r, state } : r));
  }
  // admitted: handed over now (delivered), or done (succeeded) while the rollout lives
  const rolledOut = rollout.filter((r) => r.state === "succeeded" || configuring?.has(r.id));
  const { shared, layers: prepared } = await layersFor(services, device.organizationId, flags, rolledOut);
  const context = deviceContextOf(flags.device);
  const handedNow = rolledOut.filter((r) => r.state !== "succeeded");
  let revision: string;
  try {
    revision = revisionFor(shared, prepared, context);
  } catch (err) {
    if (!(err instanceof ConfigurationError)) throw err;
    if (flags.state !== "unrenderable" || flags.message !== err.message) await recordUnrenderable(raw, device, err.message);
    // a revision the service cannot render for this device fails its rollout action
    await judgeJobsNow(services, uniqueJobs(await endRolloutActions(raw, device.id, handedNow.map((r) => r.id), "failed", `the service cannot render the configuration: ${err.message}`)));
    return { variables: () => null };
  }
  if (handedNow.length) {
    const applied = report ? report.appliedRevision ?? (report.state === "applied" ? report.revision : flags.applied) : flags.applied;
    // a device that runs this configuration already (the change does not reach it) is done at once
    if (applied === revision) {
      await judgeJobsNow(services, uniqueJobs(await endRolloutActions(raw, device.id, handedNow.map((r) => r.id), "succeeded", "the device runs this configuration already")));
    } else {
      await recordHanded(raw, device.id, handedNow.filter((r) => r.handed !== revision).map((r) => r.id), revision);
    }
  }
  // renderable again (a label added, a layer fixed): the stale reason goes
  if (flags.state === "unrenderable") {
    await raw.query(`UPDATE "DeviceConfigState" SET "state" = NULL, "message" = NULL WHERE "deviceId" = $1::uuid AND "state" = 'unrenderable'`, [device.id]);
  }
  let revealed: ReturnType<typeof computeEffective> | undefined;
  const reveal = () => (revealed ??= computeEffective(prepared, context, { reveal: true, revision }));
  const variables = () => Object.fromEntries(Object.entries(reveal().variables).map(([name, v]) => [name, v.value]));
  const applied = report ? report.appliedRevision ?? (report.state === "applied" ? report.revision : flags.applied) : flags.applied;
  if (applied === revision && !flags.restore) return { answer: { revision, full: false }, variables };
  if (flags.restore) {
    await raw.query(`UPDATE "DeviceConfigState" SET "restoreRequested" = false WHERE "deviceId" = $1::uuid`, [device.id]);
  }
  const full = reveal();
  return {
    answer: {
      revision,
      full: true,
      ...(flags.restore ? { restore: true } : {}),
      files: full.files.map((f) => ({ path: f.path, contentBase64: f.contentBase64, mode: f.mode, ...(f.owner ? { owner: f.owner } : {}), sha256: f.sha256, layer: f.layer })),
      vars: variables(),
      activations: full.activations,
    },
    variables,
  };
}
