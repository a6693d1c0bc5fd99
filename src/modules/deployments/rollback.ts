// Rollback: a device (or every device a selector matches) goes back to the last version of
// an application that ran successfully on it, read from its version history. The rollback is
// an ordinary all-at-once deployment of that version to those devices: it supersedes the
// entry they run now (dispatch.ts), so it is visible, audited and itself stoppable.
import { randomBytes } from "node:crypto";
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { pageOf } from "../../lib/paging.js";
import { counted } from "../../lib/plural.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import { iso } from "../devices/schemas.js";
import { targetCondition, type BulkTarget } from "../groups/service.js";
import type { DeploymentEvents } from "./events.js";
import type { ManifestParameter } from "../applications/manifest/index.js";
import { startDeployment } from "./service.js";

export interface RollbackCandidate {
  deviceId: string;
  deviceName: string;
  currentVersion: string | null;
  /** a version the device is told to install and has not reported running yet (an upgrade or a rollback on its way) */
  pendingVersion: string | null;
  targetVersion: string | null;
  targetVersionId: string | null;
  targetProfileId: string | null;
  /** the deployment that ran the target version (its parameters are reused when it still exists) */
  sourceDeploymentId: string | null;
}

/**
 * For each device of the target, its current version of the application (the entry it is
 * told to install once it reported it running, else the last one in its history: a version on
 * its way, such as a pending rollback, is not current yet but `pendingVersion`) and the most
 * recent other version that ran successfully. One statement for any number of devices.
 */
export async function rollbackCandidates(db: DbTx, organizationId: string, target: BulkTarget, applicationId: string): Promise<RollbackCandidate[]> {
  return db.$queryRaw<RollbackCandidate[]>`
    WITH devices AS (
      SELECT d."id", d."name" FROM "Device" d WHERE ${targetCondition(organizationId, target)}
    ), installed AS (
      SELECT DISTINCT ON (dd."deviceId") dd."deviceId", dep."version", dd."state"
        FROM "DeploymentDevice" dd JOIN "Deployment" dep ON dep."id" = dd."deploymentId"
       WHERE dd."deviceId" IN (SELECT "id" FROM devices) AND dep."applicationId" = ${applicationId}::uuid AND dd."desiredAction" = 'install'
       ORDER BY dd."deviceId", dd."dispatchedAt" DESC NULLS LAST
    ), last_run AS (
      SELECT DISTINCT ON (h."deviceId") h."deviceId", h."version"
        FROM "DeviceVersionHistory" h
       WHERE h."deviceId" IN (SELECT "id" FROM devices) AND h."applicationId" = ${applicationId}::uuid
       ORDER BY h."deviceId", h."finishedAt" DESC
    ), current AS (
      SELECT d."id" AS "deviceId", COALESCE(CASE WHEN i."state" = 'running' THEN i."version" END, l."version") AS "version",
             CASE WHEN i."state" IN ('pending', 'downloading', 'installing') THEN i."version" END AS "pending"
        FROM devices d LEFT JOIN installed i ON i."deviceId" = d."id" LEFT JOIN last_run l ON l."deviceId" = d."id"
    ), target AS (
      SELECT DISTINCT ON (h."deviceId") h."deviceId", h."version", h."applicationVersionId", h."profileId", h."deploymentId"
        FROM "DeviceVersionHistory" h JOIN current c ON c."deviceId" = h."deviceId"
       WHERE h."applicationId" = ${applicationId}::uuid AND h."succeeded" AND h."version" <> c."version"
         AND h."applicationVersionId" IS NOT NULL
         AND EXISTS (SELECT 1 FROM "ApplicationVersion" v WHERE v."id" = h."applicationVersionId")
       ORDER BY h."deviceId", h."finishedAt" DESC
    )
    SELECT d."id"::text AS "deviceId", d."name" AS "deviceName", c."version" AS "currentVersion", c."pending" AS "pendingVersion",
           t."version" AS "targetVersion", t."applicationVersionId"::text AS "targetVersionId", t."profileId" AS "targetProfileId",
           t."deploymentId"::text AS "sourceDeploymentId"
      -- a target already on its way (a rollback not running yet) is not rolled back to twice
      FROM devices d JOIN current c ON c."deviceId" = d."id" LEFT JOIN target t ON t."deviceId" = d."id" AND t."version" IS DISTINCT FROM c."pending"
     WHERE c."version" IS NOT NULL
     ORDER BY d."name", d."id"`;
}

/** The application a device's rollback is about: the one given, else the only one it ever ran. */
export async function applicationOfDevice(db: DbTx, organizationId: string, deviceId: string, applicationId: string | undefined): Promise<string> {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
  if (applicationId) return applicationId;
  const ran = await db.deviceVersionHistory.findMany({ where: { deviceId }, distinct: ["applicationId"], select: { applicationId: true }, take: 2 });
  if (ran.length === 0) throw conflict("The device has no deployment history: there is no version to roll back to");
  if (ran.length > 1) throw badRequest("applicationId: the device ran several applications; name the one to roll back");
  return ran[0].applicationId;
}

export interface RollbackOutcome {
  deviceId: string;
  deviceName: string;
  status: "rolled_back" | "no_target";
  fromVersion: string | null;
  toVersion: string | null;
  deploymentId: string | null;
  reason: string | null;
}

export const NO_TARGET_REASON = "no other version of the application ran successfully on this device (or it left the catalog)";

/** Why a candidate has no target: nothing to go back to, or that version is already on its way. */
export function noTargetReason(c: Pick<RollbackCandidate, "pendingVersion">): string {
  return c.pendingVersion ? `${c.pendingVersion} is already on its way to this device (told to install it, not running yet)` : NO_TARGET_REASON;
}

/**
 * Rolls back the candidates that have a target: one all-at-once deployment per (version,
 * profile, source deployment), started at once. Candidates without a target are reported, and
 * so are those whose source deployment is gone with the values of required parameters.
 * `dryRun` answers the same without creating anything.
 */
export async function rollBack(
  db: DbTx, organizationId: string, createdById: string, applicationId: string, candidates: RollbackCandidate[], events: DeploymentEvents,
  opts: { dryRun?: boolean } = {},
): Promise<RollbackOutcome[]> {
  const groups = new Map<string, RollbackCandidate[]>();
  for (const c of candidates) {
    if (!c.targetVersionId) continue;
    const key = `${c.targetVersionId}|${c.targetProfileId}|${c.sourceDeploymentId ?? ""}`;
    groups.set(key, [...(groups.get(key) ?? []), c]);
  }
  const application = await db.application.findFirst({ where: { id: applicationId, organizationId }, select: { name: true } });
  if (!application && !opts.dryRun) throw badRequest("applicationId: no such application in this organization");
  const deploymentOf = new Map<string, string>();
  const refusedOf = new Map<string, string>();
  for (const members of groups.values()) {
    const first = members[0];
    const source = first.sourceDeploymentId
      ? await db.deployment.findFirst({ where: { id: first.sourceDeploymentId, organizationId }, select: { parameters: true, secretParameters: true, secretParameterNames: true } })
      : null;
    // Without the deployment that ran it, the values it was given are gone: a version that
    // needs a value it has no default for cannot be reproduced.
    const version = await db.applicationVersion.findUnique({ where: { id: first.targetVersionId! }, select: { parameters: true } });
    const declared = (version?.parameters ?? {}) as unknown as Record<string, ManifestParameter>;
    const given = new Set([...Object.keys((source?.parameters ?? {}) as Record<string, unknown>), ...(source?.secretParameterNames ?? [])]);
    const missing = Object.entries(declared)
      .filter(([name, p]) => p.required && (p.value === undefined || p.value === null) && !given.has(name))
      .map(([name]) => name);
    if (missing.length) {
      const reason = `the deployment that ran ${first.targetVersion} was deleted with its values for the required parameter(s) ${missing.join(", ")}; deploy ${first.targetVersion} with new values instead`;
      for (const m of members) refusedOf.set(m.deviceId, reason);
      continue;
    }
    if (opts.dryRun) continue;
    const stamp = new Date().toISOString().replace(/[-:]/g, "").slice(0, 15);
    const created = await db.deployment.create({
      data: {
        organizationId,
        name: `rollback ${application!.name} to ${first.targetVersion} ${stamp}-${randomBytes(2).toString("hex")}`,
        description: `Rollback of ${counted(members.length, "device")} to the last version that ran successfully on them`,
        applicationId,
        applicationVersionId: first.targetVersionId!,
        version: first.targetVersion!,
        profileId: first.targetProfileId!,
        parameters: (source?.parameters ?? {}) as Prisma.InputJsonValue,
        secretParameters: source?.secretParameters ?? null,
        secretParameterNames: source?.secretParameterNames ?? [],
        targetDeviceIds: members.map((m) => m.deviceId),
        strategy: { type: "all-at-once" },
        createdById,
      },
    });
    await startDeployment(db, organizationId, created.id, events);
    for (const m of members) deploymentOf.set(m.deviceId, created.id);
  }
  return candidates.map((c) => {
    const rolledBack = Boolean(c.targetVersionId) && !refusedOf.has(c.deviceId);
    return {
      deviceId: c.deviceId,
      deviceName: c.deviceName,
      status: rolledBack ? ("rolled_back" as const) : ("no_target" as const),
      fromVersion: c.currentVersion,
      toVersion: c.targetVersion,
      deploymentId: deploymentOf.get(c.deviceId) ?? null,
      reason: rolledBack ? null : (refusedOf.get(c.deviceId) ?? noTargetReason(c)),
    };
  });
}

export async function deploymentHistory(db: DbTx, organizationId: string, deviceId: string, input: { applicationId?: string; limit: number; offset: number }) {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
  const where = { deviceId, organizationId, ...(input.applicationId ? { applicationId: input.applicationId } : {}) };
  const [rows, total] = await Promise.all([
    db.deviceVersionHistory.findMany({ where, orderBy: [{ finishedAt: "desc" }, { id: "desc" }], take: input.limit, skip: input.offset }),
    db.deviceVersionHistory.count({ where }),
  ]);
  // The history has no foreign key to the application (it outlives deletions): the names of
  // the page's applications in one query.
  const applications = await db.application.findMany({
    where: { organizationId, id: { in: [...new Set(rows.map((r) => r.applicationId))] } },
    select: { id: true, name: true },
  });
  const nameOf = new Map(applications.map((a) => [a.id, a.name]));
  return pageOf(
    rows.map((h) => ({
      id: h.id,
      deploymentId: h.deploymentId,
      deploymentName: h.deploymentName,
      applicationId: h.applicationId,
      applicationName: nameOf.get(h.applicationId) ?? null,
      applicationVersionId: h.applicationVersionId,
      version: h.version,
      profileId: h.profileId,
      outcome: h.outcome as "running" | "failed",
      succeeded: h.succeeded,
      attempt: h.attempt,
      message: h.message,
      startedAt: iso(h.startedAt),
      finishedAt: iso(h.finishedAt),
    })),
    total,
    input.offset,
  );
}
