// The "deployment failed" condition: devices of the rule's scope that report `failed` for a
// deployment they are still told to run (a device that recovered, was rolled back or had the
// deployment removed no longer matches, so the alert resolves). The value is how many.
// A device waiting to retry (retryAt set) is not failed yet: like the rollout's thresholds,
// the alert counts a device only when its last attempt failed (docs/deployments.md, retries).
import type { DbTx } from "../../db/client.js";
import { scopeCte, type Match, type RuleScope } from "./conditions.js";

export async function failedDeploymentDevices(db: DbTx, scope: RuleScope): Promise<Match[]> {
  return db.$queryRaw<Match[]>`
    WITH ${scopeCte(scope)}
    SELECT dd."deviceId"::text AS "subjectId", count(*)::float8 AS "value"
      FROM "DeploymentDevice" dd JOIN scope ON scope."id" = dd."deviceId"
     WHERE dd."state" = 'failed' AND dd."desiredAction" = 'install' AND dd."retryAt" IS NULL
     GROUP BY dd."deviceId"`;
}
