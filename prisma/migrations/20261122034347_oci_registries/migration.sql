-- CreateTable
CREATE TABLE "OciRegistry" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT,
    "url" TEXT NOT NULL,
    "registryType" TEXT NOT NULL DEFAULT 'GENERIC',
    "authType" TEXT NOT NULL DEFAULT 'NONE',
    "credentialSealed" TEXT,
    "verifyTls" BOOLEAN NOT NULL DEFAULT true,
    "repositories" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "syncIntervalMinutes" INTEGER NOT NULL DEFAULT 60,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "lastHealthCheck" TIMESTAMP(3),
    "healthStatus" TEXT,
    "lastSyncAt" TIMESTAMP(3),
    "lastSyncError" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "OciRegistry_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "OciRegistry_organizationId_createdAt_idx" ON "OciRegistry"("organizationId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "OciRegistry_organizationId_name_key" ON "OciRegistry"("organizationId", "name");

-- AddForeignKey
ALTER TABLE "OciRegistry" ADD CONSTRAINT "OciRegistry_organizationId_fkey" FOREIGN KEY ("organizationId") REFERENCES "Organization"("id") ON DELETE CASCADE ON UPDATE CASCADE;
