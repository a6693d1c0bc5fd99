// A job's progress and the judgement that moves it, under the job's row lock. The verdict on
// the batch in flight is the staged rollout's (deployments/rollout-machine.ts judgeBatch):
// the failure threshold first (failed and expired devices; it pauses the job), then the
// success threshold (the next batch is dispatched). Jobs advance on their own: a device
// action has no approval gate. A batch whose every device ended below its success target
// pauses the job too, naming that rule; a resume accepts the batch as it is.
import type { DbTx } from "../../db/client.js";
import { notFound } from "../../trpc/errors.js";
import { batchLabel, judgeBatch, successTarget } from "../deployments/rollout-machine.js";
import type { PlannedBatch } from "../deployments/batch-plan.js";
import { dispatchJobBatch } from "./targets.js";
import { admitJobWithinBudget } from "./budget.js";
import { closeOpenOnRelease, releaseConfiguration } from "./configuration.js";
import { CONFIGURATION_KIND } from "../device-actions/kinds.js";
import { JOB_DEVICE_STATES, type JobCounts, type JobState, type JobStrategy } from "./schemas.js";

export type JobRow = NonNullable<Awaited<ReturnType<typeof findJobRow>>>;

export function findJobRow(db: DbTx, organizationId: string, id: string) {
  return db.actionJob.findFirst({ where: { id, organizationId } });
}

/** Locks the job's row for the rest of the transaction (every move and judgement starts here); another tenant's job is a 404. */
export async function lockJob(db: DbTx, organizationId: string, id: string): Promise<JobRow> {
  const locked = await db.$queryRaw<Array<{ id: string }>>`
    SELECT "id" FROM "ActionJob" WHERE "id" = ${id}::uuid AND "organizationId" = ${organizationId}::uuid FOR UPDATE`;
  if (!locked.length) throw notFound("Job");
  return db.actionJob.findUniqueOrThrow({ where: { id } });
}

const OPEN = ["queued", "waiting_for_budget", "waiting_for_window", "pending", "delivered", "running", "deferred"];

export const emptyCounts = (): JobCounts => Object.fromEntries(JOB_DEVICE_STATES.map((s) => [s, 0])) as JobCounts;

type Counted = { total: JobCounts; perBatch: Map<number, JobCounts> };

/**
 * Jobs' devices by batch and state, in one grouped query over the (jobId, batchIndex, state)
 * index; a device held by the budget or by its window is counted as waiting for it.
 */
export async function countsOfJobs(db: DbTx, jobIds: string[]): Promise<Map<string, Counted>> {
  const rows = await db.$queryRaw<Array<{ jobId: string; batchIndex: number | null; state: string; n: number }>>`
    SELECT "jobId"::text AS "jobId", "batchIndex",
           CASE WHEN "state" = 'queued' AND "heldForBudget" THEN 'waiting_for_budget'
                WHEN "state" = 'pending' AND "windowOpensAt" IS NOT NULL THEN 'waiting_for_window'
                ELSE "state" END AS "state",
           count(*)::int AS "n" FROM "DeviceAction"
     WHERE "jobId" IN (SELECT jsonb_array_elements_text(${JSON.stringify(jobIds)}::jsonb)::uuid) GROUP BY 1, 2, 3`;
  const result = new Map<string, Counted>(jobIds.map((id) => [id, { total: emptyCounts(), perBatch: new Map() }]));
  for (const r of rows) {
    const { total, perBatch } = result.get(r.jobId)!;
    const state = r.state as keyof JobCounts;
    total[state] += r.n;
    if (r.batchIndex === null) continue;
    const entry = perBatch.get(r.batchIndex) ?? emptyCounts();
    entry[state] += r.n;
    perBatch.set(r.batchIndex, entry);
  }
  return result;
}

export async function jobCounts(db: DbTx, jobId: string): Promise<Counted> {
  return (await countsOfJobs(db, [jobId])).get(jobId)!;
}

const openIn = (c: JobCounts) => OPEN.reduce((sum, s) => sum + c[s as keyof JobCounts], 0);

type Change = { state?: JobState; stateReason?: string | null; currentBatch?: number | null; failureAccepted?: boolean; completedAt?: Date | null };

async function move(db: DbTx, job: JobRow, change: Change): Promise<JobRow> {
  if (change.state === "completed") await releaseConfiguration(db, job);
  return db.actionJob.update({ where: { id: job.id }, data: change });
}

/** Devices of the job that have not run it by its expiry end as expired (set-based). */
async function expireOpenActions(db: DbTx, jobId: string): Promise<void> {
  await db.$executeRaw`
    UPDATE "DeviceAction" SET "state" = 'expired', "finishedAt" = (now() AT TIME ZONE 'UTC'), "updatedAt" = (now() AT TIME ZONE 'UTC'),
           "message" = CASE WHEN "state" = 'queued' AND "heldForBudget" THEN 'the job expired while the device waited for a place in its disruption budget'
                            WHEN "state" = 'queued' THEN 'the job expired before its batch was dispatched'
                            WHEN "state" = 'pending' AND "windowOpensAt" IS NOT NULL THEN 'the job expired while the device waited for its maintenance window'
                            ELSE 'expired before the device ran it' END
     WHERE "jobId" = ${jobId}::uuid AND "state" IN ('queued', 'pending', 'delivered', 'deferred')`;
}

/**
 * Judges a locked job and takes the move the verdict decides. In flight: the batch reaching its
 * success target dispatches the next (and is judged again at once: an empty next batch cannot
 * be, but a resumed one may already be done); the failure threshold, or a batch ended below its
 * target, pauses it; the last batch done with no device left open completes it. Past its
 * expiry a live job ends expired (its open devices expired) unless every device was done.
 */
export async function judgeJob(db: DbTx, job: JobRow, now = new Date()): Promise<JobRow> {
  if (job.state !== "in_progress" && job.state !== "paused") return job;
  const plan = job.batches as unknown as PlannedBatch[];
  const strategy = job.strategy as JobStrategy;
  let { total, perBatch } = await jobCounts(db, job.id);
  if (job.expiresAt <= now) {
    // done only when no device is left and none expired: a device's action may have been expired
    // (its own expiry) before this tick, and a job whose devices never ran it did not complete
    if (openIn(total) === 0 && total.expired === 0 && job.currentBatch === plan.length - 1) return move(db, job, { state: "completed", completedAt: now, stateReason: "every device ran it or was skipped" });
    await expireOpenActions(db, job.id);
    return move(db, job, { state: "expired", completedAt: now, stateReason: "the job expired: devices that had not run it by then never will" });
  }
  if (job.state !== "in_progress" || job.currentBatch === null) return job;
  let admitted = !job.disruptionBudget;
  for (;;) {
    const index: number = job.currentBatch!;
    const batch = plan[index];
    const counts = perBatch.get(index) ?? emptyCounts();
    const done = openIn(counts) === 0;
    const verdict = judgeBatch(
      { index, size: batch.size, running: counts.succeeded, failed: counts.failed + counts.expired, failureAccepted: job.failureAccepted, deadlinePassed: false },
      strategy,
    );
    if (verdict.kind === "failure_threshold") return move(db, job, { state: "paused", stateReason: verdict.reason.replace(" paused:", ": job paused,") });
    // places freed by devices that are done go to the devices the budget holds (not once the job pauses)
    if (!admitted) {
      admitted = true;
      if (await admitJobWithinBudget(db, job)) {
        ({ total, perBatch } = await jobCounts(db, job.id));
        continue;
      }
    }
    const accepted = verdict.kind === "succeeded" || (done && job.failureAccepted);
    if (!accepted && done) {
      const target = successTarget(batch.size, strategy.successThreshold);
      return move(db, job, { state: "paused", stateReason: `${batchLabel(index)}: job paused, its devices ended below its success target (${target} of ${batch.size} succeeded needed, success threshold ${strategy.successThreshold}%)` });
    }
    if (!accepted) return job;
    if (index === plan.length - 1) {
      if (openIn(total) === 0) return move(db, job, { state: "completed", completedAt: now, stateReason: "every device ran it or was skipped" });
      // a configuration's rollout needs no device's word to end: released, the revision reaches
      // the devices still open (offline ones too) with their next heartbeat
      if (job.kind !== CONFIGURATION_KIND) return job;
      const closed = await closeOpenOnRelease(db, job.id);
      return move(db, job, { state: "completed", completedAt: now, stateReason: `${batchLabel(index)} reached its success target; revision ${job.configRevision} released (${closed} devices not done yet get it with their next heartbeat)` });
    }
    await dispatchJobBatch(db, job, index + 1);
    job = await move(db, job, { currentBatch: index + 1, failureAccepted: false, stateReason: `${batchLabel(index)} reached its success target; ${batchLabel(index + 1)} dispatched` });
    ({ total, perBatch } = await jobCounts(db, job.id));
  }
}
