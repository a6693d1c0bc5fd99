// Log DTOs: the agent's batch of log lines (ingest) and the list/sources/stream reads.
import { z } from "zod";
import { pagingInput } from "../../lib/paging.js";
import { MAX_BATCH_ITEMS, sampleTimestamp } from "../telemetry/schemas.js";
import { isoInstant } from "../../lib/iso-time.js";

export const LOG_LEVELS = ["debug", "info", "warn", "error", "fatal"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const MAX_MESSAGE_LENGTH = 8192;
export const MAX_SOURCE_LENGTH = 100;

export const logEntryInput = z.object({
  timestamp: sampleTimestamp,
  level: z.enum(LOG_LEVELS).default("info"),
  /** what wrote the line: "agent", "kernel", an application or container name, ... */
  source: z.string().trim().min(1).max(MAX_SOURCE_LENGTH).regex(/^[^\u0000-\u001f\u007f]+$/, "source must not contain control characters").default("agent"),
  // NUL and unpaired surrogates, which PostgreSQL cannot store, were replaced by U+FFFD at the
  // request boundary (meta.lossyText of the ingest procedure).
  message: z.string().min(1).max(MAX_MESSAGE_LENGTH),
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional()
    .describe("the sender's number of the line, unique per device and timestamp: a line sent again (the answer to its batch lost) is stored once; without it a resent line is stored again"),
});
export type LogEntryInput = z.infer<typeof logEntryInput>;

export const logBatchInput = z.object({
  entries: z.array(logEntryInput).min(1).max(MAX_BATCH_ITEMS),
});

/** Filters shared by the list and the follow mode. */
export const logFilterInput = {
  id: z.uuid(),
  source: z.string().min(1).max(MAX_SOURCE_LENGTH).optional().describe("only lines of this source"),
  level: z.array(z.enum(LOG_LEVELS)).max(LOG_LEVELS.length).optional().describe("only lines of these levels (repeat the parameter for several)"),
  q: z.string().min(1).max(200).optional().describe("case-insensitive text search in the message"),
};

export const listLogsInput = z.object({
  ...logFilterInput,
  from: isoInstant.optional().describe("lines at or after this time (ISO 8601)"),
  to: isoInstant.optional().describe("lines at or before this time (ISO 8601)"),
  ...pagingInput,
});
export type LogFilter = Pick<z.infer<typeof listLogsInput>, "source" | "level" | "q" | "from" | "to">;

export const logLineOutput = z.object({
  id: z.string(),
  deviceId: z.string(),
  timestamp: z.string(),
  level: z.string(),
  source: z.string(),
  message: z.string(),
});
export type LogLineDto = z.infer<typeof logLineOutput>;

export const logPageOutput = z.object({ items: z.array(logLineOutput), total: z.number().int(), hasMore: z.boolean() });

export const logSourcesOutput = z.object({
  items: z.array(z.object({ source: z.string(), lastLogAt: z.string() })),
  total: z.number().int(),
});

export interface LogRow {
  id: bigint | number | string;
  deviceId: string;
  timestamp: Date | string;
  level: string;
  source: string;
  message: string;
}

export function toLogLineDto(row: LogRow): LogLineDto {
  return {
    id: String(row.id),
    deviceId: row.deviceId,
    timestamp: new Date(row.timestamp).toISOString(),
    level: row.level,
    source: row.source,
    message: row.message,
  };
}
