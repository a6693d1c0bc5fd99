// The rollout clock: a schedule (one run per period across processes) that judges every
// deployment in flight again. Agent reports judge a deployment as they arrive; this catches
// what reports cannot: batch timeouts, and any judgement a crash interrupted.
import type { JobDefinition, ScheduleDefinition } from "../../jobs/types.js";
import type { Services } from "../../services.js";
import { DeploymentEvents } from "./events.js";
import { evaluateDeployment } from "./service.js";
import { dispatchDueRetries } from "./dispatch.js";

export const ROLLOUT_TICK_MS = 10_000;

/** Judges every deployment in flight (after handing out the retries that are due); returns how many were looked at. */
export async function judgeDeploymentsInFlight(services: Pick<Services, "prisma" | "logger"> & object): Promise<number> {
  const retried = await dispatchDueRetries(services.prisma);
  const inFlight = await services.prisma.deployment.findMany({
    where: {
      OR: [
        { status: "running", rolloutState: { in: ["canary", "in_progress"] } },
        { status: { in: ["stopping", "deleting"] } },
      ],
    },
    select: { id: true, organizationId: true },
    orderBy: { updatedAt: "asc" },
    take: 1000,
  });
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

export function deploymentJobs(): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const tick: ScheduleDefinition = {
    name: "deployments.rollout-tick",
    everyMs: ROLLOUT_TICK_MS,
    jitterMs: 1000,
    timeoutMs: 120_000,
    run: async ({ services }) => {
      await judgeDeploymentsInFlight(services);
    },
  };
  return { definitions: [], schedules: [tick] };
}
