-- Continuous rollups of raw telemetry (docs/telemetry.md, "Rollups"): per device, 5-minute and
-- hourly aggregates of every metric (count, sum, min, max, last; used and total summed over
-- the snapshots reporting both, for the percentages), kept up to date by the ingest statement
-- itself. Partitioned like the raw snapshots (fleet_ensure_partition): the 5-minute table by
-- day, the hourly one by month, so that their own retention drops whole partitions.
--
-- Existing raw snapshots are rolled up here once (their organization comes from the device's
-- newest snapshot, DeviceTelemetryLatest; rows of devices without one are orphans the
-- retention job deletes anyway).

CREATE TABLE "TelemetryRollup5m" (
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "samples" INTEGER NOT NULL,
    "lastAt" TIMESTAMPTZ(3) NOT NULL,
    "cpuUsagePercentCount" INTEGER NOT NULL DEFAULT 0,
    "cpuUsagePercentSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "cpuUsagePercentMin" DOUBLE PRECISION,
    "cpuUsagePercentMax" DOUBLE PRECISION,
    "cpuUsagePercentLast" DOUBLE PRECISION,
    "memoryUsedBytesCount" INTEGER NOT NULL DEFAULT 0,
    "memoryUsedBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryUsedBytesMin" DOUBLE PRECISION,
    "memoryUsedBytesMax" DOUBLE PRECISION,
    "memoryUsedBytesLast" DOUBLE PRECISION,
    "memoryTotalBytesCount" INTEGER NOT NULL DEFAULT 0,
    "memoryTotalBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryTotalBytesMin" DOUBLE PRECISION,
    "memoryTotalBytesMax" DOUBLE PRECISION,
    "memoryTotalBytesLast" DOUBLE PRECISION,
    "diskUsedBytesCount" INTEGER NOT NULL DEFAULT 0,
    "diskUsedBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskUsedBytesMin" DOUBLE PRECISION,
    "diskUsedBytesMax" DOUBLE PRECISION,
    "diskUsedBytesLast" DOUBLE PRECISION,
    "diskTotalBytesCount" INTEGER NOT NULL DEFAULT 0,
    "diskTotalBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskTotalBytesMin" DOUBLE PRECISION,
    "diskTotalBytesMax" DOUBLE PRECISION,
    "diskTotalBytesLast" DOUBLE PRECISION,
    "uptimeSecondsCount" INTEGER NOT NULL DEFAULT 0,
    "uptimeSecondsSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "uptimeSecondsMin" DOUBLE PRECISION,
    "uptimeSecondsMax" DOUBLE PRECISION,
    "uptimeSecondsLast" DOUBLE PRECISION,
    "restartCountCount" INTEGER NOT NULL DEFAULT 0,
    "restartCountSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "restartCountMin" DOUBLE PRECISION,
    "restartCountMax" DOUBLE PRECISION,
    "restartCountLast" DOUBLE PRECISION,
    "containersRunningCount" INTEGER NOT NULL DEFAULT 0,
    "containersRunningSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "containersRunningMin" DOUBLE PRECISION,
    "containersRunningMax" DOUBLE PRECISION,
    "containersRunningLast" DOUBLE PRECISION,
    "containersFailedCount" INTEGER NOT NULL DEFAULT 0,
    "containersFailedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "containersFailedMin" DOUBLE PRECISION,
    "containersFailedMax" DOUBLE PRECISION,
    "containersFailedLast" DOUBLE PRECISION,
    "errorCountCount" INTEGER NOT NULL DEFAULT 0,
    "errorCountSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "errorCountMin" DOUBLE PRECISION,
    "errorCountMax" DOUBLE PRECISION,
    "errorCountLast" DOUBLE PRECISION,
    "memoryBothUsedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryBothTotalSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskBothUsedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskBothTotalSum" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "TelemetryRollup5m_pkey" PRIMARY KEY ("deviceId","bucket")
) PARTITION BY RANGE ("bucket");
CREATE INDEX "TelemetryRollup5m_organizationId_bucket_idx" ON "TelemetryRollup5m"("organizationId", "bucket");
CREATE TABLE "TelemetryRollup5m_default" PARTITION OF "TelemetryRollup5m" DEFAULT;

CREATE TABLE "TelemetryRollup1h" (
    "deviceId" UUID NOT NULL,
    "organizationId" UUID NOT NULL,
    "bucket" TIMESTAMPTZ(3) NOT NULL,
    "samples" INTEGER NOT NULL,
    "lastAt" TIMESTAMPTZ(3) NOT NULL,
    "cpuUsagePercentCount" INTEGER NOT NULL DEFAULT 0,
    "cpuUsagePercentSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "cpuUsagePercentMin" DOUBLE PRECISION,
    "cpuUsagePercentMax" DOUBLE PRECISION,
    "cpuUsagePercentLast" DOUBLE PRECISION,
    "memoryUsedBytesCount" INTEGER NOT NULL DEFAULT 0,
    "memoryUsedBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryUsedBytesMin" DOUBLE PRECISION,
    "memoryUsedBytesMax" DOUBLE PRECISION,
    "memoryUsedBytesLast" DOUBLE PRECISION,
    "memoryTotalBytesCount" INTEGER NOT NULL DEFAULT 0,
    "memoryTotalBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryTotalBytesMin" DOUBLE PRECISION,
    "memoryTotalBytesMax" DOUBLE PRECISION,
    "memoryTotalBytesLast" DOUBLE PRECISION,
    "diskUsedBytesCount" INTEGER NOT NULL DEFAULT 0,
    "diskUsedBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskUsedBytesMin" DOUBLE PRECISION,
    "diskUsedBytesMax" DOUBLE PRECISION,
    "diskUsedBytesLast" DOUBLE PRECISION,
    "diskTotalBytesCount" INTEGER NOT NULL DEFAULT 0,
    "diskTotalBytesSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskTotalBytesMin" DOUBLE PRECISION,
    "diskTotalBytesMax" DOUBLE PRECISION,
    "diskTotalBytesLast" DOUBLE PRECISION,
    "uptimeSecondsCount" INTEGER NOT NULL DEFAULT 0,
    "uptimeSecondsSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "uptimeSecondsMin" DOUBLE PRECISION,
    "uptimeSecondsMax" DOUBLE PRECISION,
    "uptimeSecondsLast" DOUBLE PRECISION,
    "restartCountCount" INTEGER NOT NULL DEFAULT 0,
    "restartCountSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "restartCountMin" DOUBLE PRECISION,
    "restartCountMax" DOUBLE PRECISION,
    "restartCountLast" DOUBLE PRECISION,
    "containersRunningCount" INTEGER NOT NULL DEFAULT 0,
    "containersRunningSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "containersRunningMin" DOUBLE PRECISION,
    "containersRunningMax" DOUBLE PRECISION,
    "containersRunningLast" DOUBLE PRECISION,
    "containersFailedCount" INTEGER NOT NULL DEFAULT 0,
    "containersFailedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "containersFailedMin" DOUBLE PRECISION,
    "containersFailedMax" DOUBLE PRECISION,
    "containersFailedLast" DOUBLE PRECISION,
    "errorCountCount" INTEGER NOT NULL DEFAULT 0,
    "errorCountSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "errorCountMin" DOUBLE PRECISION,
    "errorCountMax" DOUBLE PRECISION,
    "errorCountLast" DOUBLE PRECISION,
    "memoryBothUsedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "memoryBothTotalSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskBothUsedSum" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "diskBothTotalSum" DOUBLE PRECISION NOT NULL DEFAULT 0,

    CONSTRAINT "TelemetryRollup1h_pkey" PRIMARY KEY ("deviceId","bucket")
) PARTITION BY RANGE ("bucket");
CREATE INDEX "TelemetryRollup1h_organizationId_bucket_idx" ON "TelemetryRollup1h"("organizationId", "bucket");
CREATE TABLE "TelemetryRollup1h_default" PARTITION OF "TelemetryRollup1h" DEFAULT;


SELECT "fleet_ensure_partition"('TelemetryRollup5m', p.lo, p.lo + 1)
  FROM (SELECT DISTINCT ("timestamp" AT TIME ZONE 'UTC')::date AS lo FROM "TelemetrySnapshot") p;
INSERT INTO "TelemetryRollup5m" ("deviceId", "organizationId", "bucket", "samples", "lastAt", "cpuUsagePercentCount", "cpuUsagePercentSum", "cpuUsagePercentMin", "cpuUsagePercentMax", "cpuUsagePercentLast", "memoryUsedBytesCount", "memoryUsedBytesSum", "memoryUsedBytesMin", "memoryUsedBytesMax", "memoryUsedBytesLast", "memoryTotalBytesCount", "memoryTotalBytesSum", "memoryTotalBytesMin", "memoryTotalBytesMax", "memoryTotalBytesLast", "diskUsedBytesCount", "diskUsedBytesSum", "diskUsedBytesMin", "diskUsedBytesMax", "diskUsedBytesLast", "diskTotalBytesCount", "diskTotalBytesSum", "diskTotalBytesMin", "diskTotalBytesMax", "diskTotalBytesLast", "uptimeSecondsCount", "uptimeSecondsSum", "uptimeSecondsMin", "uptimeSecondsMax", "uptimeSecondsLast", "restartCountCount", "restartCountSum", "restartCountMin", "restartCountMax", "restartCountLast", "containersRunningCount", "containersRunningSum", "containersRunningMin", "containersRunningMax", "containersRunningLast", "containersFailedCount", "containersFailedSum", "containersFailedMin", "containersFailedMax", "containersFailedLast", "errorCountCount", "errorCountSum", "errorCountMin", "errorCountMax", "errorCountLast", "memoryBothUsedSum", "memoryBothTotalSum", "diskBothUsedSum", "diskBothTotalSum")
SELECT s."deviceId", l."organizationId", date_bin('5 minutes', s."timestamp", TIMESTAMPTZ '1970-01-01 00:00:00+00'), count(*)::int, max(s."timestamp"),
       count(s."cpuUsagePercent")::int, coalesce(sum(s."cpuUsagePercent"), 0)::float8, min(s."cpuUsagePercent")::float8, max(s."cpuUsagePercent")::float8, (array_agg(s."cpuUsagePercent"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."memoryUsedBytes")::int, coalesce(sum(s."memoryUsedBytes"), 0)::float8, min(s."memoryUsedBytes")::float8, max(s."memoryUsedBytes")::float8, (array_agg(s."memoryUsedBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."memoryTotalBytes")::int, coalesce(sum(s."memoryTotalBytes"), 0)::float8, min(s."memoryTotalBytes")::float8, max(s."memoryTotalBytes")::float8, (array_agg(s."memoryTotalBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."diskUsedBytes")::int, coalesce(sum(s."diskUsedBytes"), 0)::float8, min(s."diskUsedBytes")::float8, max(s."diskUsedBytes")::float8, (array_agg(s."diskUsedBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."diskTotalBytes")::int, coalesce(sum(s."diskTotalBytes"), 0)::float8, min(s."diskTotalBytes")::float8, max(s."diskTotalBytes")::float8, (array_agg(s."diskTotalBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."uptimeSeconds")::int, coalesce(sum(s."uptimeSeconds"), 0)::float8, min(s."uptimeSeconds")::float8, max(s."uptimeSeconds")::float8, (array_agg(s."uptimeSeconds"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."restartCount")::int, coalesce(sum(s."restartCount"), 0)::float8, min(s."restartCount")::float8, max(s."restartCount")::float8, (array_agg(s."restartCount"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."containersRunning")::int, coalesce(sum(s."containersRunning"), 0)::float8, min(s."containersRunning")::float8, max(s."containersRunning")::float8, (array_agg(s."containersRunning"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."containersFailed")::int, coalesce(sum(s."containersFailed"), 0)::float8, min(s."containersFailed")::float8, max(s."containersFailed")::float8, (array_agg(s."containersFailed"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."errorCount")::int, coalesce(sum(s."errorCount"), 0)::float8, min(s."errorCount")::float8, max(s."errorCount")::float8, (array_agg(s."errorCount"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       coalesce(sum(s."memoryUsedBytes") FILTER (WHERE s."memoryUsedBytes" IS NOT NULL AND s."memoryTotalBytes" IS NOT NULL), 0)::float8, coalesce(sum(s."memoryTotalBytes") FILTER (WHERE s."memoryUsedBytes" IS NOT NULL AND s."memoryTotalBytes" IS NOT NULL), 0)::float8,
       coalesce(sum(s."diskUsedBytes") FILTER (WHERE s."diskUsedBytes" IS NOT NULL AND s."diskTotalBytes" IS NOT NULL), 0)::float8, coalesce(sum(s."diskTotalBytes") FILTER (WHERE s."diskUsedBytes" IS NOT NULL AND s."diskTotalBytes" IS NOT NULL), 0)::float8
  FROM "TelemetrySnapshot" s JOIN "DeviceTelemetryLatest" l ON l."deviceId" = s."deviceId"
 GROUP BY s."deviceId", l."organizationId", 3;

SELECT "fleet_ensure_partition"('TelemetryRollup1h', p.lo, (p.lo + interval '1 month')::date)
  FROM (SELECT DISTINCT date_trunc('month', "timestamp" AT TIME ZONE 'UTC')::date AS lo FROM "TelemetrySnapshot") p;
INSERT INTO "TelemetryRollup1h" ("deviceId", "organizationId", "bucket", "samples", "lastAt", "cpuUsagePercentCount", "cpuUsagePercentSum", "cpuUsagePercentMin", "cpuUsagePercentMax", "cpuUsagePercentLast", "memoryUsedBytesCount", "memoryUsedBytesSum", "memoryUsedBytesMin", "memoryUsedBytesMax", "memoryUsedBytesLast", "memoryTotalBytesCount", "memoryTotalBytesSum", "memoryTotalBytesMin", "memoryTotalBytesMax", "memoryTotalBytesLast", "diskUsedBytesCount", "diskUsedBytesSum", "diskUsedBytesMin", "diskUsedBytesMax", "diskUsedBytesLast", "diskTotalBytesCount", "diskTotalBytesSum", "diskTotalBytesMin", "diskTotalBytesMax", "diskTotalBytesLast", "uptimeSecondsCount", "uptimeSecondsSum", "uptimeSecondsMin", "uptimeSecondsMax", "uptimeSecondsLast", "restartCountCount", "restartCountSum", "restartCountMin", "restartCountMax", "restartCountLast", "containersRunningCount", "containersRunningSum", "containersRunningMin", "containersRunningMax", "containersRunningLast", "containersFailedCount", "containersFailedSum", "containersFailedMin", "containersFailedMax", "containersFailedLast", "errorCountCount", "errorCountSum", "errorCountMin", "errorCountMax", "errorCountLast", "memoryBothUsedSum", "memoryBothTotalSum", "diskBothUsedSum", "diskBothTotalSum")
SELECT s."deviceId", l."organizationId", date_bin('1 hour', s."timestamp", TIMESTAMPTZ '1970-01-01 00:00:00+00'), count(*)::int, max(s."timestamp"),
       count(s."cpuUsagePercent")::int, coalesce(sum(s."cpuUsagePercent"), 0)::float8, min(s."cpuUsagePercent")::float8, max(s."cpuUsagePercent")::float8, (array_agg(s."cpuUsagePercent"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."memoryUsedBytes")::int, coalesce(sum(s."memoryUsedBytes"), 0)::float8, min(s."memoryUsedBytes")::float8, max(s."memoryUsedBytes")::float8, (array_agg(s."memoryUsedBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."memoryTotalBytes")::int, coalesce(sum(s."memoryTotalBytes"), 0)::float8, min(s."memoryTotalBytes")::float8, max(s."memoryTotalBytes")::float8, (array_agg(s."memoryTotalBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."diskUsedBytes")::int, coalesce(sum(s."diskUsedBytes"), 0)::float8, min(s."diskUsedBytes")::float8, max(s."diskUsedBytes")::float8, (array_agg(s."diskUsedBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."diskTotalBytes")::int, coalesce(sum(s."diskTotalBytes"), 0)::float8, min(s."diskTotalBytes")::float8, max(s."diskTotalBytes")::float8, (array_agg(s."diskTotalBytes"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."uptimeSeconds")::int, coalesce(sum(s."uptimeSeconds"), 0)::float8, min(s."uptimeSeconds")::float8, max(s."uptimeSeconds")::float8, (array_agg(s."uptimeSeconds"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."restartCount")::int, coalesce(sum(s."restartCount"), 0)::float8, min(s."restartCount")::float8, max(s."restartCount")::float8, (array_agg(s."restartCount"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."containersRunning")::int, coalesce(sum(s."containersRunning"), 0)::float8, min(s."containersRunning")::float8, max(s."containersRunning")::float8, (array_agg(s."containersRunning"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."containersFailed")::int, coalesce(sum(s."containersFailed"), 0)::float8, min(s."containersFailed")::float8, max(s."containersFailed")::float8, (array_agg(s."containersFailed"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       count(s."errorCount")::int, coalesce(sum(s."errorCount"), 0)::float8, min(s."errorCount")::float8, max(s."errorCount")::float8, (array_agg(s."errorCount"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1],
       coalesce(sum(s."memoryUsedBytes") FILTER (WHERE s."memoryUsedBytes" IS NOT NULL AND s."memoryTotalBytes" IS NOT NULL), 0)::float8, coalesce(sum(s."memoryTotalBytes") FILTER (WHERE s."memoryUsedBytes" IS NOT NULL AND s."memoryTotalBytes" IS NOT NULL), 0)::float8,
       coalesce(sum(s."diskUsedBytes") FILTER (WHERE s."diskUsedBytes" IS NOT NULL AND s."diskTotalBytes" IS NOT NULL), 0)::float8, coalesce(sum(s."diskTotalBytes") FILTER (WHERE s."diskUsedBytes" IS NOT NULL AND s."diskTotalBytes" IS NOT NULL), 0)::float8
  FROM "TelemetrySnapshot" s JOIN "DeviceTelemetryLatest" l ON l."deviceId" = s."deviceId"
 GROUP BY s."deviceId", l."organizationId", 3;
