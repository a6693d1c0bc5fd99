-- DropIndex
DROP INDEX "Device_status_lastSeenAt_idx";

-- CreateIndex
CREATE INDEX "Device_status_idx" ON "Device"("status");
