// Telemetry ingest: the batches of concurrent requests (up to 1,000 snapshots of one device
// each) in ONE statement, by group commit (telemetryWriterOf). The values travel as parallel
// arrays through unnest() (one bind parameter per column, whatever the batch size), and the
// same statement upserts each device's newest snapshot into
// DeviceTelemetryLatest, so fleet health and alert rules never scan raw snapshots, and merges
// the batch into the 5-minute and hourly rollups (rollups.ts) and marks the buckets it touched
// for the whole-fleet series (src/modules/fleet/fleet-rollups.ts). A snapshot is a device's
// once per timestamp: one the agent sends again, not knowing the first send arrived, changes
// nothing (the raw row, the latest and the rollups are only fed by rows inserted now).
//
// This hot path talks to the driver directly (RawDatabase: node-postgres or PGlite) rather
// than through Prisma: with eleven 1,000-element array parameters Prisma's parameter handling
// cost three to five times the statement itself (measured: about 30 ms against 8 ms per batch
// on PostgreSQL). Nothing here needs a transaction: the statement is atomic by itself.
import { observedWriter } from "../metrics/registry.js";
import type { RawDatabase } from "../../db/adapters.js";
import type { Logger } from "../../lib/logger.js";
import { GroupCommit } from "../../lib/group-commit.js";
import { perService } from "../../lib/per-service.js";
import type { Services } from "../../services.js";
import { preparePartitionsFor, retentionCutoff } from "./partitions.js";
import { ROLLUPS, rollupUpsertSql } from "./rollups.js";
import { FLEET_MARK_LOCK_SHARED, markFleetDirtySql } from "../fleet/fleet-rollups.js";
import { STORED_METRIC_NAMES, type StoredMetric } from "./metrics.js";
import type { SnapshotInput } from "./schemas.js";

export interface IngestingDevice {
  id: string;
  organizationId: string;
}

/** Postgres array type of each column as bound through unnest(). */
const ARRAY_TYPE: Record<StoredMetric, string> = {
  cpuUsagePercent: "float8[]",
  memoryUsedBytes: "int8[]",
  memoryTotalBytes: "int8[]",
  diskUsedBytes: "int8[]",
  diskTotalBytes: "int8[]",
  uptimeSeconds: "int8[]",
  restartCount: "int4[]",
  containersRunning: "int4[]",
  containersFailed: "int4[]",
  errorCount: "int4[]",
};

const COLUMNS = STORED_METRIC_NAMES.map((n) => `"${n}"`).join(", ");
const LATEST_UPDATES = ["snapshotId", "timestamp", ...STORED_METRIC_NAMES].map((n) => `"${n}" = excluded."${n}"`).join(", ");
const METRIC_PARAMS = STORED_METRIC_NAMES.map((m, i) => `$${i + 4}::${ARRAY_TYPE[m]}`).join(", ");
const CUTOFF_PARAM = `$${STORED_METRIC_NAMES.length + 4}::timestamptz`;
// $1 device and $2 organization of each snapshot, $3 timestamps, $4.. one array per metric,
// then the raw cutoff (null: raw snapshots are kept forever). Data-modifying CTEs all run to
// completion whether or not the outer statement reads them: one atomic statement inserts the
// raw rows, upserts each device's newest snapshot, merges the rollups and marks the fleet's
// buckets dirty (holding, from its first row on, the lock that orders marks and the fleet
// job's claims). Snapshots older than the raw retention (their day's partition is already
// dropped, or would be at the next run) go into the rollups only. The upserts run in device
// order, so that two statements meeting on the same rows take their locks in the same order.
const INSERT_SQL = `
  WITH batch AS (
    SELECT t.* FROM ${FLEET_MARK_LOCK_SHARED}, unnest($1::uuid[], $2::uuid[], $3::timestamptz[], ${METRIC_PARAMS})
      WITH ORDINALITY AS t("deviceId", "organizationId", "timestamp", ${COLUMNS}, "ord")
  ), owners AS (
    SELECT DISTINCT "deviceId", "organizationId" FROM batch
  ), inserted AS (
    INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", ${COLUMNS})
    SELECT b."deviceId", b."timestamp", ${STORED_METRIC_NAMES.map((m) => `b."${m}"`).join(", ")} FROM batch b
     WHERE ${CUTOFF_PARAM} IS NULL OR b."timestamp" >= ${CUTOFF_PARAM}
     ORDER BY b."ord"
    -- sent again (the answer to the first send was lost): stored once, summed once
    ON CONFLICT ("deviceId", "timestamp") DO NOTHING
    RETURNING "id", "deviceId", "timestamp", ${COLUMNS}
  ), rolled AS (
    SELECT i."id", i."deviceId", o."organizationId", i."timestamp", ${STORED_METRIC_NAMES.map((m) => `i."${m}"`).join(", ")}
      FROM inserted i JOIN owners o ON o."deviceId" = i."deviceId"
    UNION ALL
    -- too old for the raw table: no raw row, no id; none shares a timestamp with an inserted one
    SELECT b."ord", b."deviceId", b."organizationId", b."timestamp", ${STORED_METRIC_NAMES.map((m) => `b."${m}"`).join(", ")} FROM batch b WHERE b."timestamp" < ${CUTOFF_PARAM}
  ), newest AS (
    SELECT DISTINCT ON (i."deviceId") i.*, o."organizationId" FROM inserted i JOIN owners o ON o."deviceId" = i."deviceId"
     ORDER BY i."deviceId", i."timestamp" DESC, i."id" DESC
  ), latest AS (
    INSERT INTO "DeviceTelemetryLatest" ("deviceId", "organizationId", "snapshotId", "timestamp", ${COLUMNS})
    SELECT "deviceId", "organizationId", "id", "timestamp", ${COLUMNS} FROM newest ORDER BY "deviceId"
    ON CONFLICT ("deviceId") DO UPDATE SET ${LATEST_UPDATES}, "organizationId" = excluded."organizationId"
    WHERE "DeviceTelemetryLatest"."timestamp" <= excluded."timestamp"
  ), rollup5m AS (
    ${rollupUpsertSql(ROLLUPS["5m"], "rolled")}
  ), fleet_dirty AS (
    ${markFleetDirtySql("rolled")}
  )
  ${rollupUpsertSql(ROLLUPS["1h"], "rolled")}`;

/** The snapshots of one device, as one request sent them. */
export interface SnapshotBatch {
  device: IngestingDevice;
  snapshots: SnapshotInput[];
}

export interface IngestOptions {
  retentionDays: number;
  logger?: Logger;
}

/** Batches of any devices in ONE statement (the telemetry writer's group commit); answers the snapshots stored per batch. */
export async function insertSnapshotBatches(db: RawDatabase, batches: SnapshotBatch[], options: IngestOptions): Promise<number[]> {
  const all = batches.flatMap((b) => b.snapshots.map((s) => ({ device: b.device, s })));
  if (all.length > 0) {
    const timestamps = all.map(({ s }) => s.timestamp);
    const cutoff = retentionCutoff(options.retentionDays);
    // A period this process has not seen (a backlog upload) gets its partitions first; usually a no-op.
    await preparePartitionsFor(db, ["TelemetrySnapshot"], timestamps, options);
    await preparePartitionsFor(db, ["TelemetryRollup5m", "TelemetryRollup1h"], timestamps, { logger: options.logger });
    // Integers travel as strings inside the array literal: exact beyond 2^31, cast by PostgreSQL.
    const metrics = STORED_METRIC_NAMES.map((m) => all.map(({ s }) => (s[m] == null ? null : String(s[m]))));
    await db.query(INSERT_SQL, [
      all.map(({ device }) => device.id), all.map(({ device }) => device.organizationId), timestamps, ...metrics, cutoff?.toISOString() ?? null,
    ], { prepared: "fleet_telemetry_insert" });
  }
  return batches.map((b) => b.snapshots.length);
}

/** One device's snapshots in one statement (tests, benchmarks, and backlog tools; requests go through the writer). */
export async function insertSnapshots(db: RawDatabase, device: IngestingDevice, snapshots: SnapshotInput[], options: IngestOptions): Promise<number> {
  return (await insertSnapshotBatches(db, [{ device, snapshots }], options))[0];
}

/**
 * The group commit of an ingest path (telemetry, logs): at most two statements at once on
 * PostgreSQL (one on PGlite), up to 5,000 rows each; `write` stores the batches of any
 * devices in one statement and answers the rows stored per batch.
 */
export function ingestWriter<T>(raw: RawDatabase, write: (batches: T[]) => Promise<number[]>, rowsOf: (batch: T) => number): GroupCommit<T, number> {
  return new GroupCommit<T, number>({ write, weightOf: rowsOf }, { maxInFlight: raw.kind === "pglite" ? 1 : 2, maxBatch: 5_000 });
}

/**
 * The telemetry writer of one running service: concurrent requests' batches, of any devices,
 * become one statement (src/lib/group-commit.ts), up to 5,000 snapshots each. At fleet scale
 * a device sends a few snapshots per request; one statement per request would spend most of
 * the database's time planning and committing (docs/benchmarks.md, bench/telemetry-at-scale.ts).
 */
export function createTelemetryWriter(raw: RawDatabase, options: IngestOptions): GroupCommit<SnapshotBatch, number> {
  return ingestWriter(raw, (batches: SnapshotBatch[]) => insertSnapshotBatches(raw, batches, options), (b) => b.snapshots.length);
}

export const telemetryWriterOf = perService((services: Services) => observedWriter(services, "telemetry",
  createTelemetryWriter(services.database.opened.raw, { retentionDays: services.config.TELEMETRY_RETENTION_DAYS, logger: services.logger })));
