// The order a staged rollout draws its devices in, and the batch each rank falls into: shared
// by deployments (deployments/targets.ts planRollout) and jobs (jobs/service.ts), so that both
// put the devices that are offline now last (a canary never waits on a device that is not
// there) and otherwise pick them in a stable pseudo-random order per rollout (a canary is not
// always the oldest devices). SQL fragments only: each caller ranks its own table in one
// statement, whatever the fleet size.
import { Prisma } from "../../generated/prisma/client.js";
import { deviceOffline } from "../devices/sql.js";
import type { PlannedBatch } from "../deployments/batch-plan.js";

/** `ORDER BY` of the ranking: offline devices last, then md5(device id, seed) (the rollout's id). */
export function rolloutOrder(deviceAlias: string, deviceId: Prisma.Sql, seed: string): Prisma.Sql {
  return Prisma.sql`${deviceOffline(deviceAlias)}, md5(${deviceId}::text || ${seed}::text)`;
}

/** The batch index of a device ranked `rank` (1-based) under `plan`: batch i holds the ranks after the first i boundaries. */
export function batchIndexOfRank(plan: readonly PlannedBatch[], rank: Prisma.Sql): Prisma.Sql {
  const boundaries: number[] = [];
  plan.reduce((sum, batch) => (boundaries.push(sum + batch.size), sum + batch.size), 0);
  return Prisma.sql`(SELECT count(*) FROM jsonb_array_elements_text(${JSON.stringify(boundaries)}::jsonb) b WHERE b::int < ${rank})::int`;
}
