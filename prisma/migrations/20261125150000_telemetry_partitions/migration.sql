-- Raw telemetry snapshots move to a table partitioned by day (docs/telemetry.md, "Storage and
-- retention"): retention drops a whole day's partition instead of deleting rows, and a range
-- query of one device reads only the partitions of its days.
--
-- The existing rows are copied into the new partitioned table (one partition per day they
-- cover), so an upgraded database keeps all of them; ids keep their sequence.

-- Creates the partition of `parent` for [lo, hi) (UTC midnights; a day for raw snapshots,
-- longer periods for rollups), named `<parent>_pYYYYMMDD` after `lo`, if it is missing. Rows
-- of that period that landed in the default partition meanwhile move into it, in the same
-- transaction, so creating a partition late never fails and never loses a row. Concurrent
-- callers (ingest of several processes, the scheduled job) serialise on an advisory lock per
-- partition. `lock_timeout_ms` (> 0) bounds the wait for locks within the caller's
-- transaction. Returns true when it created the partition.
CREATE FUNCTION "fleet_ensure_partition"(parent text, lo date, hi date, lock_timeout_ms integer DEFAULT 0) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  child text := parent || '_p' || to_char(lo, 'YYYYMMDD');
  lo_at timestamptz := lo::timestamp AT TIME ZONE 'UTC';
  hi_at timestamptz := hi::timestamp AT TIME ZONE 'UTC';
  key_column text;
BEGIN
  IF to_regclass(format('%I', child)) IS NOT NULL THEN
    RETURN false;
  END IF;
  IF lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  END IF;
  PERFORM pg_advisory_xact_lock(hashtext('fleet_partition:' || child));
  IF to_regclass(format('%I', child)) IS NOT NULL THEN
    RETURN false;
  END IF;
  -- the partition key's column (e.g. "timestamp", "bucket")
  SELECT a.attname INTO key_column FROM pg_partitioned_table p
    JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
   WHERE p.partrelid = to_regclass(format('%I', parent));
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS)', child, parent);
  -- the check lets ATTACH skip scanning the new table
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', child, child || '_range', key_column, lo_at, key_column, hi_at);
  EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
                 parent || '_default', key_column, lo_at, key_column, hi_at, child);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, child, lo_at, hi_at);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', child, child || '_range');
  RETURN true;
END $$;

-- Retention: drops `child` if it is a partition of `parent`. One statement, so a crash
-- leaves the partition whole or gone.
CREATE FUNCTION "fleet_drop_partition"(parent text, child text, lock_timeout_ms integer DEFAULT 0) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = to_regclass(format('%I', child)) AND i.inhparent = to_regclass(format('%I', parent))) THEN
    RETURN false;
  END IF;
  IF lock_timeout_ms > 0 THEN
    PERFORM set_config('lock_timeout', lock_timeout_ms || 'ms', true);
  END IF;
  EXECUTE format('DROP TABLE %I', child);
  RETURN true;
END $$;

ALTER TABLE "TelemetrySnapshot" RENAME TO "TelemetrySnapshot_unpartitioned";
ALTER TABLE "TelemetrySnapshot_unpartitioned" RENAME CONSTRAINT "TelemetrySnapshot_pkey" TO "TelemetrySnapshot_unpartitioned_pkey";
DROP INDEX "TelemetrySnapshot_deviceId_timestamp_idx";
DROP INDEX "TelemetrySnapshot_timestamp_idx";
ALTER SEQUENCE "TelemetrySnapshot_id_seq" OWNED BY NONE;

CREATE TABLE "TelemetrySnapshot" (
    "id" BIGINT NOT NULL DEFAULT nextval('"TelemetrySnapshot_id_seq"'),
    "deviceId" UUID NOT NULL,
    "timestamp" TIMESTAMPTZ(3) NOT NULL,
    "cpuUsagePercent" DOUBLE PRECISION,
    "memoryUsedBytes" BIGINT,
    "memoryTotalBytes" BIGINT,
    "diskUsedBytes" BIGINT,
    "diskTotalBytes" BIGINT,
    "uptimeSeconds" BIGINT,
    "restartCount" INTEGER,
    "containersRunning" INTEGER,
    "containersFailed" INTEGER,
    "errorCount" INTEGER,

    CONSTRAINT "TelemetrySnapshot_pkey" PRIMARY KEY ("id", "timestamp")
) PARTITION BY RANGE ("timestamp");
ALTER SEQUENCE "TelemetrySnapshot_id_seq" OWNED BY "TelemetrySnapshot"."id";

CREATE INDEX "TelemetrySnapshot_deviceId_timestamp_idx" ON "TelemetrySnapshot"("deviceId", "timestamp");
CREATE INDEX "TelemetrySnapshot_timestamp_idx" ON "TelemetrySnapshot" USING BRIN ("timestamp");

-- Rows of a day without a partition land here (ingest never fails for a missing partition);
-- creating that day's partition moves them out.
CREATE TABLE "TelemetrySnapshot_default" PARTITION OF "TelemetrySnapshot" DEFAULT;

SELECT "fleet_ensure_partition"('TelemetrySnapshot', d.day, d.day + 1)
  FROM (SELECT DISTINCT ("timestamp" AT TIME ZONE 'UTC')::date AS day FROM "TelemetrySnapshot_unpartitioned") d;

INSERT INTO "TelemetrySnapshot" SELECT * FROM "TelemetrySnapshot_unpartitioned";
DROP TABLE "TelemetrySnapshot_unpartitioned";
