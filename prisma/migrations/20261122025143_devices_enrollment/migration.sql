-- DropIndex
DROP INDEX "Device_labels_idx";

-- AlterTable
ALTER TABLE "Device" ADD COLUMN     "activeClaim" TEXT,
ADD COLUMN     "enrollmentTokenId" UUID,
ADD COLUMN     "statusChangedAt" TIMESTAMP(3);

-- Backfill: an active claim is the reported device id (released claims stay NULL)
UPDATE "Device" SET "activeClaim" = "reportedDeviceId" WHERE "claimActive" AND "reportedDeviceId" IS NOT NULL;

-- CreateTable
CREATE TABLE "DeviceEvent" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "organizationId" UUID NOT NULL,
    "deviceId" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "data" JSONB NOT NULL DEFAULT '{}',
    "actorType" TEXT NOT NULL,
    "actorId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "DeviceEvent_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "EnrollmentToken" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "tokenPrefix" TEXT NOT NULL,
    "tokenHash" TEXT NOT NULL,
    "labels" JSONB NOT NULL DEFAULT '{}',
    "expiresAt" TIMESTAMP(3),
    "maxUses" INTEGER,
    "useCount" INTEGER NOT NULL DEFAULT 0,
    "lastUsedAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),
    "createdById" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "EnrollmentToken_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "DeviceEvent_deviceId_createdAt_idx" ON "DeviceEvent"("deviceId", "createdAt");

-- CreateIndex
CREATE INDEX "DeviceEvent_organizationId_createdAt_idx" ON "DeviceEvent"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "EnrollmentToken_tokenHash_key" ON "EnrollmentToken"("tokenHash");

-- CreateIndex
CREATE INDEX "EnrollmentToken_organizationId_createdAt_idx" ON "EnrollmentToken"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "Device_organizationId_name_idx" ON "Device"("organizationId", "name");

-- CreateIndex
CREATE INDEX "Device_status_lastSeenAt_idx" ON "Device"("status", "lastSeenAt");

-- CreateIndex
CREATE INDEX "Device_labels_idx" ON "Device" USING GIN ("labels" jsonb_ops);

-- CreateIndex
CREATE INDEX "Device_enrollmentTokenId_idx" ON "Device"("enrollmentTokenId");

-- CreateIndex
CREATE UNIQUE INDEX "Device_organizationId_activeClaim_key" ON "Device"("organizationId", "activeClaim");

-- AddForeignKey
ALTER TABLE "Device" ADD CONSTRAINT "Device_enrollmentTokenId_fkey" FOREIGN KEY ("enrollmentTokenId") REFERENCES "EnrollmentToken"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceEvent" ADD CONSTRAINT "DeviceEvent_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceEvent" ADD CONSTRAINT "DeviceEvent_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "EnrollmentToken" ADD CONSTRAINT "EnrollmentToken_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;