-- CreateTable
CREATE TABLE "Device" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "reportedDeviceId" TEXT,
    "claimActive" BOOLEAN NOT NULL DEFAULT true,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "labels" JSONB NOT NULL DEFAULT '{}',
    "os" TEXT,
    "arch" TEXT,
    "agentVersion" TEXT,
    "hardwareModel" TEXT,
    "ipAddress" TEXT,
    "facts" JSONB NOT NULL DEFAULT '{}',
    "lastSeenAt" TIMESTAMP(3),
    "enrolledAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Device_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Device_organizationId_status_idx" ON "Device"("organizationId", "status");

-- CreateIndex
CREATE INDEX "Device_organizationId_createdAt_idx" ON "Device"("organizationId", "createdAt");

-- CreateIndex
CREATE INDEX "Device_organizationId_reportedDeviceId_idx" ON "Device"("organizationId", "reportedDeviceId");

-- CreateIndex
CREATE INDEX "Device_labels_idx" ON "Device" USING GIN ("labels" jsonb_path_ops);

-- AddForeignKey
ALTER TABLE "Device" ADD CONSTRAINT "Device_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
