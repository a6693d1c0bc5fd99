// Upgrading a running deployment in place (docs/deployments.md, "Upgrading a running
// deployment"): the old revision (version, profile, parameters) moves to a predecessor row that
// keeps running on the devices, the deployment (same id and name) takes the new revision and
// rolls it out over its devices under its own strategy. Each device the update reaches
// supersedes its predecessor entry (dispatch.ts), so a device is told one version at a time;
// the predecessor ends once no device is told anything by it any more. Set-based: one
// statement per step, whatever the fleet size; runs under the deployment's row lock.
import { randomBytes } from "node:crypto";
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { conflict } from "../../trpc/errors.js";
import { UTC_NOW } from "../devices/sql.js";
import type { DeploymentEvents } from "./events.js";
import { TERMINAL_ROLLOUT_STATES, type RolloutState } from "./rollout-machine.js";
import type { UpdateDeploymentInput } from "./schemas.js";
import type { DeploymentRow } from "./store.js";
import type { Strategy } from "./strategy.js";

/**
 * The reason of an entry whose release a device brought up again after an upgrade failed there
 * (agent-state.ts writes it; restorePredecessors finds such an entry by it).
 */
export const ROLLED_BACK_TO = "rolled back to on the device: ";

/** Fields a running deployment cannot change: its devices and how they are reached stay as they were started. */
const FIXED_WHILE_RUNNING = ["target", "strategy", "retry", "startAt", "maintenanceWindows", "disruptionBudget", "continuous", "onLeave"] as const;

/** JSON with sorted keys, for comparing a given field with the stored one. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The stored value of a fixed field, as the update input would give it. */
function storedValue(row: DeploymentRow, field: (typeof FIXED_WHILE_RUNNING)[number]): unknown {
  switch (field) {
    case "target":
      return row.labelSelector ? { labelSelector: row.labelSelector } : { deviceIds: [...row.targetDeviceIds].sort() };
    case "startAt":
      return row.startAt?.toISOString() ?? null;
    default:
      return row[field];
  }
}

function givenValue(input: UpdateDeploymentInput, field: (typeof FIXED_WHILE_RUNNING)[number]): unknown {
  if (field === "target" && input.target?.deviceIds) return { deviceIds: [...new Set(input.target.deviceIds)].sort() };
  if (field === "startAt" && input.startAt) return new Date(input.startAt).toISOString();
  return input[field];
}

/**
 * 409 naming the first field a running deployment cannot change (a value equal to the stored
 * one is no change), or naming the rollout state when a staged rollout is still in flight.
 */
export function assertUpgradable(row: DeploymentRow, input: UpdateDeploymentInput, changesRevision: boolean): void {
  for (const field of FIXED_WHILE_RUNNING) {
    if (input[field] === undefined) continue;
    if (canonical(givenValue(input, field)) !== canonical(storedValue(row, field))) {
      throw conflict(
        `${field}: cannot change while the deployment is running; only version, profileId and parameters (an update rollout), name and description change. ` +
          "Stop the deployment to change its target, strategy or rollout options",
      );
    }
  }
  if (!changesRevision) return;
  const staged = (row.strategy as Strategy).type === "staged";
  if (staged && !TERMINAL_ROLLOUT_STATES.includes(row.rolloutState as RolloutState)) {
    throw conflict(
      `Cannot upgrade the deployment while its rollout is ${row.rolloutState}; wait until it completes, or abort it first ` +
        "(devices it reached keep their version, the others are given the new one by the update rollout)",
    );
  }
}

/**
 * Moves the deployment's devices, batches and version history to a new predecessor row holding
 * the old revision, and leaves the deployment with no device entries (it is planned again).
 * Entries that were never dispatched have nothing to keep: they are cancelled in the predecessor.
 */
export async function moveToPredecessor(db: DbTx, row: DeploymentRow, newVersion: string): Promise<string> {
  const stamp = new Date().toISOString().replace(/[-:]/g, "").slice(0, 15);
  const suffix = ` @${row.version} before ${newVersion} ${stamp}-${randomBytes(2).toString("hex")}`;
  const predecessor = await db.deployment.create({
    data: {
      organizationId: row.organizationId,
      name: row.name.slice(0, Math.max(1, 200 - suffix.length)) + suffix,
      description: `${row.name} ${row.version}, kept on the devices its upgrade to ${newVersion} has not reached yet`,
      applicationId: row.applicationId,
      applicationVersionId: row.applicationVersionId,
      version: row.version,
      profileId: row.profileId,
      parameters: row.parameters as Prisma.InputJsonValue,
      secretParameters: row.secretParameters,
      secretParameterNames: row.secretParameterNames,
      labelSelector: row.labelSelector ?? Prisma.DbNull,
      targetDeviceIds: row.targetDeviceIds,
      // it dispatches nothing: its devices only leave it
      strategy: { type: "all-at-once" },
      retry: row.retry ?? Prisma.DbNull,
      maintenanceWindows: row.maintenanceWindows ?? Prisma.DbNull,
      continuous: false,
      onLeave: row.onLeave,
      status: "running",
      rolloutState: "completed",
      rolloutReason: `kept on the devices the upgrade of ${row.name} to ${newVersion} has not reached yet`,
      startedAt: row.startedAt,
      completedAt: new Date(),
      createdById: row.createdById,
      upgradedToId: row.id,
    },
  });
  await db.$executeRaw`UPDATE "DeploymentDevice" SET "deploymentId" = ${predecessor.id}::uuid WHERE "deploymentId" = ${row.id}::uuid`;
  await db.$executeRaw`UPDATE "DeploymentBatch" SET "deploymentId" = ${predecessor.id}::uuid WHERE "deploymentId" = ${row.id}::uuid`;
  // The history keeps naming the deployment (deploymentName); its id now names the row holding
  // the revision that ran, so a rollback to it finds that revision's parameters.
  await db.$executeRaw`UPDATE "DeviceVersionHistory" SET "deploymentId" = ${predecessor.id}::uuid WHERE "deploymentId" = ${row.id}::uuid`;
  await db.$executeRaw`
    UPDATE "DeploymentDevice" SET "state" = 'cancelled', "reason" = 'never dispatched before the upgrade to ' || ${newVersion}, "stateChangedAt" = ${UTC_NOW}
     WHERE "deploymentId" = ${predecessor.id}::uuid AND "state" = 'pending' AND "desiredAction" IS NULL`;
  return predecessor.id;
}

/**
 * Ends the running predecessors of a deployment whose devices all left them (superseded by
 * the update, removed): stopped, with the reason. One statement; cheap when there are none.
 */
export async function endPredecessors(db: DbTx, deployment: { id: string; organizationId: string }, events: DeploymentEvents): Promise<void> {
  const ended = await db.$queryRaw<Array<{ id: string }>>`
    UPDATE "Deployment" p
       SET "status" = 'stopped', "completedAt" = now(), "updatedAt" = now(),
           "rolloutReason" = 'every device left it: upgraded to ' || x."version" || ' by deployment ' || x."name"
      FROM "Deployment" x
     WHERE p."upgradedToId" = ${deployment.id}::uuid AND x."id" = ${deployment.id}::uuid AND p."status" = 'running'
       AND NOT EXISTS (SELECT 1 FROM "DeploymentDevice" e WHERE e."deploymentId" = p."id" AND e."desiredAction" IS NOT NULL)
    RETURNING p."id"::text AS "id"`;
  for (const p of ended) events.statusChanged(deployment.organizationId, p.id, "running", "stopped");
}

/**
 * An aborted update rollout: the devices it told to install and that have not started yet
 * (about to be cancelled) go back to their latest predecessor entry (in the state their
 * version history last recorded for it), and that predecessor runs again. When the abort is
 * part of a stop or delete (`removing`), those devices still run the old version: their
 * predecessor entry asks them to remove it, and the predecessor is stopping (deleting) too.
 *
 * The predecessor entry is the one the update superseded, or the one a device brought up again
 * itself after the update failed there (`running` with no desired action, ROLLED_BACK_TO) while
 * its retry of the update, which the abort now cancels, had not started: the device runs that
 * version, and is told so again (the entry stays `running`), as a device the update never reached.
 */
export async function restorePredecessors(
  db: DbTx, deployment: { id: string; organizationId: string }, events: DeploymentEvents, removing: "stopping" | "deleting" | null = null,
): Promise<void> {
  const statuses = removing ? ["running", "stopped", "stopping", "deleting"] : ["running", "stopped"];
  const reason = removing
    ? `deployment ${removing === "stopping" ? "stopped" : "deleted"} before this device started the update: it removes the version it runs`
    : "the update rollout was aborted before this device started it: it keeps this version";
  const reopened = await db.$queryRaw<Array<{ id: string; from: string; to: string }>>`
    WITH undone AS (
      SELECT DISTINCT ON (x."deviceId") x."deviceId", p."deploymentId"
        FROM "DeploymentDevice" x
        JOIN "DeploymentDevice" p ON p."deviceId" = x."deviceId"
                                 AND (p."state" = 'superseded' OR (p."state" = 'running' AND p."desiredAction" IS NULL AND p."reason" LIKE ${ROLLED_BACK_TO + "%"}))
        JOIN "Deployment" pd ON pd."id" = p."deploymentId" AND pd."upgradedToId" = ${deployment.id}::uuid
                            AND pd."status" IN (SELECT jsonb_array_elements_text(${JSON.stringify(statuses)}::jsonb))
       WHERE x."deploymentId" = ${deployment.id}::uuid AND x."state" = 'pending' AND x."desiredAction" = 'install'
       ORDER BY x."deviceId", pd."createdAt" DESC
    ), restored AS (
      UPDATE "DeploymentDevice" p
         SET "desiredAction" = ${removing ? "remove" : "install"}, "stateChangedAt" = ${UTC_NOW}, "reason" = ${reason},
             -- a release the device rolled back to runs: its entry says so already
             "state" = CASE WHEN p."state" = 'running' THEN 'running' ELSE
                       COALESCE((SELECT h."outcome" FROM "DeviceVersionHistory" h
                                  WHERE h."deviceId" = p."deviceId" AND h."deploymentId" = p."deploymentId" AND h."attempt" = p."attempt"), 'pending') END
        FROM undone u
       WHERE p."deviceId" = u."deviceId" AND p."deploymentId" = u."deploymentId"
      RETURNING p."deploymentId"
    )
    UPDATE "Deployment" pd
       SET "status" = ${removing ?? "running"}, "updatedAt" = now(),
           "completedAt" = CASE WHEN ${removing}::text IS NULL THEN NULL ELSE pd."completedAt" END,
           "removalRequestedAt" = CASE WHEN ${removing}::text IS NULL THEN pd."removalRequestedAt" ELSE COALESCE(pd."removalRequestedAt", now()) END
      FROM (SELECT DISTINCT "deploymentId" FROM restored) r JOIN "Deployment" before ON before."id" = r."deploymentId"
     WHERE pd."id" = r."deploymentId"
    RETURNING pd."id"::text AS "id", before."status" AS "from", pd."status" AS "to"`;
  for (const p of reopened) events.statusChanged(deployment.organizationId, p.id, p.from, p.to);
}
