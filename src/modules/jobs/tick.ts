// The jobs' clock: one run per period across processes judges every live job again. Device
// reports judge their job as they arrive (device-actions/agent-exchange.ts); this catches what
// reports cannot: a job's expiry, and any judgement a crash interrupted.
import type { ScheduleDefinition } from "../../jobs/types.js";
import type { Services } from "../../services.js";
import { judgeJobById } from "./service.js";

export const JOBS_TICK_MS = 10_000;

/** Judges the jobs in flight and the paused ones past their expiry; returns how many were looked at. */
export async function judgeLiveJobs(services: Pick<Services, "prisma" | "logger"> & object, now = new Date()): Promise<number> {
  const live = await services.prisma.actionJob.findMany({
    where: { OR: [{ state: "in_progress" }, { state: "paused", expiresAt: { lte: now } }] },
    select: { id: true, organizationId: true }, orderBy: { updatedAt: "asc" }, take: 1000,
  });
  // one short transaction per job: each needs its own row lock, and one failing must not hold up the others
  for (const job of live) {
    try {
      await services.prisma.$transaction((tx) => judgeJobById(tx, job.organizationId, job.id));
    } catch (err) {
      services.logger.warn({ err: (err as Error).message, jobId: job.id }, "judging a job failed; retried at the next tick");
    }
  }
  return live.length;
}

export function actionJobSchedules(): ScheduleDefinition[] {
  return [{ name: "jobs.tick", everyMs: JOBS_TICK_MS, jitterMs: 1000, timeoutMs: 60_000, run: async ({ services }) => void (await judgeLiveJobs(services)) }];
}
