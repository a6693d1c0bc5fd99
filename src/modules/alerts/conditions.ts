// Alert conditions: their shapes (validated at create/update), a one-line summary, and the
// SQL that finds the subjects for which a condition holds right now: devices, or config
// sources (config_source_failing). One set-based query per rule, whatever the number of
// devices or sources in its scope.
import { z } from "zod";
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { utc } from "../devices/sql.js";
import { METRIC_NAMES, metricExpression, type Metric } from "../telemetry/metrics.js";
import { failedDeploymentDevices } from "./deployments.js";
import { counted } from "../../lib/plural.js";

/** A source keeps its last 100 syncs (SYNC_HISTORY_KEEP in config/sources.ts; not imported: that module imports this one). */
const MAX_CONSECUTIVE_FAILURES = 100;

export const OPERATORS = { ">": ">", ">=": ">=", "<": "<", "<=": "<=", "==": "=", "!=": "<>" } as const;
export type Operator = keyof typeof OPERATORS;

const MAX_DURATION_SECONDS = 7 * 86_400;
const wholeNumber = (min: number, max: number) => z.number().int().min(min).max(max).pipe(z.number());

export const conditionInput = z.discriminatedUnion("type", [
  z.object({
    type: z.literal("metric_threshold"),
    metric: z.enum(METRIC_NAMES),
    operator: z.enum(Object.keys(OPERATORS) as [Operator, ...Operator[]]),
    threshold: z.number().pipe(z.number()),
    /** the condition must hold for every snapshot of this long (0 = the latest snapshot alone) */
    durationSeconds: wholeNumber(0, MAX_DURATION_SECONDS).default(0),
  }),
  z.object({
    type: z.literal("device_offline"),
    /** offline for at least this long (counted from the last time the device was seen) */
    durationSeconds: wholeNumber(0, MAX_DURATION_SECONDS).default(300),
  }),
  z.object({ type: z.literal("deployment_failed") }),
  z.object({
    type: z.literal("certificate_expiring"),
    /** the device's newest valid certificate expires within this many days (or has expired) */
    withinDays: wholeNumber(1, 3650).default(30),
  }),
  z.object({
    type: z.literal("config_source_failing"),
    /** this many syncs in a row were refused or failed (the history since the last applied sync) */
    consecutiveFailures: wholeNumber(1, MAX_CONSECUTIVE_FAILURES).default(1),
    /** the config sources watched, by name; empty = every source of the organization */
    sourceNames: z.array(z.string().trim().min(1).max(100)).max(50).default([]),
  }),
]);
export type Condition = z.infer<typeof conditionInput>;
export type ConditionType = Condition["type"];

/** What an alert is about: a device, or (config_source_failing) a config source. */
export const SUBJECT_TYPES = ["device", "config_source"] as const;
export type SubjectType = (typeof SUBJECT_TYPES)[number];
export const subjectTypeOf = (type: ConditionType): SubjectType => (type === "config_source_failing" ? "config_source" : "device");

export function formatDuration(seconds: number): string {
  if (seconds % 86_400 === 0 && seconds > 0) return `${seconds / 86_400}d`;
  if (seconds % 3600 === 0 && seconds > 0) return `${seconds / 3600}h`;
  if (seconds % 60 === 0 && seconds > 0) return `${seconds / 60}m`;
  return `${seconds}s`;
}

/** "cpuUsagePercent > 90 for 5m", "device offline for 10m", ... */
export function summarize(condition: Condition): string {
  switch (condition.type) {
    case "metric_threshold":
      return `${condition.metric} ${condition.operator} ${condition.threshold}` + (condition.durationSeconds > 0 ? ` for ${formatDuration(condition.durationSeconds)}` : "");
    case "device_offline":
      return `device offline for ${formatDuration(condition.durationSeconds)}`;
    case "deployment_failed":
      return "deployment failed";
    case "certificate_expiring":
      return `certificate expiring within ${counted(condition.withinDays, "day")}`;
    case "config_source_failing":
      return `config source failing (${condition.consecutiveFailures === 1 ? "last sync refused or failed" : `${condition.consecutiveFailures} syncs in a row refused or failed`})` +
        (condition.sourceNames.length > 0 ? `: ${condition.sourceNames.join(", ")}` : "");
  }
}

/**
 * Snapshots must cover the window: the oldest one in it may start at most this late, so that
 * one reading does not satisfy "for 5m" by itself.
 */
export function coverageGraceSeconds(durationSeconds: number): number {
  return Math.min(60, durationSeconds / 2);
}

export interface Match {
  /** the device's id (or the config source's, for config_source_failing) */
  subjectId: string;
  /** the observed value: the metric's latest reading, seconds offline, days left, failed syncs in a row */
  value: number | null;
}

export interface RuleScope {
  organizationId: string;
  labelSelector: Record<string, string>;
}

export function scopeCte(scope: RuleScope): Prisma.Sql {
  const selector = Object.keys(scope.labelSelector).length === 0
    ? Prisma.sql`TRUE`
    : Prisma.sql`d."labels" @> ${JSON.stringify(scope.labelSelector)}::jsonb`;
  return Prisma.sql`scope AS (
    SELECT d."id", d."status", d."lastSeenAt" FROM "Device" d
     WHERE d."organizationId" = ${scope.organizationId}::uuid AND ${selector})`;
}

async function metricMatches(db: DbTx, scope: RuleScope, c: Extract<Condition, { type: "metric_threshold" }>, now: Date): Promise<Match[]> {
  const op = Prisma.raw(OPERATORS[c.operator]);
  if (c.durationSeconds === 0) {
    // The newest snapshot of each device, kept by ingest: no raw scan.
    const value = metricExpression(c.metric as Metric, "l");
    return db.$queryRaw<Match[]>`
      WITH ${scopeCte(scope)}
      SELECT l."deviceId" AS "subjectId", ${value} AS "value" FROM "DeviceTelemetryLatest" l JOIN scope ON scope."id" = l."deviceId"
       WHERE ${value} ${op} ${c.threshold}::float8`;
  }
  const value = metricExpression(c.metric as Metric, "s");
  const windowStart = new Date(now.getTime() - c.durationSeconds * 1000);
  const coveredBy = new Date(windowStart.getTime() + coverageGraceSeconds(c.durationSeconds) * 1000);
  // Every reading in the window meets the condition (bool_and skips snapshots without the
  // metric), there is at least one, and the readings reach back to the window's start.
  return db.$queryRaw<Match[]>`
    WITH ${scopeCte(scope)}
    SELECT s."deviceId" AS "subjectId", (array_agg(${value} ORDER BY s."timestamp" DESC) FILTER (WHERE ${value} IS NOT NULL))[1] AS "value"
      FROM "TelemetrySnapshot" s JOIN scope ON scope."id" = s."deviceId"
     WHERE s."timestamp" >= ${windowStart.toISOString()}::timestamptz
     GROUP BY s."deviceId"
    HAVING count(${value}) > 0
       AND bool_and(${value} ${op} ${c.threshold}::float8)
       AND min(s."timestamp") FILTER (WHERE ${value} IS NOT NULL) <= ${coveredBy.toISOString()}::timestamptz`;
}

async function offlineMatches(db: DbTx, scope: RuleScope, c: Extract<Condition, { type: "device_offline" }>, now: Date): Promise<Match[]> {
  const cutoff = new Date(now.getTime() - c.durationSeconds * 1000);
  return db.$queryRaw<Match[]>`
    WITH ${scopeCte(scope)}
    SELECT scope."id" AS "subjectId",
           CASE WHEN scope."lastSeenAt" IS NULL THEN NULL
                ELSE EXTRACT(EPOCH FROM (${utc(now)} - scope."lastSeenAt"))::float8 END AS "value"
      FROM scope
     WHERE scope."status" = 'offline' AND (scope."lastSeenAt" IS NULL OR scope."lastSeenAt" <= ${utc(cutoff)})`;
}

async function certificateMatches(db: DbTx, scope: RuleScope, c: Extract<Condition, { type: "certificate_expiring" }>, now: Date): Promise<Match[]> {
  const limit = new Date(now.getTime() + c.withinDays * 86_400_000);
  // The certificate that matters is the device's newest unrevoked one: a renewal supersedes the old.
  return db.$queryRaw<Match[]>`
    WITH ${scopeCte(scope)}
    SELECT c."deviceId" AS "subjectId", (EXTRACT(EPOCH FROM (c."notAfter" - ${utc(now)})) / 86400)::float8 AS "value"
      FROM (SELECT "deviceId", max("notAfter") AS "notAfter" FROM "DeviceCertificate"
             WHERE "organizationId" = ${scope.organizationId}::uuid AND NOT "revoked" GROUP BY "deviceId") c
      JOIN scope ON scope."id" = c."deviceId"
     WHERE c."notAfter" <= ${utc(limit)}`;
}

/**
 * Config sources whose last sync was refused or failed, with at least `consecutiveFailures`
 * refused or failed syncs in their history since the last applied one (the value: how many).
 * A failure a poll meets again is not a new history entry (the sync records it once), so it
 * counts once. The label selector does not apply to sources.
 */
async function failingSourceMatches(db: DbTx, scope: RuleScope, c: Extract<Condition, { type: "config_source_failing" }>): Promise<Match[]> {
  const named = c.sourceNames.length === 0 ? Prisma.sql`TRUE` : Prisma.sql`s."name" = ANY(${c.sourceNames}::text[])`;
  return db.$queryRaw<Match[]>`
    SELECT s."id"::text AS "subjectId", count(y."id")::float8 AS "value"
      FROM "ConfigSource" s
      JOIN "ConfigSourceSync" y ON y."sourceId" = s."id" AND y."status" IN ('refused', 'failed')
       AND y."startedAt" > COALESCE((SELECT max(a."startedAt") FROM "ConfigSourceSync" a WHERE a."sourceId" = s."id" AND a."status" = 'applied'), '-infinity'::timestamptz)
     WHERE s."organizationId" = ${scope.organizationId}::uuid AND s."lastSyncStatus" IN ('refused', 'failed') AND ${named}
     GROUP BY s."id"
    HAVING count(y."id") >= ${c.consecutiveFailures}::int`;
}

/** The subjects in scope (devices, or config sources) for which the condition holds at `now`. */
export async function conditionMatches(db: DbTx, scope: RuleScope, condition: Condition, now: Date): Promise<Match[]> {
  const rows = await (async () => {
    switch (condition.type) {
      case "metric_threshold":
        return metricMatches(db, scope, condition, now);
      case "device_offline":
        return offlineMatches(db, scope, condition, now);
      case "certificate_expiring":
        return certificateMatches(db, scope, condition, now);
      case "deployment_failed":
        return failedDeploymentDevices(db, scope);
      case "config_source_failing":
        return failingSourceMatches(db, scope, condition);
    }
  })();
  return rows.map((r) => ({ subjectId: r.subjectId, value: r.value == null ? null : Number(r.value) }));
}
