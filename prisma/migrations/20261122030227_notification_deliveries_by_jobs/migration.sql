-- DropIndex
DROP INDEX "NotificationDelivery_status_nextAttemptAt_idx";

-- AlterTable
ALTER TABLE "NotificationDelivery" DROP COLUMN "lockedUntil",
ALTER COLUMN "nextAttemptAt" DROP NOT NULL;
