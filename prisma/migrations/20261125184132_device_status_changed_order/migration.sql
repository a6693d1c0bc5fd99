-- The device list sorted by statusChangedAt (the console's "Latest status changes") orders by
-- "statusChangedAt" DESC NULLS LAST, "id" DESC: an index in exactly that order answers the top
-- rows without sorting the fleet. Prisma's schema cannot say NULLS LAST, so it is written here.
-- DropIndex
DROP INDEX "Device_organizationId_statusChangedAt_idx";

-- CreateIndex
CREATE INDEX "Device_organizationId_statusChangedAt_id_idx" ON "Device"("organizationId", "statusChangedAt" DESC NULLS LAST, "id" DESC);
