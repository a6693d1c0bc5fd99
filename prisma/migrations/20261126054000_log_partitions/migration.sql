-- Log lines move to a table partitioned by day, like raw snapshots (migration
-- 20261125150000_telemetry_partitions, whose functions fleet_ensure_partition and
-- fleet_drop_partition serve here too; docs/telemetry.md, "Daily partitions"): retention drops
-- a whole day's partition instead of deleting lines, and a device's search over a day reads
-- only that day's partition.
--
-- Search (`q`, a case-insensitive substring of the message) keeps using the device's
-- (deviceId, timestamp) index, now bounded by the days asked: a trigram GIN index was measured
-- and not taken (docs/telemetry.md, "Searching logs": it made common terms 6x slower, growing
-- with the whole fleet's lines of the day, and it costs every ingested line).
--
-- The existing lines are copied into the new partitioned table (one partition per day they
-- cover), so an upgraded database keeps all of them; ids keep their sequence.
ALTER TABLE "DeviceLog" RENAME TO "DeviceLog_unpartitioned";
ALTER TABLE "DeviceLog_unpartitioned" RENAME CONSTRAINT "DeviceLog_pkey" TO "DeviceLog_unpartitioned_pkey";
DROP INDEX "DeviceLog_deviceId_timestamp_idx";
DROP INDEX "DeviceLog_deviceId_id_idx";
DROP INDEX "DeviceLog_timestamp_idx";
ALTER SEQUENCE "DeviceLog_id_seq" OWNED BY NONE;

CREATE TABLE "DeviceLog" (
    "id" BIGINT NOT NULL DEFAULT nextval('"DeviceLog_id_seq"'),
    "deviceId" UUID NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "level" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "message" TEXT NOT NULL,

    CONSTRAINT "DeviceLog_pkey" PRIMARY KEY ("id", "timestamp")
) PARTITION BY RANGE ("timestamp");
ALTER SEQUENCE "DeviceLog_id_seq" OWNED BY "DeviceLog"."id";

CREATE INDEX "DeviceLog_deviceId_timestamp_idx" ON "DeviceLog"("deviceId", "timestamp");
CREATE INDEX "DeviceLog_deviceId_id_idx" ON "DeviceLog"("deviceId", "id");
CREATE INDEX "DeviceLog_timestamp_idx" ON "DeviceLog" USING BRIN ("timestamp");

-- Lines of a day without a partition land here (ingest never fails for a missing partition);
-- creating that day's partition moves them out.
CREATE TABLE "DeviceLog_default" PARTITION OF "DeviceLog" DEFAULT;

SELECT "fleet_ensure_partition"('DeviceLog', d.day, d.day + 1)
  FROM (SELECT DISTINCT ("timestamp" AT TIME ZONE 'UTC')::date AS day FROM "DeviceLog_unpartitioned") d;

INSERT INTO "DeviceLog" SELECT * FROM "DeviceLog_unpartitioned";
DROP TABLE "DeviceLog_unpartitioned";
