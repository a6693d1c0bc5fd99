-- CreateIndex
CREATE INDEX "Deployment_continuous_status_idx" ON "Deployment"("continuous", "status");
