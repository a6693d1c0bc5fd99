-- AlterTable
ALTER TABLE "Device" ADD COLUMN     "admission" TEXT NOT NULL DEFAULT 'admitted';

-- AlterTable
ALTER TABLE "EnrollmentToken" ADD COLUMN     "mode" TEXT NOT NULL DEFAULT 'auto';

-- CreateTable
CREATE TABLE "EnrollmentRequest" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "deviceId" UUID,
    "enrollmentTokenId" UUID,
    "tokenName" TEXT NOT NULL,
    "reportedDeviceId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "facts" JSONB NOT NULL DEFAULT '{}',
    "requestedLabels" JSONB NOT NULL DEFAULT '{}',
    "sourceAddress" TEXT,
    "keyFingerprint" TEXT NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'pending',
    "reason" TEXT,
    "approvalLabels" JSONB,
    "decidedByType" TEXT,
    "decidedById" TEXT,
    "decidedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "EnrollmentRequest_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "PreauthorizedDevice" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "reportedDeviceId" TEXT NOT NULL,
    "keyFingerprint" TEXT,
    "ekHash" TEXT,
    "labels" JSONB NOT NULL DEFAULT '{}',
    "deviceId" UUID,
    "usedAt" TIMESTAMP(3),
    "createdById" UUID,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "PreauthorizedDevice_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "EnrollmentRequest_organizationId_state_createdAt_idx" ON "EnrollmentRequest"("organizationId", "state", "createdAt");

-- CreateIndex
CREATE INDEX "EnrollmentRequest_deviceId_idx" ON "EnrollmentRequest"("deviceId");

-- CreateIndex
CREATE INDEX "EnrollmentRequest_requestedLabels_idx" ON "EnrollmentRequest" USING GIN ("requestedLabels" jsonb_ops);

-- CreateIndex
CREATE INDEX "PreauthorizedDevice_organizationId_createdAt_idx" ON "PreauthorizedDevice"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "PreauthorizedDevice_organizationId_reportedDeviceId_key" ON "PreauthorizedDevice"("organizationId", "reportedDeviceId");

-- AddForeignKey
ALTER TABLE "EnrollmentRequest" ADD CONSTRAINT "EnrollmentRequest_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "PreauthorizedDevice" ADD CONSTRAINT "PreauthorizedDevice_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
