-- CreateTable
CREATE TABLE "DeviceAction" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "deploymentId" UUID,
    "applicationId" UUID,
    "reason" TEXT,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "message" TEXT,
    "result" JSONB,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "deliveredAt" TIMESTAMP(3),
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),
    "deferredUntil" TIMESTAMP(3),
    "deferredBy" TEXT,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "DeviceAction_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeviceActionBundle" (
    "actionId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "data" BYTEA NOT NULL,
    "sizeBytes" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeviceActionBundle_pkey" PRIMARY KEY ("actionId")
);

-- CreateIndex
CREATE INDEX "DeviceAction_organizationId_createdAt_idx" ON "DeviceAction"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "DeviceAction_deviceId_state_idx" ON "DeviceAction"("deviceId", "state");

-- CreateIndex
CREATE INDEX "DeviceAction_state_expiresAt_idx" ON "DeviceAction"("state", "expiresAt");

-- CreateIndex
CREATE INDEX "DeviceActionBundle_expiresAt_idx" ON "DeviceActionBundle"("expiresAt");

-- AddForeignKey
ALTER TABLE "DeviceAction" ADD CONSTRAINT "DeviceAction_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceActionBundle" ADD CONSTRAINT "DeviceActionBundle_actionId_fkey" FOREIGN KEY ("actionId") REFERENCES "DeviceAction"("id") ON DELETE CASCADE ON UPDATE CASCADE;
