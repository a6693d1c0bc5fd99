-- An alert's subject: a device (every existing row) or a config source. The column is renamed,
-- not dropped and added, so existing alert states keep their device ids (and primary key).
ALTER TABLE "AlertState" RENAME COLUMN "deviceId" TO "subjectId";
ALTER TABLE "AlertState" ADD COLUMN "subjectType" TEXT NOT NULL DEFAULT 'device';

-- AlterTable
ALTER TABLE "NotificationDelivery" ADD COLUMN     "configSourceId" UUID;
