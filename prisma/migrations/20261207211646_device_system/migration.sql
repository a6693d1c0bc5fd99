-- AlterTable
ALTER TABLE "ConfigLayer" ADD COLUMN     "managedBy" TEXT,
ADD COLUMN     "managedCommit" TEXT;

-- CreateTable
CREATE TABLE "DeviceSystem" (
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "bootedSlot" TEXT NOT NULL,
    "bootedVersion" TEXT,
    "bootedDigest" TEXT,
    "bootedImageDigest" TEXT,
    "otherSlot" TEXT,
    "otherVersion" TEXT,
    "otherDigest" TEXT,
    "otherImageDigest" TEXT,
    "lastOutcome" TEXT,
    "lastReason" TEXT,
    "lastVersion" TEXT,
    "lastDigest" TEXT,
    "reportedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "DeviceSystem_pkey" PRIMARY KEY ("deviceId")
);

-- CreateTable
CREATE TABLE "DeviceSystemUpdate" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "digest" TEXT NOT NULL,
    "fromVersion" TEXT,
    "toVersion" TEXT,
    "fromSlot" TEXT,
    "toSlot" TEXT,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "startedAt" TIMESTAMP(3) NOT NULL,
    "finishedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "DeviceSystemUpdate_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "DeviceSystem_organizationId_idx" ON "DeviceSystem"("organizationId");

-- CreateIndex
CREATE INDEX "DeviceSystemUpdate_deviceId_finishedAt_id_idx" ON "DeviceSystemUpdate"("deviceId", "finishedAt" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "DeviceSystemUpdate_organizationId_idx" ON "DeviceSystemUpdate"("organizationId");

-- CreateIndex
CREATE UNIQUE INDEX "DeviceSystemUpdate_deviceId_digest_startedAt_key" ON "DeviceSystemUpdate"("deviceId", "digest", "startedAt");

-- AddForeignKey
ALTER TABLE "DeviceSystem" ADD CONSTRAINT "DeviceSystem_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceSystemUpdate" ADD CONSTRAINT "DeviceSystemUpdate_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;
