-- DropIndex
DROP INDEX "DeviceVersionHistory_deviceId_deploymentId_key";

-- AlterTable
ALTER TABLE "Deployment" ADD COLUMN     "continuous" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN     "disruptionBudget" JSONB,
ADD COLUMN     "maintenanceWindows" JSONB,
ADD COLUMN     "onLeave" TEXT NOT NULL DEFAULT 'remove',
ADD COLUMN     "retry" JSONB,
ADD COLUMN     "startAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "DeploymentDevice" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1,
ADD COLUMN     "retryAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "DeviceVersionHistory" ADD COLUMN     "attempt" INTEGER NOT NULL DEFAULT 1;

-- CreateIndex
CREATE INDEX "Deployment_status_startAt_idx" ON "Deployment"("status", "startAt");

-- CreateIndex
CREATE INDEX "DeploymentDevice_retryAt_idx" ON "DeploymentDevice"("retryAt");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceVersionHistory_deviceId_deploymentId_attempt_key" ON "DeviceVersionHistory"("deviceId", "deploymentId", "attempt");
