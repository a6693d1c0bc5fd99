// What the catalog needs to know about deployments: which ones use an application or one of
// its versions. Deployments are not built yet, so nothing uses anything; the deployments
// capability replaces these two queries (and delete package starts refusing with 409).
import type { DbTx } from "../../db/client.js";
import type { DeploymentSummary } from "./schemas.js";

export interface DeploymentFilter {
  organizationId: string;
  applicationId: string;
  /** one version only; every version of the application when absent */
  versionId?: string;
}

export async function countDeploymentsUsing(_db: DbTx, _filter: DeploymentFilter): Promise<number> {
  return 0;
}

export async function listDeploymentsUsing(
  _db: DbTx,
  _filter: DeploymentFilter,
  _page: { limit: number; offset: number },
): Promise<{ items: DeploymentSummary[]; total: number }> {
  return { items: [], total: 0 };
}
