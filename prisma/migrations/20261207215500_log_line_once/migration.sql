-- A log line the agent sends again (the answer to its batch lost on the way) is stored once:
-- the agent numbers its lines (seq) and ingest skips a line whose device, timestamp and number
-- are stored already (ON CONFLICT DO NOTHING on this index). Lines without a number (stored
-- before, or from a sender without one) never collide. The unique index replaces the list's
-- index on (deviceId, timestamp), which its first two columns serve as before.

-- AlterTable
ALTER TABLE "DeviceLog" ADD COLUMN     "seq" BIGINT;

-- DropIndex
DROP INDEX "DeviceLog_deviceId_timestamp_idx";

-- CreateIndex
CREATE UNIQUE INDEX "DeviceLog_deviceId_timestamp_seq_key" ON "DeviceLog"("deviceId", "timestamp", "seq");
