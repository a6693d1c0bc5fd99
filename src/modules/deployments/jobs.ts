// The rollout clock: a schedule (one run per period across processes) that starts the
// scheduled drafts whose time has come and judges every deployment in flight again. Agent reports judge a deployment as they arrive; this catches
// what reports cannot: batch timeouts, and any judgement a crash interrupted.
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import type { Services } from "../../services.js";
import { DeploymentEvents } from "./events.js";
import { evaluateDeployment, startDeployment } from "./service.js";
import { lockDeployment } from "./store.js";
import { dispatchDueRetries } from "./dispatch.js";
import { writeAudit } from "../../trpc/audit.js";
import type { DbTx } from "../../db/client.js";
import { UTC_NOW } from "../devices/sql.js";

export const ROLLOUT_TICK_MS = 10_000;

/**
 * The deployments a tick judges: rollouts in flight (batch timeouts), removals in progress,
 * and, where something waits that only a judgement hands out, budgeted rollouts awaiting
 * approval or completed with held devices or due retries, and completed staged continuous
 * rollouts with late joiners to gather into their batch. One statement; the EXISTS probes use
 * the (deploymentId, ...) indexes of DeploymentDevice.
 */
async function deploymentsToJudge(db: DbTx): Promise<Array<{ id: string; organizationId: string }>> {
  return db.$queryRaw`
    SELECT d."id"::text AS "id", d."organizationId"::text AS "organizationId" FROM "Deployment" d
     WHERE d."status" IN ('stopping', 'deleting')
        OR (d."status" = 'running' AND d."rolloutState" IN ('canary', 'in_progress'))
        OR (d."status" = 'running' AND d."disruptionBudget" IS NOT NULL AND d."rolloutState" IN ('awaiting_approval', 'completed')
            AND EXISTS (SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id"
                          AND ((x."heldForBudget" AND x."state" = 'pending') OR (x."state" = 'failed' AND x."retryAt" <= ${UTC_NOW}))))
        OR (d."status" = 'running' AND d."continuous" AND d."rolloutState" = 'completed' AND d."strategy" ->> 'type' = 'staged'
            AND EXISTS (SELECT 1 FROM "DeploymentDevice" x WHERE x."deploymentId" = d."id" AND x."batchIndex" IS NULL
                          AND x."state" = 'pending' AND x."desiredAction" IS NULL AND x."lateJoiner"))
     ORDER BY d."updatedAt" LIMIT 1000`;
}

/** Judges every deployment in flight (after handing out the retries that are due); returns how many were looked at. */
export async function judgeDeploymentsInFlight(services: Pick<Services, "prisma" | "logger"> & object): Promise<number> {
  const retried = await dispatchDueRetries(services.prisma);
  const inFlight = await deploymentsToJudge(services.prisma);
  const events = new DeploymentEvents();
  for (const r of retried) events.progress(r.organizationId, r.deploymentId, r.deviceId, "pending", `automatic retry: attempt ${r.attempt}`);
  // One short transaction per deployment: each needs its own row lock, and one failing must not hold up the others.
  for (const deployment of inFlight) {
    try {
      await services.prisma.$transaction((tx) => evaluateDeployment(tx, deployment.organizationId, deployment.id, events));
    } catch (err) {
      services.logger.warn({ err: (err as Error).message, deploymentId: deployment.id }, "judging a deployment failed; retried at the next tick");
    }
  }
  events.publishTo(services);
  return inFlight.length;
}

/**
 * Starts the drafts whose `startAt` has come, each in its own transaction under its row lock:
 * the status is checked again under the lock, so of several processes (or a tick and an
 * operator) exactly one starts it, and a crash before the commit leaves it a due draft that
 * the next tick starts. A start that is refused (no eligible device) clears `startAt` and
 * records why, instead of being tried every tick. Returns the ids started.
 */
export async function startScheduledDeployments(services: Pick<Services, "prisma" | "logger"> & object, now = new Date()): Promise<string[]> {
  const due = await services.prisma.deployment.findMany({
    where: { status: "draft", startAt: { lte: now } },
    select: { id: true, organizationId: true },
    orderBy: { startAt: "asc" },
    take: 100,
  });
  const started: string[] = [];
  const events = new DeploymentEvents();
  for (const { id, organizationId } of due) {
    try {
      const done = await services.prisma.$transaction(async (tx) => {
        const row = await lockDeployment(tx, organizationId, id);
        if (row.status !== "draft" || !row.startAt || row.startAt > now) return false;
        const started = await startDeployment(tx, organizationId, id, events);
        // the same action an operator's start records, by the system, in the start's transaction
        await writeAudit(tx, null, null, {
          action: "deployments.start", outcome: "success", organizationId, entityType: "deployment", entityId: id,
          changes: { startAt: row.startAt.toISOString(), rolloutState: started.rolloutState },
          message: `scheduled start of ${row.name} (startAt ${row.startAt.toISOString()})`,
        });
        return true;
      });
      if (done) started.push(id);
    } catch (err) {
      const reason = `scheduled start failed: ${(err as Error).message}`;
      services.logger.warn({ err: (err as Error).message, deploymentId: id }, "a scheduled start failed; the deployment stays a draft");
      await services.prisma.$transaction(async (tx) => {
        const cleared = await tx.deployment.updateMany({ where: { id, status: "draft", startAt: { lte: now } }, data: { startAt: null, rolloutReason: reason } });
        if (cleared.count) {
          await writeAudit(tx, null, null, { action: "deployments.start", outcome: "failure", organizationId, entityType: "deployment", entityId: id, message: reason });
        }
      });
    }
  }
  events.publishTo(services);
  return started;
}

export function deploymentJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const tick: ScheduleDefinition = {
    name: "deployments.rollout-tick",
    everyMs: ROLLOUT_TICK_MS,
    jitterMs: 1000,
    timeoutMs: 120_000,
    run: async ({ services }) => {
      await startScheduledDeployments(services);
      await judgeDeploymentsInFlight(services);
    },
  };
  return { definitions: [], schedules: [tick] };
}
