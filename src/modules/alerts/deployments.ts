// The "deployment failed" condition needs deployments, which do not exist yet. Rules with
// this condition are accepted and evaluated against this function; until deployments land it
// finds no device.
//
// DEPLOYMENTS: once the deployment capability stores per-device deployment state, answer
// here, in one query, the devices of the scope whose latest state of any deployment is
// `failed`, e.g.
//   WITH scope AS (...) SELECT dd."deviceId", NULL::float8 AS "value" FROM "DeploymentDevice" dd
//   JOIN scope ON scope."id" = dd."deviceId" WHERE dd."state" = 'failed' GROUP BY dd."deviceId"
import type { DbTx } from "../../db/client.js";
import type { Match, RuleScope } from "./conditions.js";

export async function failedDeploymentDevices(_db: DbTx, _scope: RuleScope): Promise<Match[]> {
  return [];
}
