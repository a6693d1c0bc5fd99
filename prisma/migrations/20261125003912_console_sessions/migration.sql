-- DropIndex
DROP INDEX "AlertState_organizationId_state_idx";

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "cookieTokenHash" TEXT;

-- CreateIndex
CREATE INDEX "AlertState_organizationId_state_firingSince_idx" ON "AlertState"("organizationId", "state", "firingSince");

-- CreateIndex
CREATE INDEX "Device_organizationId_statusChangedAt_idx" ON "Device"("organizationId", "statusChangedAt");

-- CreateIndex
CREATE UNIQUE INDEX "Session_cookieTokenHash_key" ON "Session"("cookieTokenHash");
