-- CreateTable
CREATE TABLE "MarketplaceStore" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "syncIntervalMinutes" INTEGER NOT NULL DEFAULT 60,
    "includeAllGlobalRegistries" BOOLEAN NOT NULL DEFAULT false,
    "globalRegistryIds" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "lastSyncAt" TIMESTAMP(3),
    "lastSyncError" TEXT,
    "lastSyncAttemptAt" TIMESTAMP(3),
    "progress" JSONB NOT NULL DEFAULT '{}',
    "syncLeaseId" UUID,
    "syncLeaseUntil" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "MarketplaceStore_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "MarketplaceSyncRecord" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "storeId" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "repositoriesFound" INTEGER NOT NULL DEFAULT 0,
    "applicationsFound" INTEGER NOT NULL DEFAULT 0,
    "applicationsImported" INTEGER NOT NULL DEFAULT 0,
    "applicationsUpdated" INTEGER NOT NULL DEFAULT 0,
    "errors" JSONB NOT NULL DEFAULT '[]',
    "perRepository" JSONB NOT NULL DEFAULT '[]',
    "products" JSONB NOT NULL DEFAULT '[]',
    "skippedRepositories" JSONB NOT NULL DEFAULT '[]',
    "syncDurationMs" INTEGER NOT NULL DEFAULT 0,
    "triggeredBy" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "MarketplaceSyncRecord_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "MarketplaceStore_organizationId_key" ON "MarketplaceStore"("organizationId");

-- CreateIndex
CREATE INDEX "MarketplaceStore_enabled_lastSyncAttemptAt_idx" ON "MarketplaceStore"("enabled", "lastSyncAttemptAt");

-- CreateIndex
CREATE INDEX "MarketplaceSyncRecord_storeId_createdAt_idx" ON "MarketplaceSyncRecord"("storeId", "createdAt");

-- CreateIndex
CREATE INDEX "MarketplaceSyncRecord_organizationId_createdAt_idx" ON "MarketplaceSyncRecord"("organizationId", "createdAt");

-- AddForeignKey
ALTER TABLE "MarketplaceSyncRecord" ADD CONSTRAINT "MarketplaceSyncRecord_storeId_fkey" FOREIGN KEY ("storeId") REFERENCES "MarketplaceStore"("id") ON DELETE CASCADE ON UPDATE CASCADE;
