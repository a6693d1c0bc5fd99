-- Room on each page for the rows ingest rewrites (docs/telemetry.md, "Rollups"): every snapshot
-- updates its device's current 5-minute and hourly rollup rows and its latest snapshot
-- (DeviceTelemetryLatest). An update that finds room on the row's own page stays there (a HOT
-- update: no new index entries, the old version pruned without vacuum); on a full page it
-- moves to another one and adds an entry to every index. At 100,000 devices, 73 % of these
-- updates were HOT with full pages (bench/telemetry-at-scale.ts, run 4 in docs/benchmarks.md).
--
-- Rollup partitions get a fillfactor of 90 (a tenth of each page kept free by inserts: about
-- one more version of each row there; older versions are pruned as the page is read). The
-- latest-snapshot table, one row per device, gets 70: it is small and every row of it is hot.
-- Partitioned parents hold no storage parameters, so fleet_ensure_partition takes the
-- fillfactor of the partitions it creates (src/modules/telemetry/partitions.ts passes it).

DROP FUNCTION "fleet_ensure_partition"(text, date, date, integer);

-- As in 20261125150000_telemetry_partitions, with the new partition's fillfactor.
CREATE FUNCTION "fleet_ensure_partition"(parent text, lo date, hi date, lock_timeout_ms integer DEFAULT 0, fillfactor integer DEFAULT 100) RETURNS boolean
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
  EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS) WITH (fillfactor = %s)', child, parent, fillfactor);
  -- the check lets ATTACH skip scanning the new table
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', child, child || '_range', key_column, lo_at, key_column, hi_at);
  EXECUTE format('WITH moved AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING *) INSERT INTO %I SELECT * FROM moved',
                 parent || '_default', key_column, lo_at, key_column, hi_at, child);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, child, lo_at, hi_at);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', child, child || '_range');
  RETURN true;
END $$;

-- Existing rollup partitions (the default ones included): new pages keep the room; pages
-- already full stay as they are.
DO $$
DECLARE
  child regclass;
BEGIN
  FOR child IN SELECT i.inhrelid::regclass FROM pg_inherits i
                WHERE i.inhparent IN (to_regclass('"TelemetryRollup5m"'), to_regclass('"TelemetryRollup1h"'))
  LOOP
    EXECUTE format('ALTER TABLE %s SET (fillfactor = 90)', child);
  END LOOP;
END $$;

ALTER TABLE "DeviceTelemetryLatest" SET (fillfactor = 70);
