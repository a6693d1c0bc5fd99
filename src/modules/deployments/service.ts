// Deployments: create, read, update, and the lifecycle moves (start, stop, delete) with the
// removal they ask of the devices. Rollout moves are in rollout.ts.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { SecretBox } from "../../lib/crypto.js";
import type { DeviceStatus } from "../../lib/events.js";
import { pageOf } from "../../lib/paging.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { iso, isoNullable } from "../devices/schemas.js";
import { containsText } from "../../lib/like.js";
import type { DeploymentEvents } from "./events.js";
import { dispatchInstall, removalsAwaited, requestRemoval } from "./dispatch.js";
import { checkParameters, missingSecrets, openSecrets, sealSecrets, withoutMissingSecrets } from "./parameters.js";
import type { ManifestParameter } from "../applications/manifest/index.js";
import { abortRollout, evaluateLocked, initializeRollout, moveRollout, startRollout } from "./rollout.js";
import { TERMINAL_ROLLOUT_STATES, type RolloutState } from "./rollout-machine.js";
import {
  DEPLOYMENT_STATUSES, emptyProgress, emptyStateCounts, type CreateDeploymentInput, type DeploymentDto, type StateCounts, type UpdateDeploymentInput,
} from "./schemas.js";
import { ROLLOUT_STATES } from "./rollout-machine.js";
import { EDITABLE_STATUSES, stopRefusal } from "./rollout-moves.js";
import { IN_PROGRESS_STATES, deploymentState, storedCombinations, type DeploymentState } from "./deployment-state.js";
import { countsByDeployment, deploymentInclude, findDeployment, lockDeployment, toDeploymentDto, type DeploymentRow } from "./store.js";
import type { Strategy } from "./strategy.js";
import { freezeTargets } from "./targets.js";
import type { RetryOptions } from "./options.js";
import type { DisruptionBudget, MaintenanceWindows } from "../rollout-engine/options.js";
import { profileOfDeployment, resolveVersion } from "./versions.js";
import { counted } from "../../lib/plural.js";
import { UTC_NOW } from "../devices/sql.js";
import { assertUpgradable, endPredecessors, moveToPredecessor } from "./upgrade.js";

export async function deploymentDto(db: DbTx, row: DeploymentRow): Promise<DeploymentDto> {
  const counts = await countsByDeployment(db, [row.id]);
  return toDeploymentDto(row, counts.get(row.id)!);
}

/** The rollout options' columns (options.ts) that the input gives; null clears one, undefined leaves it. */
function optionColumns(input: Partial<Pick<CreateDeploymentInput, "continuous" | "onLeave">> & {
  retry?: RetryOptions | null; startAt?: string | null; maintenanceWindows?: MaintenanceWindows | null; disruptionBudget?: DisruptionBudget | null;
}) {
  const json = (v: object | null | undefined) => (v === undefined ? undefined : v === null ? Prisma.DbNull : (v as Prisma.InputJsonValue));
  return {
    retry: json(input.retry),
    startAt: input.startAt === undefined ? undefined : input.startAt === null ? null : new Date(input.startAt),
    maintenanceWindows: json(input.maintenanceWindows),
    disruptionBudget: json(input.disruptionBudget),
    continuous: input.continuous,
    onLeave: input.onLeave,
  };
}

/** 400 listing (some of) the ids that are not devices of the organization. */
async function checkDeviceIds(db: DbTx, organizationId: string, ids: string[]): Promise<string[]> {
  const unique = [...new Set(ids)];
  const found = await db.device.findMany({ where: { organizationId, id: { in: unique } }, select: { id: true } });
  if (found.length !== unique.length) {
    const known = new Set(found.map((d) => d.id));
    const unknown = unique.filter((id) => !known.has(id));
    throw badRequest(`target.deviceIds: ${counted(unknown.length, "unknown device")}: ${unknown.slice(0, 5).join(", ")}${unknown.length > 5 ? ", ..." : ""}`);
  }
  return unique;
}

/**
 * A draft. `pendingSecrets` (a document applied as code, which never holds secrets): required
 * secret parameters may lack a value; the draft cannot start until they are set.
 */
export async function createDeployment(
  db: DbTx, secrets: SecretBox, organizationId: string, createdById: string | null, input: CreateDeploymentInput, opts: { pendingSecrets?: boolean } = {},
): Promise<DeploymentDto> {
  const resolved = await resolveVersion(db, organizationId, input.applicationId, input.version, input.profileId);
  const declared = opts.pendingSecrets ? withoutMissingSecrets(resolved.parameters, input.parameters) : resolved.parameters;
  const { plain, secret } = checkParameters(declared, input.parameters);
  const deviceIds = input.target.deviceIds ? await checkDeviceIds(db, organizationId, input.target.deviceIds) : [];
  const row = await db.deployment.create({
    data: {
      organizationId,
      name: input.name,
      description: input.description ?? null,
      applicationId: resolved.applicationId,
      applicationVersionId: resolved.applicationVersionId,
      version: resolved.version,
      profileId: resolved.profile.id,
      parameters: plain as Prisma.InputJsonValue,
      secretParameters: sealSecrets(secrets, secret),
      secretParameterNames: Object.keys(secret),
      labelSelector: input.target.labelSelector ?? Prisma.DbNull,
      targetDeviceIds: deviceIds,
      strategy: input.strategy as Prisma.InputJsonValue,
      ...optionColumns(input),
      createdById,
    },
    include: deploymentInclude,
  });
  return toDeploymentDto(row, emptyProgress());
}

export async function getDeployment(db: DbTx, organizationId: string, id: string): Promise<DeploymentDto> {
  return deploymentDto(db, await findDeployment(db, organizationId, id));
}

export async function listDeployments(
  db: DbTx,
  organizationId: string,
  input: {
    status?: string; rolloutState?: string; state?: DeploymentState; inProgress?: boolean; applicationId?: string; search?: string; scheduled?: boolean; limit: number; offset: number;
  },
) {
  const where: Prisma.DeploymentWhereInput = {
    organizationId,
    ...(input.scheduled === undefined ? {} : input.scheduled ? { status: "draft", startAt: { not: null } } : { NOT: { status: "draft", startAt: { not: null } } }),
    AND: [
      ...(input.state ? [stateWhere([input.state])] : []),
      ...(input.inProgress === undefined ? [] : [input.inProgress ? stateWhere(IN_PROGRESS_STATES) : { NOT: stateWhere(IN_PROGRESS_STATES) }]),
    ],
    ...(input.status ? { status: input.status } : {}),
    ...(input.rolloutState ? { rolloutState: input.rolloutState } : {}),
    ...(input.applicationId ? { applicationId: input.applicationId } : {}),
    ...(input.search ? { name: containsText(input.search) } : {}),
  };
  const [rows, total] = await Promise.all([
    db.deployment.findMany({ where, include: deploymentInclude, orderBy: [{ createdAt: "desc" }, { id: "desc" }], take: input.limit, skip: input.offset }),
    db.deployment.count({ where }),
  ]);
  const counts = await countsByDeployment(db, rows.map((r) => r.id));
  return pageOf(rows.map((r) => toDeploymentDto(r, counts.get(r.id)!)), total, input.offset);
}


/** Deployments whose one state (deployment-state.ts) is one of `states`: the stored combinations that compute to them. */
function stateWhere(states: readonly DeploymentState[]): Prisma.DeploymentWhereInput {
  return {
    OR: storedCombinations(states).map((c) => ({
      status: c.status,
      ...(c.rolloutStates ? { rolloutState: { in: c.rolloutStates } } : {}),
      ...(c.scheduled === null ? {} : { startAt: c.scheduled ? { not: null } : null }),
    })),
  };
}

/** Parameter values as one comparable text (secret values included, sorted keys). */
const valuesText = (values: Record<string, unknown>) => JSON.stringify(Object.entries(values).sort(([a], [b]) => a.localeCompare(b)));

/**
 * A draft or stopped deployment changes freely (any change discards a planned rollout). A
 * running one changes its name and description, and its version, profile and parameters: a
 * new revision, rolled out to its devices by an update rollout (upgrade.ts); its target,
 * strategy and rollout options stay as started (409 naming the field).
 */
export async function updateDeployment(
  db: DbTx, secrets: SecretBox, organizationId: string, input: UpdateDeploymentInput, events: DeploymentEvents, opts: { pendingSecrets?: boolean } = {},
) {
  const row = await lockDeployment(db, organizationId, input.id);
  const running = row.status === "running";
  if (!running && !EDITABLE_STATUSES.includes(row.status)) throw conflict(`Cannot update the deployment while it is ${row.status}; stop it first`);
  if (running) assertUpgradable(row, input, false);
  if (input.startAt && row.status !== "draft") throw conflict(`Cannot schedule a start: the deployment is ${row.status} (only a draft starts at startAt); start it instead`);
  const version = input.version ?? row.version;
  const profileId = input.profileId ?? row.profileId;
  const data: Prisma.DeploymentUpdateInput = {};
  if (input.name !== undefined) data.name = input.name;
  if (input.description !== undefined) data.description = input.description;
  let revisionChanged = false;
  if (input.version !== undefined || input.profileId !== undefined || input.parameters !== undefined) {
    const resolved = await resolveVersion(db, organizationId, row.applicationId, version, profileId);
    const stored = { ...(row.parameters as Record<string, unknown>), ...openSecrets(secrets, row.secretParameters) };
    const values = input.parameters ?? stored;
    // a document (which never holds secrets) leaves required ones pending; starting waits for them
    const { plain, secret } = checkParameters(opts.pendingSecrets ? withoutMissingSecrets(resolved.parameters, values) : resolved.parameters, values);
    revisionChanged = resolved.applicationVersionId !== row.applicationVersionId || resolved.profile.id !== row.profileId || valuesText({ ...plain, ...secret }) !== valuesText(stored);
    Object.assign(data, {
      appVersion: { connect: { id: resolved.applicationVersionId } },
      version: resolved.version,
      profileId: resolved.profile.id,
      parameters: plain as Prisma.InputJsonValue,
      secretParameters: sealSecrets(secrets, secret),
      secretParameterNames: Object.keys(secret),
    });
  }
  if (running) {
    // Unchanged values (a document applied again, say) are no new revision: nothing is rolled out.
    if (!revisionChanged) {
      for (const key of ["appVersion", "version", "profileId", "parameters", "secretParameters", "secretParameterNames"] as const) delete data[key];
      const updated = await db.deployment.update({ where: { id: row.id }, data, include: deploymentInclude });
      return { before: row, after: await deploymentDto(db, updated) };
    }
    assertUpgradable(row, input, true);
    await moveToPredecessor(db, row, data.version as string);
    Object.assign(data, { rolloutState: "draft", currentBatch: null, pausedFrom: null, rolloutReason: null, completedAt: null });
    events.rolloutChanged(organizationId, row.id, row.rolloutState, "draft", null, null);
    const upgraded = await launch(db, await db.deployment.update({ where: { id: row.id }, data, include: deploymentInclude }), events);
    await endPredecessors(db, upgraded, events);
    return { before: row, after: await deploymentDto(db, upgraded) };
  }
  if (input.target !== undefined) {
    data.labelSelector = input.target.labelSelector ?? Prisma.DbNull;
    data.targetDeviceIds = input.target.deviceIds ? await checkDeviceIds(db, organizationId, input.target.deviceIds) : [];
  }
  if (input.strategy !== undefined) {
    data.strategy = input.strategy as Prisma.InputJsonValue;
  }
  Object.assign(data, optionColumns(input));
  const continuous = input.continuous ?? row.continuous;
  const deviceListTarget = input.target ? input.target.deviceIds !== undefined : row.labelSelector === null;
  if (continuous && deviceListTarget) throw badRequest("continuous: only a labelSelector target can be continuous (a device list never changes)");
  // A planned rollout was cut for the old target and strategy: plan again after any change.
  if (row.rolloutState !== "draft") {
    await db.deploymentBatch.deleteMany({ where: { deploymentId: row.id } });
    if (row.status === "draft") await db.deploymentDevice.deleteMany({ where: { deploymentId: row.id } });
    Object.assign(data, { rolloutState: "draft", currentBatch: null, pausedFrom: null, rolloutReason: null });
    events.rolloutChanged(organizationId, row.id, row.rolloutState, "draft", null, null);
  }
  const updated = await db.deployment.update({ where: { id: row.id }, data, include: deploymentInclude });
  return { before: row, after: await deploymentDto(db, updated) };
}

/**
 * Sets secret parameter values (merged into the stored ones), the one change a deployment
 * managed as code takes through the API: its documents never hold secrets. Only parameters the
 * version declares secret (400 naming any other); a running deployment rolls the new values out
 * by an update rollout, as a PATCH of its parameters would.
 */
export async function setSecretParameters(db: DbTx, secrets: SecretBox, organizationId: string, id: string, values: Record<string, unknown>, events: DeploymentEvents) {
  const row = await lockDeployment(db, organizationId, id);
  if (row.status === "stopping" || row.status === "deleting") throw conflict(`Cannot set secret parameters while the deployment is ${row.status}`);
  const version = await db.applicationVersion.findUniqueOrThrow({ where: { id: row.applicationVersionId }, select: { parameters: true } });
  const declared = version.parameters as unknown as Record<string, ManifestParameter>;
  const notSecret = Object.keys(values).filter((name) => !declared[name]?.secret);
  if (notSecret.length) throw badRequest(`parameters.${notSecret[0]}: not a secret parameter of version ${row.version} (secret: ${Object.keys(declared).filter((n) => declared[n].secret).join(", ") || "none"})`);
  const parameters = { ...(row.parameters as Record<string, unknown>), ...openSecrets(secrets, row.secretParameters), ...values };
  // Required secrets still missing stay missing (pending secret) rather than failing the check.
  if (row.status !== "running") {
    const { plain, secret } = checkParameters(withoutMissingSecrets(declared, parameters), parameters);
    const updated = await db.deployment.update({
      where: { id },
      data: { parameters: plain as Prisma.InputJsonValue, secretParameters: sealSecrets(secrets, secret), secretParameterNames: Object.keys(secret) },
      include: deploymentInclude,
    });
    return deploymentDto(db, updated);
  }
  return (await updateDeployment(db, secrets, organizationId, { id, parameters: parameters as UpdateDeploymentInput["parameters"] }, events)).after;
}

/**
 * start: all-at-once puts the deployment into the desired state of every eligible targeted
 * device; staged initializes the rollout when needed and dispatches the canary. A stopped
 * deployment starts afresh (its device set is resolved again).
 */
export async function startDeployment(db: DbTx, organizationId: string, id: string, events: DeploymentEvents): Promise<DeploymentRow> {
  let row = await lockDeployment(db, organizationId, id);
  if (!EDITABLE_STATUSES.includes(row.status)) throw conflict(`Cannot start the deployment: it is ${row.status}`);
  if (row.status === "stopped") {
    await db.deploymentBatch.deleteMany({ where: { deploymentId: row.id } });
    row = await moveRollout(db, row, { rolloutState: "draft", currentBatch: null, pausedFrom: null, rolloutReason: null, completedAt: null }, events);
  }
  return launch(db, row, events);
}

/** Starts the rollout of a draft rollout position: a start, or the update rollout of an upgrade. */
async function launch(db: DbTx, row: DeploymentRow, events: DeploymentEvents): Promise<DeploymentRow> {
  const declared = await db.applicationVersion.findUniqueOrThrow({ where: { id: row.applicationVersionId }, select: { parameters: true } });
  const missing = missingSecrets(declared.parameters as unknown as Record<string, ManifestParameter>, row.secretParameterNames);
  if (missing.length) {
    throw conflict(
      `Cannot start the deployment: the required secret parameter${missing.length > 1 ? "s" : ""} ${missing.join(", ")} ${missing.length > 1 ? "have" : "has"} no value yet ` +
        "(pending secret); set it with POST /deployments/{id}/secret-parameters",
    );
  }
  if (row.continuous) await assertNoOverlappingContinuous(db, row);
  if ((row.strategy as Strategy).type === "staged") {
    if (row.rolloutState === "draft") row = await initializeRollout(db, row, events);
    return startRollout(db, row, events);
  }
  const frozen = await freezeTargets(db, row, await profileOfDeployment(db, row));
  if (frozen.eligible === 0) throw conflict(`The target matches no eligible device (${frozen.skipped} skipped as not eligible); nothing to start`);
  await dispatchInstall(db, row, null);
  return moveRollout(db, row, { rolloutState: "in_progress", status: "running", startedAt: new Date(), completedAt: null, rolloutReason: null, currentBatch: null }, events);
}

/**
 * One version per application on a device: two continuous deployments of one application may
 * not target the same devices. 409 naming the other deployment and a device both match now.
 */
async function assertNoOverlappingContinuous(db: DbTx, row: DeploymentRow): Promise<void> {
  const [clash] = await db.$queryRaw<Array<{ name: string; id: string; deviceName: string }>>`
    SELECT o."name", o."id"::text AS "id", dev."name" AS "deviceName"
      FROM "Deployment" o
      JOIN "Device" dev ON dev."organizationId" = o."organizationId" AND dev."labels" @> o."labelSelector" AND dev."labels" @> ${JSON.stringify(row.labelSelector)}::jsonb
     WHERE o."organizationId" = ${row.organizationId}::uuid AND o."applicationId" = ${row.applicationId}::uuid AND o."id" <> ${row.id}::uuid
       AND o."continuous" AND o."status" = 'running'
     LIMIT 1`;
  if (clash) {
    throw conflict(`Continuous deployment ${clash.name} (${clash.id}) of the same application already targets device ${clash.deviceName}; one version per application on a device`);
  }
}

/** Asks the devices to remove the application; the deployment is stopped once they all confirmed. */
async function beginRemoval(db: DbTx, row: DeploymentRow, status: "stopping" | "deleting", events: DeploymentEvents): Promise<DeploymentRow> {
  if (!TERMINAL_ROLLOUT_STATES.includes(row.rolloutState as RolloutState) && row.rolloutState !== "draft") {
    if ((row.strategy as Strategy).type === "staged" && row.rolloutState !== "initialized") {
      row = await abortRollout(db, row, `deployment ${status === "stopping" ? "stopped" : "deleted"} by an operator`, events, null, { removing: status });
    } else {
      row = await moveRollout(db, row, { rolloutState: "aborted", completedAt: new Date(), rolloutReason: `deployment ${status === "stopping" ? "stopped" : "deleted"} by an operator` }, events);
    }
  }
  await requestRemoval(db, row.id, `deployment ${status === "stopping" ? "stopped" : "deleted"}`);
  return moveRollout(db, row, { status, removalRequestedAt: new Date() }, events);
}

/**
 * Stopping or deleting a deployment takes its predecessors along (upgrade.ts: the old revision
 * still running on devices the upgrade did not reach): their devices remove the application
 * too, and they end as the deployment does. Set-based, for all of them at once.
 */
async function removePredecessors(db: DbTx, row: DeploymentRow, status: "stopping" | "deleting", force: boolean, events: DeploymentEvents): Promise<void> {
  const reason = `deployment ${row.name} ${status === "stopping" ? "stopped" : "deleted"}`;
  const moved = await db.$queryRaw<Array<{ id: string; from: string }>>`
    UPDATE "Deployment" p SET "status" = ${status}, "removalRequestedAt" = COALESCE(p."removalRequestedAt", now()), "updatedAt" = now()
      FROM "Deployment" before
     WHERE p."upgradedToId" = ${row.id}::uuid AND before."id" = p."id" AND p."status" IN ('running', 'stopping')
    RETURNING p."id"::text AS "id", before."status" AS "from"`;
  for (const p of moved) events.statusChanged(row.organizationId, p.id, p.from, status);
  const ids = JSON.stringify(moved.map((p) => p.id));
  const mine = Prisma.sql`"deploymentId" IN (SELECT jsonb_array_elements_text(${ids}::jsonb)::uuid)`;
  await db.$executeRaw`
    UPDATE "DeploymentDevice"
       SET "retryAt" = NULL,
           "state" = CASE WHEN "desiredAction" IS NULL AND "state" = 'pending' THEN 'cancelled' ELSE "state" END,
           "desiredAction" = CASE WHEN "desiredAction" = 'install' THEN 'remove' ELSE "desiredAction" END,
           "reason" = ${reason}, "stateChangedAt" = ${UTC_NOW}
     WHERE ${mine} AND ("desiredAction" IS NOT NULL OR "state" = 'pending' OR "retryAt" IS NOT NULL)`;
  if (force) await db.$executeRaw`UPDATE "DeploymentDevice" SET "desiredAction" = NULL WHERE ${mine} AND "desiredAction" = 'remove'`;
  // Those no device has to confirm end now; a deleted deployment's ended predecessors go with it.
  const awaited = Prisma.sql`EXISTS (SELECT 1 FROM "DeploymentDevice" e WHERE e."deploymentId" = p."id" AND e."desiredAction" = 'remove' AND e."state" <> 'removed')`;
  const finished = await db.$queryRaw<Array<{ id: string; from: string }>>`
    UPDATE "Deployment" p SET "status" = 'stopped', "updatedAt" = now()
     WHERE p."upgradedToId" = ${row.id}::uuid AND p."status" = 'stopping' AND NOT ${awaited}
    RETURNING p."id"::text AS "id", 'stopping' AS "from"`;
  for (const p of finished) events.statusChanged(row.organizationId, p.id, p.from, "stopped");
  if (status === "deleting") {
    await db.$executeRaw`DELETE FROM "Deployment" p WHERE p."upgradedToId" = ${row.id}::uuid AND (p."status" IN ('draft', 'stopped') OR (p."status" = 'deleting' AND NOT ${awaited}))`;
  }
}

/** Ends a removal: confirmed by every device, or forced by an operator. Returns null when the deployment is gone. */
export async function finishRemoval(db: DbTx, row: DeploymentRow, forced: boolean, events: DeploymentEvents): Promise<DeploymentRow | null> {
  if (forced) {
    await db.deploymentDevice.updateMany({
      where: { deploymentId: row.id, desiredAction: "remove" },
      data: { desiredAction: null, reason: "removal forced by an operator before the device confirmed it", stateChangedAt: new Date() },
    });
  }
  if (row.status === "deleting") {
    await db.deployment.delete({ where: { id: row.id } });
    events.statusChanged(row.organizationId, row.id, row.status, "deleted");
    return null;
  }
  return moveRollout(db, row, { status: "stopped" }, events);
}

export async function stopDeployment(db: DbTx, organizationId: string, id: string, force: boolean, events: DeploymentEvents): Promise<DeploymentRow> {
  let row = await lockDeployment(db, organizationId, id);
  const refusal = stopRefusal(row.status, force);
  if (refusal) throw conflict(refusal);
  await removePredecessors(db, row, "stopping", force, events);
  if (row.status === "stopping") return (await finishRemoval(db, row, true, events))!;
  row = await beginRemoval(db, row, "stopping", events);
  if (force || (await removalsAwaited(db, row.id)) === 0) return (await finishRemoval(db, row, force, events))!;
  return row;
}

export async function deleteDeployment(db: DbTx, organizationId: string, id: string, force: boolean, events: DeploymentEvents) {
  let row = await lockDeployment(db, organizationId, id);
  await removePredecessors(db, row, "deleting", force, events);
  if (EDITABLE_STATUSES.includes(row.status)) {
    await db.deployment.delete({ where: { id: row.id } });
    return { id, deleted: true, status: null };
  }
  if (row.status === "running") row = await beginRemoval(db, row, "deleting", events);
  else if (row.status === "stopping") row = await moveRollout(db, row, { status: "deleting" }, events);
  if (force || (await removalsAwaited(db, row.id)) === 0) {
    await finishRemoval(db, row, force, events);
    return { id, deleted: true, status: null };
  }
  return { id, deleted: false, status: "deleting" as const };
}

/** After devices reported: a deployment whose removal every device confirmed is finished. */
export async function finishRemovalIfConfirmed(db: DbTx, row: DeploymentRow, events: DeploymentEvents): Promise<void> {
  if ((row.status === "stopping" || row.status === "deleting") && (await removalsAwaited(db, row.id)) === 0) await finishRemoval(db, row, false, events);
}

export async function removalStatus(db: DbTx, organizationId: string, id: string, page: { limit: number; offset: number }) {
  const row = await findDeployment(db, organizationId, id);
  const asked = { deploymentId: id, OR: [{ desiredAction: "remove" }, { state: "removed" }] } satisfies Prisma.DeploymentDeviceWhereInput;
  const [total, confirmed, devices] = await Promise.all([
    db.deploymentDevice.count({ where: asked }),
    db.deploymentDevice.count({ where: { deploymentId: id, state: "removed" } }),
    db.deploymentDevice.findMany({
      where: asked,
      include: { device: { select: { name: true } } },
      // unconfirmed first: what an operator waits for
      orderBy: [{ desiredAction: { sort: "asc", nulls: "last" } }, { stateChangedAt: "asc" }, { deviceId: "asc" }],
      take: page.limit,
      skip: page.offset,
    }),
  ]);
  const awaiting = row.status === "stopping" || row.status === "deleting" ? await removalsAwaited(db, id) : 0;
  return {
    deploymentId: id,
    status: row.status as (typeof DEPLOYMENT_STATUSES)[number],
    removalRequestedAt: isoNullable(row.removalRequestedAt),
    total,
    confirmed,
    awaiting,
    complete: row.removalRequestedAt !== null && awaiting === 0,
    devices: devices.map((d) => ({
      deviceId: d.deviceId,
      deviceName: d.device.name,
      state: d.state as StateKey,
      confirmed: d.state === "removed",
      message: d.message ?? d.reason,
      stateChangedAt: iso(d.stateChangedAt),
    })),
    hasMore: page.offset + devices.length < total,
  };
}
type StateKey = keyof StateCounts;

export async function listAwaitingRemoval(db: DbTx, organizationId: string, page: { limit: number; offset: number }) {
  const where = { organizationId, status: { in: ["stopping", "deleting"] } } satisfies Prisma.DeploymentWhereInput;
  const [rows, total] = await Promise.all([
    db.deployment.findMany({ where, orderBy: [{ removalRequestedAt: "asc" }, { id: "asc" }], take: page.limit, skip: page.offset }),
    db.deployment.count({ where }),
  ]);
  const counts = await countsByDeployment(db, rows.map((r) => r.id));
  const awaiting = rows.length
    ? await db.deploymentDevice.groupBy({ by: ["deploymentId"], where: { deploymentId: { in: rows.map((r) => r.id) }, desiredAction: "remove", state: { not: "removed" } }, _count: { _all: true } })
    : [];
  const awaitingOf = new Map(awaiting.map((a) => [a.deploymentId, a._count._all]));
  const items = rows.map((r) => {
    const c = counts.get(r.id)!;
    const waiting = awaitingOf.get(r.id) ?? 0;
    return { id: r.id, name: r.name, status: r.status as (typeof DEPLOYMENT_STATUSES)[number], removalRequestedAt: isoNullable(r.removalRequestedAt), total: c.removed + waiting, confirmed: c.removed, awaiting: waiting };
  });
  return pageOf(items, total, page.offset);
}

export async function deploymentStats(db: DbTx, organizationId: string) {
  const [byStatus, byRollout, byDeviceState] = await Promise.all([
    db.deployment.groupBy({ by: ["status"], where: { organizationId }, _count: { _all: true } }),
    db.deployment.groupBy({ by: ["rolloutState"], where: { organizationId }, _count: { _all: true } }),
    db.deploymentDevice.groupBy({ by: ["state"], where: { organizationId }, _count: { _all: true } }),
  ]);
  const status = Object.fromEntries(DEPLOYMENT_STATUSES.map((s) => [s, 0])) as Record<(typeof DEPLOYMENT_STATUSES)[number], number>;
  for (const g of byStatus) if (g.status in status) status[g.status as keyof typeof status] = g._count._all;
  const rollout = Object.fromEntries(ROLLOUT_STATES.map((s) => [s, 0])) as Record<(typeof ROLLOUT_STATES)[number], number>;
  for (const g of byRollout) if (g.rolloutState in rollout) rollout[g.rolloutState as keyof typeof rollout] = g._count._all;
  const devices = emptyStateCounts();
  for (const g of byDeviceState) if (g.state in devices) devices[g.state as StateKey] = g._count._all;
  return { total: Object.values(status).reduce((a, b) => a + b, 0), byStatus: status, byRolloutState: rollout, devices };
}

/** Re-judges a deployment under its lock (agent reports, naming the reporting device; the rollout job). */
export async function evaluateDeployment(db: DbTx, organizationId: string, id: string, events: DeploymentEvents, reporter?: { deviceId: string }): Promise<void> {
  const row = await lockDeployment(db, organizationId, id);
  const evaluated = await evaluateLocked(db, row, events, reporter);
  await finishRemovalIfConfirmed(db, evaluated, events);
}

/** The fields of a device's entry in a deployment that every list of entries answers. */
function entryFieldsOf(r: Prisma.DeploymentDeviceGetPayload<object>) {
  return {
    state: r.state as StateKey,
    desiredAction: r.desiredAction as "install" | "remove" | null,
    batchIndex: r.batchIndex,
    reason: r.reason,
    message: r.message,
    dispatchedAt: isoNullable(r.dispatchedAt),
    stateChangedAt: iso(r.stateChangedAt),
    attempt: r.attempt,
    retryAt: isoNullable(r.retryAt),
    lateJoiner: r.lateJoiner,
    leftAt: isoNullable(r.leftAt),
  };
}

/** The devices of a deployment with their state, filtered by state and batch; failed and in-flight devices are what operators look for. */
export async function listDeploymentDevices(db: DbTx, organizationId: string, input: { id: string; state?: string; batch?: number; limit: number; offset: number }) {
  await findDeployment(db, organizationId, input.id);
  const where: Prisma.DeploymentDeviceWhereInput = {
    deploymentId: input.id,
    ...(input.state ? { state: input.state } : {}),
    ...(input.batch !== undefined ? { batchIndex: input.batch } : {}),
  };
  const [rows, total] = await Promise.all([
    db.deploymentDevice.findMany({
      where,
      include: { device: { select: { name: true, status: true } } },
      orderBy: [{ stateChangedAt: "desc" }, { deviceId: "asc" }],
      take: input.limit,
      skip: input.offset,
    }),
    db.deploymentDevice.count({ where }),
  ]);
  return pageOf(
    rows.map((r) => ({
      deviceId: r.deviceId,
      deviceName: r.device.name,
      deviceStatus: r.device.status as DeviceStatus,
      ...entryFieldsOf(r),
    })),
    total,
    input.offset,
  );
}

/**
 * A device's entries in every deployment that targeted it: first those its heartbeat carries
 * now (its desired state), then the others (superseded, skipped, cancelled, removed), most
 * recently changed first. One query for the page (deployment and application joined), one count.
 */
export async function listDeviceDeployments(db: DbTx, organizationId: string, input: { id: string; desired?: boolean; limit: number; offset: number }) {
  const device = await db.device.findFirst({ where: { id: input.id, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
  const where: Prisma.DeploymentDeviceWhereInput = {
    deviceId: input.id,
    organizationId,
    ...(input.desired === undefined ? {} : { desiredAction: input.desired ? { not: null } : null }),
  };
  const [rows, total] = await Promise.all([
    db.deploymentDevice.findMany({
      where,
      include: {
        deployment: {
          select: { name: true, status: true, rolloutState: true, startAt: true, applicationId: true, version: true, profileId: true, application: { select: { name: true } } },
        },
      },
      orderBy: [{ desiredAction: { sort: "asc", nulls: "last" } }, { stateChangedAt: "desc" }, { deploymentId: "asc" }],
      take: input.limit,
      skip: input.offset,
    }),
    db.deploymentDevice.count({ where }),
  ]);
  return pageOf(
    rows.map((r) => ({
      deploymentId: r.deploymentId,
      deploymentName: r.deployment.name,
      deploymentStatus: r.deployment.status as DeploymentDto["status"],
      rolloutState: r.deployment.rolloutState as RolloutState,
      deploymentState: deploymentState(r.deployment),
      applicationId: r.deployment.applicationId,
      applicationName: r.deployment.application.name,
      version: r.deployment.version,
      profileId: r.deployment.profileId,
      ...entryFieldsOf(r),
    })),
    total,
    input.offset,
  );
}
