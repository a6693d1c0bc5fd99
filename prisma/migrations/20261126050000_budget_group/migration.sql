-- The disruption budget's group of each entry, stored once (dispatch.ts, admitWithinBudget): a
-- device report then counts and admits within its own group through this index instead of
-- computing every entry's group from its device's labels on each report.
-- AlterTable
ALTER TABLE "DeploymentDevice" ADD COLUMN "budgetGroup" TEXT;

-- CreateIndex
CREATE INDEX "DeploymentDevice_deploymentId_budgetGroup_idx" ON "DeploymentDevice"("deploymentId", "budgetGroup");
