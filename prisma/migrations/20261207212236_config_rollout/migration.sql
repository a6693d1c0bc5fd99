-- AlterTable
ALTER TABLE "ActionJob" ADD COLUMN     "configLayerId" UUID,
ADD COLUMN     "configRevision" INTEGER;

-- AlterTable
ALTER TABLE "ConfigLayer" ADD COLUMN     "releasedRevision" INTEGER NOT NULL DEFAULT 1;

-- AlterTable
ALTER TABLE "DeviceAction" ADD COLUMN     "configLayerId" UUID,
ADD COLUMN     "configRevision" INTEGER;

-- CreateIndex
CREATE INDEX "ActionJob_organizationId_kind_state_idx" ON "ActionJob"("organizationId", "kind", "state");

-- CreateIndex
CREATE INDEX "ActionJob_configLayerId_state_idx" ON "ActionJob"("configLayerId", "state");

-- Existing layers: every device gets their newest revision today, so that is the released one.
UPDATE "ConfigLayer" SET "releasedRevision" = "currentRevision";
