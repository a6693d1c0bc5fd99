// Reading deployments: the row lock every move starts with, per-device counts in one
// grouped query for any number of deployments, and the DTO.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { notFound } from "../../trpc/errors.js";
import { ownerMark } from "../../lib/owner-mark.js";
import { iso, isoNullable } from "../devices/schemas.js";
import { visibleParameters } from "./parameters.js";
import { emptyProgress, type DeploymentDto, type DeploymentStatus, type ProgressCounts } from "./schemas.js";
import type { RolloutState } from "./rollout-machine.js";
import { deploymentState } from "./deployment-state.js";
import type { Strategy } from "./strategy.js";
import type { RetryOptions } from "./options.js";
import type { DisruptionBudget, MaintenanceWindows } from "../rollout-engine/options.js";

type StateOnlyCounts = Omit<ProgressCounts, "total" | "joined" | "left">;

export const deploymentInclude = { application: { select: { name: true } } } satisfies Prisma.DeploymentInclude;
export type DeploymentRow = Prisma.DeploymentGetPayload<{ include: typeof deploymentInclude }>;

/**
 * Locks the deployment's row for the rest of the transaction and reads it: every move and
 * every evaluation of progress starts here, so two of them never decide on the same state.
 * Another organization's deployment is a 404.
 */
export async function lockDeployment(db: DbTx, organizationId: string, id: string): Promise<DeploymentRow> {
  const locked = await db.$queryRaw<Array<{ id: string }>>`
    SELECT "id" FROM "Deployment" WHERE "id" = ${id}::uuid AND "organizationId" = ${organizationId}::uuid FOR UPDATE`;
  if (!locked.length) throw notFound("Deployment");
  return db.deployment.findUniqueOrThrow({ where: { id }, include: deploymentInclude });
}

export async function findDeployment(db: DbTx, organizationId: string, id: string): Promise<DeploymentRow> {
  const row = await db.deployment.findFirst({ where: { id, organizationId }, include: deploymentInclude });
  if (!row) throw notFound("Deployment");
  return row;
}

/**
 * A device's state as the counts show it: failed devices waiting to retry are waiting_to_retry,
 * devices the disruption budget holds back are waiting_for_budget, devices told to download only
 * until their maintenance window opens are waiting_for_window.
 */
export const SERVICE_STATE = Prisma.raw(`CASE WHEN "retryAt" IS NOT NULL THEN 'waiting_to_retry'
  WHEN "heldForBudget" AND "state" = 'pending' THEN 'waiting_for_budget'
  WHEN "windowOpensAt" > (now() AT TIME ZONE 'UTC') AND "desiredAction" = 'install' AND "state" IN ('pending', 'downloading') THEN 'waiting_for_window'
  ELSE "state" END`);

/** Device counts by state for each deployment, in one query (SERVICE_STATE). */
export async function countsByDeployment(db: DbTx, ids: string[]): Promise<Map<string, ProgressCounts>> {
  const result = new Map<string, ProgressCounts>();
  for (const id of ids) result.set(id, emptyProgress());
  if (!ids.length) return result;
  const rows = await db.$queryRaw<Array<{ deploymentId: string; state: keyof StateOnlyCounts; n: number; joined: number; left: number }>>`
    SELECT "deploymentId"::text AS "deploymentId",
           ${SERVICE_STATE} AS "state", count(*)::int AS "n",
           count(*) FILTER (WHERE "lateJoiner")::int AS "joined", count("leftAt")::int AS "left"
      FROM "DeploymentDevice"
     WHERE "deploymentId" IN (SELECT jsonb_array_elements_text(${JSON.stringify(ids)}::jsonb)::uuid)
     GROUP BY 1, 2`;
  for (const row of rows) {
    const counts = result.get(row.deploymentId)!;
    counts[row.state] = row.n;
    counts.total += row.n;
    counts.joined += row.joined;
    counts.left += row.left;
  }
  return result;
}

export function toDeploymentDto(row: DeploymentRow, counts: ProgressCounts): DeploymentDto {
  const secretNames = row.secretParameterNames;
  return {
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    description: row.description,
    applicationId: row.applicationId,
    applicationName: row.application.name,
    applicationVersionId: row.applicationVersionId,
    version: row.version,
    profileId: row.profileId,
    parameters: visibleParameters(row.parameters as Record<string, unknown>, secretNames),
    secretParameterNames: secretNames,
    target: row.labelSelector ? { labelSelector: row.labelSelector as Record<string, string> } : { deviceIds: row.targetDeviceIds },
    strategy: row.strategy as Strategy,
    retry: row.retry as RetryOptions | null,
    startAt: isoNullable(row.startAt),
    maintenanceWindows: row.maintenanceWindows as MaintenanceWindows | null,
    disruptionBudget: row.disruptionBudget as DisruptionBudget | null,
    continuous: row.continuous,
    onLeave: row.onLeave as DeploymentDto["onLeave"],
    status: row.status as DeploymentStatus,
    rolloutState: row.rolloutState as RolloutState,
    state: deploymentState(row),
    rolloutReason: row.rolloutReason,
    progress: counts,
    startedAt: isoNullable(row.startedAt),
    completedAt: isoNullable(row.completedAt),
    removalRequestedAt: isoNullable(row.removalRequestedAt),
    createdById: row.createdById,
    upgradedToId: row.upgradedToId,
    ...ownerMark(row),
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

