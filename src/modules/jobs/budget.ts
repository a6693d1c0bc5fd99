// A job's disruption budget: the rollout engine's (rollout-engine/budget-admission.ts) fed
// with the job's DeviceAction rows. A device of a dispatched batch waits `queued` with
// heldForBudget (the heartbeat does not see it) until its group has a place; it holds one from
// the moment it is admitted (pending) until its action is done, deferral by a lease and a
// wait for its maintenance window included: the budget counts devices the job may disrupt.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { admittedMembers } from "../rollout-engine/budget-admission.js";
import type { DisruptionBudget } from "../rollout-engine/options.js";

const UTC_NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);

export interface BudgetedJob {
  id: string;
  disruptionBudget: unknown;
}

/** The job's devices as the budget reads them: busy once handed over (or about to be), waiting while held. */
function members(jobId: string): Prisma.Sql {
  return Prisma.sql`
    SELECT a."id"::text AS "ref", a."budgetGroup" AS "group",
           a."state" IN ('pending', 'delivered', 'running', 'deferred') AS "busy",
           (a."state" = 'queued' AND a."heldForBudget") AS "waiting",
           md5(a."deviceId"::text || ${jobId}::text) AS "rank"
      FROM "DeviceAction" a
     WHERE a."jobId" = ${jobId}::uuid AND a."state" NOT IN ('skipped', 'cancelled')`;
}

/** Admits as many held devices as their groups have places for (they become pending); under the job's row lock. */
export async function admitJobWithinBudget(db: DbTx, job: BudgetedJob): Promise<number> {
  const admitted = await admittedMembers(db, members(job.id), job.disruptionBudget as DisruptionBudget);
  if (!admitted) return 0;
  return db.$executeRaw`
    UPDATE "DeviceAction" a SET "state" = 'pending', "heldForBudget" = false, "updatedAt" = ${UTC_NOW}
      FROM (${admitted}) r
     WHERE a."id" = r."ref"::uuid AND a."jobId" = ${job.id}::uuid AND a."state" = 'queued'`;
}
