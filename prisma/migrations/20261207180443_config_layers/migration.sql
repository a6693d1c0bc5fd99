-- CreateTable
CREATE TABLE "ConfigLayer" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "selector" JSONB,
    "order" INTEGER,
    "deviceId" UUID,
    "uniqueScope" TEXT,
    "description" TEXT,
    "currentRevision" INTEGER NOT NULL DEFAULT 1,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "ConfigLayer_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ConfigLayerRevision" (
    "id" UUID NOT NULL,
    "layerId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "revision" INTEGER NOT NULL,
    "variables" JSONB NOT NULL DEFAULT '{}',
    "files" JSONB NOT NULL DEFAULT '[]',
    "secretNames" JSONB NOT NULL DEFAULT '[]',
    "secretsSealed" TEXT,
    "activation" JSONB,
    "comment" TEXT,
    "restoredFrom" INTEGER,
    "createdById" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "ConfigLayerRevision_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "DeviceConfigState" (
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "revision" TEXT,
    "state" TEXT,
    "message" TEXT,
    "appliedRevision" TEXT,
    "drift" JSONB NOT NULL DEFAULT '[]',
    "restoreRequested" BOOLEAN NOT NULL DEFAULT false,
    "reportedAt" TIMESTAMP(3),
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "DeviceConfigState_pkey" PRIMARY KEY ("deviceId")
);

-- CreateIndex
CREATE INDEX "ConfigLayer_organizationId_updatedAt_idx" ON "ConfigLayer"("organizationId", "updatedAt");

-- CreateIndex
CREATE INDEX "ConfigLayer_deviceId_idx" ON "ConfigLayer"("deviceId");

-- CreateIndex
CREATE UNIQUE INDEX "ConfigLayer_organizationId_name_key" ON "ConfigLayer"("organizationId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "ConfigLayer_organizationId_uniqueScope_key" ON "ConfigLayer"("organizationId", "uniqueScope");

-- CreateIndex
CREATE UNIQUE INDEX "ConfigLayerRevision_layerId_revision_key" ON "ConfigLayerRevision"("layerId", "revision");

-- CreateIndex
CREATE INDEX "DeviceConfigState_organizationId_state_idx" ON "DeviceConfigState"("organizationId", "state");

-- AddForeignKey
ALTER TABLE "ConfigLayer" ADD CONSTRAINT "ConfigLayer_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ConfigLayer" ADD CONSTRAINT "ConfigLayer_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ConfigLayerRevision" ADD CONSTRAINT "ConfigLayerRevision_layerId_fkey" FOREIGN KEY ("layerId") REFERENCES "ConfigLayer"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "DeviceConfigState" ADD CONSTRAINT "DeviceConfigState_deviceId_fkey" FOREIGN KEY ("deviceId") REFERENCES "Device"("id") ON DELETE CASCADE ON UPDATE CASCADE;
