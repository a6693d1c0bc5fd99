-- AlterTable
ALTER TABLE "DeviceAction" ADD COLUMN     "batchIndex" INTEGER,
ADD COLUMN     "jobId" UUID;

-- CreateTable
CREATE TABLE "ActionJob" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "deploymentId" UUID,
    "applicationId" UUID,
    "reason" TEXT,
    "target" JSONB NOT NULL,
    "strategy" JSONB NOT NULL,
    "batches" JSONB NOT NULL DEFAULT '[]',
    "state" TEXT NOT NULL DEFAULT 'in_progress',
    "currentBatch" INTEGER,
    "failureAccepted" BOOLEAN NOT NULL DEFAULT false,
    "stateReason" TEXT,
    "eligible" INTEGER NOT NULL DEFAULT 0,
    "skipped" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "completedAt" TIMESTAMP(3),

    CONSTRAINT "ActionJob_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ActionJob_organizationId_createdAt_idx" ON "ActionJob"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "ActionJob_state_updatedAt_idx" ON "ActionJob"("state", "updatedAt");

-- CreateIndex
CREATE INDEX "DeviceAction_jobId_batchIndex_state_idx" ON "DeviceAction"("jobId", "batchIndex", "state");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceAction_jobId_deviceId_key" ON "DeviceAction"("jobId", "deviceId");

-- AddForeignKey
ALTER TABLE "DeviceAction" ADD CONSTRAINT "DeviceAction_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "ActionJob"("id") ON DELETE CASCADE ON UPDATE CASCADE;
