-- AlterTable
ALTER TABLE "OciRegistry" ADD COLUMN     "lastSyncAttemptAt" TIMESTAMP(3),
ADD COLUMN     "syncLeaseId" UUID,
ADD COLUMN     "syncLeaseUntil" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "OciSyncRecord" (
    "id" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "registryId" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "repositoriesFound" INTEGER NOT NULL DEFAULT 0,
    "applicationsFound" INTEGER NOT NULL DEFAULT 0,
    "applicationsImported" INTEGER NOT NULL DEFAULT 0,
    "applicationsUpdated" INTEGER NOT NULL DEFAULT 0,
    "errors" JSONB NOT NULL DEFAULT '[]',
    "perRepository" JSONB NOT NULL DEFAULT '[]',
    "skipped" JSONB NOT NULL DEFAULT '[]',
    "syncDurationMs" INTEGER NOT NULL DEFAULT 0,
    "triggeredBy" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "OciSyncRecord_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "OciSyncRecord_registryId_createdAt_idx" ON "OciSyncRecord"("registryId", "createdAt");

-- CreateIndex
CREATE INDEX "OciRegistry_enabled_lastSyncAttemptAt_idx" ON "OciRegistry"("enabled", "lastSyncAttemptAt");

-- AddForeignKey
ALTER TABLE "OciSyncRecord" ADD CONSTRAINT "OciSyncRecord_registryId_fkey" FOREIGN KEY ("registryId") REFERENCES "OciRegistry"("id") ON DELETE CASCADE ON UPDATE CASCADE;
