// Device logs: ingest by group commit (one statement for the batches of concurrent requests), the filtered newest-first list, the
// sources of a device, and "lines after id N" for the follow mode.
import { observedWriter } from "../metrics/registry.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { RawDatabase } from "../../db/adapters.js";
import { likePattern } from "../../lib/like.js";
import { requireDevice } from "../telemetry/device.js";
import { preparePartitionsFor } from "../telemetry/partitions.js";
import { ingestWriter, type IngestingDevice, type IngestOptions } from "../telemetry/ingest.js";
import type { GroupCommit } from "../../lib/group-commit.js";
import { perService } from "../../lib/per-service.js";
import type { Services } from "../../services.js";
import { resolveRange } from "../telemetry/query.js";
import { toLogLineDto, type LogEntryInput, type LogFilter, type LogRow } from "./schemas.js";

// $1 device and $2 organization of each line, $3.. timestamps, levels, sources, messages, seqs.
// A line whose (device, timestamp, seq) is stored already was sent again: skipped, and not
// counted into the source summary.
// The source summary is upserted once per (device, source) of the statement, in that order:
// two statements meeting on the same rows lock them in the same order.
const INSERT_SQL = `
  WITH inserted AS (
    INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message", "seq")
    SELECT t."deviceId", t."timestamp", t."level", t."source", t."message", t."seq"
      FROM unnest($1::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::int8[]) WITH ORDINALITY AS t("deviceId", "timestamp", "level", "source", "message", "seq", "ord")
     ORDER BY t."ord"
    ON CONFLICT ("deviceId", "timestamp", "seq") DO NOTHING
    RETURNING "deviceId", "source", "timestamp"
  ), owners AS (
    SELECT DISTINCT "deviceId", "organizationId" FROM unnest($1::uuid[], $2::uuid[]) AS o("deviceId", "organizationId")
  )
  INSERT INTO "DeviceLogSource" ("deviceId", "source", "organizationId", "lastLogAt")
  SELECT i."deviceId", i."source", o."organizationId", max(i."timestamp")
    FROM inserted i JOIN owners o ON o."deviceId" = i."deviceId"
   GROUP BY i."deviceId", i."source", o."organizationId" ORDER BY 1, 2
  ON CONFLICT ("deviceId", "source") DO UPDATE
    SET "lastLogAt" = GREATEST("DeviceLogSource"."lastLogAt", excluded."lastLogAt"), "organizationId" = excluded."organizationId"`;

/** The lines of one device, as one request sent them. */
export interface LogBatch {
  device: IngestingDevice;
  entries: LogEntryInput[];
}

/**
 * Batches of any devices in ONE statement (the log writer's group commit): the lines go in
 * through unnest() and each device's source summary (DeviceLogSource) is upserted from what
 * was inserted. Straight to the driver, like telemetry ingest (see
 * src/modules/telemetry/ingest.ts for why). A day this process has not seen (a backlog
 * upload) gets its daily partition first, as for telemetry; lines older than the log
 * retention are still accepted, into the default partition, which retention prunes.
 * Answers the lines stored per batch.
 */
export async function insertLogBatches(db: RawDatabase, batches: LogBatch[], options: IngestOptions): Promise<number[]> {
  const all = batches.flatMap((b) => b.entries.map((e) => ({ device: b.device, e })));
  if (all.length > 0) {
    await preparePartitionsFor(db, ["DeviceLog"], all.map(({ e }) => e.timestamp), options);
    await db.query(INSERT_SQL, [
      all.map(({ device }) => device.id), all.map(({ device }) => device.organizationId),
      all.map(({ e }) => e.timestamp), all.map(({ e }) => e.level), all.map(({ e }) => e.source), all.map(({ e }) => e.message),
      all.map(({ e }) => (e.seq === undefined ? null : String(e.seq))),
    ], { prepared: "fleet_log_insert" });
  }
  return batches.map((b) => b.entries.length);
}

/**
 * The log writer of one running service: concurrent requests' batches, of any devices, become
 * one statement (src/lib/group-commit.ts), as for telemetry, so that a burst of log batches
 * holds at most two pool connections instead of one each.
 */
export function createLogWriter(raw: RawDatabase, options: IngestOptions): GroupCommit<LogBatch, number> {
  return ingestWriter(raw, (batches: LogBatch[]) => insertLogBatches(raw, batches, options), (b) => b.entries.length);
}

export const logWriterOf = perService((services: Services) => observedWriter(services, "logs",
  createLogWriter(services.database.opened.raw, { retentionDays: services.config.LOG_RETENTION_DAYS, logger: services.logger })));

function filterConditions(deviceId: string, filter: Omit<LogFilter, "from" | "to"> & { from?: Date; to?: Date; afterId?: bigint }): Prisma.Sql {
  const conditions = [Prisma.sql`l."deviceId" = ${deviceId}::uuid`];
  if (filter.source) conditions.push(Prisma.sql`l."source" = ${filter.source}`);
  if (filter.level?.length) conditions.push(Prisma.sql`l."level" = ANY(${filter.level}::text[])`);
  if (filter.q) conditions.push(Prisma.sql`l."message" ILIKE ${likePattern(filter.q)}`);
  if (filter.from) conditions.push(Prisma.sql`l."timestamp" >= ${filter.from.toISOString()}::timestamptz`);
  if (filter.to) conditions.push(Prisma.sql`l."timestamp" <= ${filter.to.toISOString()}::timestamptz`);
  if (filter.afterId !== undefined) conditions.push(Prisma.sql`l."id" > ${filter.afterId}`);
  return Prisma.join(conditions, " AND ");
}

const COLUMNS = Prisma.raw(`l."id", l."deviceId", l."timestamp", l."level", l."source", l."message"`);

export async function listLogs(db: DbTx, organizationId: string, input: LogFilter & { id: string; limit: number; offset: number }) {
  await requireDevice(db, organizationId, input.id);
  // Without from/to the whole retained history is searched.
  const range = input.from || input.to ? resolveRange({ from: input.from ?? "1970-01-01", to: input.to }) : {};
  const where = filterConditions(input.id, { source: input.source, level: input.level, q: input.q, ...range });
  const [rows, counted] = await Promise.all([
    db.$queryRaw<LogRow[]>`SELECT ${COLUMNS} FROM "DeviceLog" l WHERE ${where}
      ORDER BY l."timestamp" DESC, l."id" DESC LIMIT ${input.limit} OFFSET ${input.offset}`,
    db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS "n" FROM "DeviceLog" l WHERE ${where}`,
  ]);
  const total = counted[0]?.n ?? 0;
  return { items: rows.map(toLogLineDto), total, hasMore: input.offset + rows.length < total };
}

export async function listLogSources(db: DbTx, organizationId: string, deviceId: string) {
  await requireDevice(db, organizationId, deviceId);
  const rows = await db.deviceLogSource.findMany({ where: { deviceId }, orderBy: { source: "asc" } });
  return { items: rows.map((r) => ({ source: r.source, lastLogAt: r.lastLogAt.toISOString() })), total: rows.length };
}

/** The newest `count` lines matching the filter, returned oldest first (the replay of a stream). */
export async function tailLogs(db: DbTx, deviceId: string, filter: Omit<LogFilter, "from" | "to">, count: number) {
  if (count === 0) return [];
  const rows = await db.$queryRaw<LogRow[]>`SELECT ${COLUMNS} FROM "DeviceLog" l WHERE ${filterConditions(deviceId, filter)}
    ORDER BY l."id" DESC LIMIT ${count}`;
  return rows.reverse().map(toLogLineDto);
}

/** Lines written after `afterId`, oldest first (what a stream has not sent yet). */
export async function logsAfter(db: DbTx, deviceId: string, filter: Omit<LogFilter, "from" | "to">, afterId: bigint, limit: number) {
  const rows = await db.$queryRaw<LogRow[]>`SELECT ${COLUMNS} FROM "DeviceLog" l WHERE ${filterConditions(deviceId, { ...filter, afterId })}
    ORDER BY l."id" ASC LIMIT ${limit}`;
  return rows.map(toLogLineDto);
}

/** The id the stream starts after when nothing is replayed: the newest line of the device. */
export async function newestLogId(db: DbTx, deviceId: string): Promise<bigint> {
  const rows = await db.$queryRaw<{ id: bigint | null }[]>`SELECT max("id") AS "id" FROM "DeviceLog" WHERE "deviceId" = ${deviceId}::uuid`;
  return rows[0]?.id == null ? 0n : BigInt(rows[0].id);
}
