-- CreateIndex
CREATE INDEX "DeploymentDevice_deploymentId_desiredAction_idx" ON "DeploymentDevice"("deploymentId", "desiredAction");
