// What the catalog needs to know about deployments: which ones use an application or one of
// its versions (delete package refuses while any does; the per-application and per-version
// deployment lists read from here).
import type { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { DeploymentSummary } from "./schemas.js";

export interface DeploymentFilter {
  organizationId: string;
  applicationId: string;
  /** one version only; every version of the application when absent */
  versionId?: string;
}

function whereOf(filter: DeploymentFilter): Prisma.DeploymentWhereInput {
  return {
    organizationId: filter.organizationId,
    applicationId: filter.applicationId,
    ...(filter.versionId ? { applicationVersionId: filter.versionId } : {}),
  };
}

export async function countDeploymentsUsing(db: DbTx, filter: DeploymentFilter): Promise<number> {
  return db.deployment.count({ where: whereOf(filter) });
}

export async function listDeploymentsUsing(
  db: DbTx,
  filter: DeploymentFilter,
  page: { limit: number; offset: number },
): Promise<{ items: DeploymentSummary[]; total: number }> {
  const where = whereOf(filter);
  const [rows, total] = await Promise.all([
    db.deployment.findMany({
      where,
      select: { id: true, name: true, applicationId: true, applicationVersionId: true, version: true, status: true, createdAt: true },
      orderBy: [{ createdAt: "desc" }, { id: "desc" }],
      take: page.limit,
      skip: page.offset,
    }),
    db.deployment.count({ where }),
  ]);
  return {
    items: rows.map((r) => ({ id: r.id, name: r.name, applicationId: r.applicationId, versionId: r.applicationVersionId, version: r.version, status: r.status, createdAt: r.createdAt.toISOString() })),
    total,
  };
}
