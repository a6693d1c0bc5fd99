-- AlterTable
ALTER TABLE "ConfigSource" ADD COLUMN     "actingUserId" UUID,
ADD COLUMN     "appliedHashes" JSONB,
ADD COLUMN     "lastSyncCommit" TEXT,
ADD COLUMN     "pollIntervalSeconds" INTEGER NOT NULL DEFAULT 120,
ADD COLUMN     "prunePercent" INTEGER,
ADD COLUMN     "syncRequestedAt" TIMESTAMPTZ(3),
ADD COLUMN     "webhookSecretSealed" TEXT;

-- CreateTable
CREATE TABLE "ConfigSourceSync" (
    "id" UUID NOT NULL,
    "sourceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "commit" TEXT,
    "status" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "created" INTEGER NOT NULL DEFAULT 0,
    "updated" INTEGER NOT NULL DEFAULT 0,
    "deleted" INTEGER NOT NULL DEFAULT 0,
    "unchanged" INTEGER NOT NULL DEFAULT 0,
    "refused" INTEGER NOT NULL DEFAULT 0,
    "triggerType" TEXT NOT NULL,
    "triggeredBy" TEXT,
    "refusals" JSONB,
    "startedAt" TIMESTAMPTZ(3) NOT NULL,
    "finishedAt" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ConfigSourceSync_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "ConfigSourceSync_sourceId_startedAt_idx" ON "ConfigSourceSync"("sourceId", "startedAt");

-- CreateIndex
CREATE INDEX "ConfigSource_pollIntervalSeconds_lastSyncAt_idx" ON "ConfigSource"("pollIntervalSeconds", "lastSyncAt");

-- AddForeignKey
ALTER TABLE "ConfigSourceSync" ADD CONSTRAINT "ConfigSourceSync_sourceId_fkey" FOREIGN KEY ("sourceId") REFERENCES "ConfigSource"("id") ON DELETE CASCADE ON UPDATE CASCADE;
