-- DropIndex
DROP INDEX "NotificationDelivery_targetId_idx";

-- AlterTable
ALTER TABLE "AlertState" ADD COLUMN     "acknowledgedAt" TIMESTAMPTZ(3),
ADD COLUMN     "acknowledgedBy" TEXT,
ADD COLUMN     "resolvedBy" TEXT;

-- CreateIndex
CREATE INDEX "NotificationDelivery_targetId_createdAt_idx" ON "NotificationDelivery"("targetId", "createdAt");
