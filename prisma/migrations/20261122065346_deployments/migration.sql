-- CreateTable
CREATE TABLE "Deployment" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "applicationId" UUID NOT NULL,
    "applicationVersionId" UUID NOT NULL,
    "version" TEXT NOT NULL,
    "profileId" TEXT NOT NULL,
    "parameters" JSONB NOT NULL DEFAULT '{}',
    "secretParameters" TEXT,
    "secretParameterNames" TEXT[],
    "labelSelector" JSONB,
    "targetDeviceIds" TEXT[],
    "strategy" JSONB NOT NULL,
    "strategyType" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'draft',
    "rolloutState" TEXT NOT NULL DEFAULT 'draft',
    "pausedFrom" TEXT,
    "rolloutReason" TEXT,
    "currentBatch" INTEGER,
    "startedAt" TIMESTAMP(3),
    "completedAt" TIMESTAMP(3),
    "removalRequestedAt" TIMESTAMP(3),
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Deployment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeploymentBatch" (
    "id" UUID NOT NULL,
    "deploymentId" UUID NOT NULL,
    "index" INTEGER NOT NULL,
    "kind" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'planned',
    "failureAccepted" BOOLEAN NOT NULL DEFAULT false,
    "startedAt" TIMESTAMP(3),
    "deadlineAt" TIMESTAMP(3),
    "completedAt" TIMESTAMP(3),

    CONSTRAINT "DeploymentBatch_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeploymentDevice" (
    "deploymentId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "batchIndex" INTEGER,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "desiredAction" TEXT,
    "reason" TEXT,
    "message" TEXT,
    "dispatchedAt" TIMESTAMP(3),
    "stateChangedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeploymentDevice_pkey" PRIMARY KEY ("deploymentId","deviceId")
);

-- CreateTable
CREATE TABLE "DeviceVersionHistory" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "deploymentId" UUID,
    "deploymentName" TEXT,
    "applicationId" UUID NOT NULL,
    "applicationVersionId" UUID,
    "version" TEXT NOT NULL,
    "profileId" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "succeeded" BOOLEAN NOT NULL,
    "message" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finishedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeviceVersionHistory_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Deployment_organizationId_createdAt_idx" ON "Deployment"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "Deployment_organizationId_status_idx" ON "Deployment"("organizationId", "status");

-- CreateIndex
CREATE INDEX "Deployment_applicationId_idx" ON "Deployment"("applicationId");

-- CreateIndex
CREATE INDEX "Deployment_applicationVersionId_idx" ON "Deployment"("applicationVersionId");

-- CreateIndex
CREATE UNIQUE INDEX "Deployment_organizationId_name_key" ON "Deployment"("organizationId", "name");

-- CreateIndex
CREATE INDEX "DeploymentBatch_state_deadlineAt_idx" ON "DeploymentBatch"("state", "deadlineAt");

-- CreateIndex
CREATE UNIQUE INDEX "DeploymentBatch_deploymentId_index_key" ON "DeploymentBatch"("deploymentId", "index");

-- CreateIndex
CREATE INDEX "DeploymentDevice_deviceId_desiredAction_idx" ON "DeploymentDevice"("deviceId", "desiredAction");

-- CreateIndex
CREATE INDEX "DeploymentDevice_deploymentId_batchIndex_state_idx" ON "DeploymentDevice"("deploymentId", "batchIndex", "state");

-- CreateIndex
CREATE INDEX "DeploymentDevice_organizationId_state_idx" ON "DeploymentDevice"("organizationId", "state");

-- CreateIndex
CREATE INDEX "DeviceVersionHistory_deviceId_applicationId_finishedAt_idx" ON "DeviceVersionHistory"("deviceId", "applicationId", "finishedAt");

-- CreateIndex
CREATE INDEX "DeviceVersionHistory_organizationId_finishedAt_idx" ON "DeviceVersionHistory"("organizationId", "finishedAt");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceVersionHistory_deviceId_deploymentId_key" ON "DeviceVersionHistory"("deviceId", "deploymentId");

-- AddForeignKey
ALTER TABLE "Deployment" ADD CONSTRAINT "Deployment_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Deployment" ADD CONSTRAINT "Deployment_applicationId_fkey" FOREIGN KEY ("applicationId") REFERENCES "Application"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Deployment" ADD CONSTRAINT "Deployment_applicationVersionId_fkey" FOREIGN KEY ("applicationVersionId") REFERENCES "ApplicationVersion"("id") ON DELETE NO ACTION ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeploymentBatch" ADD CONSTRAINT "DeploymentBatch_deploymentId_fkey" FOREIGN KEY ("deploymentId") REFERENCES "Deployment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeploymentDevice" ADD CONSTRAINT "DeploymentDevice_deploymentId_fkey" FOREIGN KEY ("deploymentId") REFERENCES "Deployment"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeploymentDevice" ADD CONSTRAINT "DeploymentDevice_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceVersionHistory" ADD CONSTRAINT "DeviceVersionHistory_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;
