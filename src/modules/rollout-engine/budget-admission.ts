// The disruption budget in SQL, for any rollout: the caller describes its devices as a
// "members" relation, and this module counts each group's load and picks the devices to admit
// in set-based statements (no query per device). Deployments feed it their DeploymentDevice
// rows (deployments/dispatch.ts), jobs their DeviceAction rows (jobs/budget.ts); each then
// applies the admission to its own table in one statement, under its rollout's row lock.
//
// A members relation is a SELECT with the columns
//   "ref"     text     the row to admit (the caller's key: a device id, an action id)
//   "group"   text     the device's group (budgetGroupKey below, stored when first grouped)
//   "busy"    boolean  disrupted now: counts against its group's limit
//   "waiting" boolean  held back by the budget, waiting for a place
//   "rank"    text     the order waiting devices are admitted in (stable pseudo-random per rollout)
// over the devices that take part in the rollout (not skipped, cancelled or superseded).
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { admissions, type GroupLoad } from "./budget.js";
import type { DisruptionBudget } from "./options.js";

/** A device's group under the budget: its values of the groupBy labels (of `labels`, a jsonb column), as one text. */
export function budgetGroupKey(groupBy: string[], labels: Prisma.Sql): Prisma.Sql {
  return Prisma.sql`(SELECT COALESCE(jsonb_agg(${labels} -> g.k ORDER BY g.o), '[]'::jsonb)::text
                       FROM jsonb_array_elements_text(${JSON.stringify(groupBy)}::jsonb) WITH ORDINALITY AS g(k, o))`;
}

/** Each group's size, busy and waiting devices: one grouped query. */
export function readGroupLoads(db: DbTx, members: Prisma.Sql): Promise<GroupLoad[]> {
  return db.$queryRaw<GroupLoad[]>`
    SELECT m."group" AS "key", count(*)::int AS "size",
           count(*) FILTER (WHERE m."busy")::int AS "busy", count(*) FILTER (WHERE m."waiting")::int AS "waiting"
      FROM (${members}) m
     GROUP BY 1`;
}

/**
 * The members the budget admits now (budget.ts admissions over the groups' loads), as a SELECT
 * of their "ref" for the caller's UPDATE ... FROM; null when no group has a free place.
 * Must run under the rollout's row lock: the loads stay true until the caller writes.
 */
export async function admittedMembers(db: DbTx, members: Prisma.Sql, budget: DisruptionBudget): Promise<Prisma.Sql | null> {
  const quotas = admissions(await readGroupLoads(db, members), budget);
  if (!quotas.size) return null;
  return Prisma.sql`
    SELECT r."ref" FROM (
      SELECT m."ref", q."n", row_number() OVER (PARTITION BY m."group" ORDER BY m."rank") AS "place"
        FROM (${members}) m
        JOIN jsonb_to_recordset(${JSON.stringify([...quotas].map(([key, n]) => ({ key, n })))}::jsonb) AS q("key" text, "n" int) ON q."key" = m."group"
       WHERE m."waiting"
    ) r WHERE r."place" <= r."n"`;
}
