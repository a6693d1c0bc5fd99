// Telemetry: the agent's ingest (POST /agent/telemetry, device token) and the reads under
// /devices/{id}/telemetry (spec ops 11 and 13, raw values). Static segments first.
import { z } from "zod";
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { deviceProcedure } from "../../trpc/device-auth.js";
import { telemetryWriterOf } from "./ingest.js";
import { latestSnapshot, rawMetricValues, telemetrySeries } from "./query.js";
import { BUSY_ANSWER, ingestOutput, MAX_BATCH_ITEMS, rawInput, rawOutput, seriesInput, seriesOutput, snapshotOutput, telemetryBatchInput } from "./schemas.js";

const TAG = "Telemetry";

export const telemetryIngestRouter = router({
  ingest: deviceProcedure
    .meta({
      openapi: {
        method: "POST", path: "/agent/telemetry", tags: ["Device agent"],
        summary: "Send a batch of telemetry snapshots (device token)",
        description:
          `Up to ${MAX_BATCH_ITEMS} snapshots per call, stored in one statement. Every item is validated; one bad item refuses the ` +
          "whole batch with a 400 whose message and issues name its index (snapshots.<index>.<field>). Timestamps more than five " +
          "minutes ahead of the server clock are refused. Snapshots older than the raw retention (TELEMETRY_RETENTION_DAYS) are " +
          "accepted into the 5-minute and hourly rollups only. " + BUSY_ANSWER,
      },
      ingest: true,
    })
    .input(telemetryBatchInput)
    .output(ingestOutput)
    .mutation(async ({ ctx, input }) => ({
      accepted: await telemetryWriterOf(ctx.services).submit({
        device: { id: ctx.device.deviceId, organizationId: ctx.device.organizationId }, snapshots: input.snapshots,
      }),
    })),
});

export const telemetryRouter = router({
  latest: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/telemetry/latest", tags: [TAG],
        summary: "The device's most recent telemetry snapshot (spec op 13)",
        description: "memoryUsagePercent and diskUsagePercent are computed from used and total. 404 for an unknown device or a device without telemetry.",
      },
    })
    .input(z.object({ id: z.uuid() }))
    .output(snapshotOutput)
    .query(({ ctx, input }) => latestSnapshot(ctx.db, ctx.principal.organizationId, input.id)),

  raw: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/telemetry/raw", tags: [TAG],
        summary: "Every raw value of one metric in a time range, paged",
        description: "Defaults: the last hour until now, newest first. Snapshots that did not report the metric are skipped.",
      },
    })
    .input(rawInput)
    .output(rawOutput)
    .query(({ ctx, input }) => rawMetricValues(ctx.db, ctx.principal.organizationId, input)),

  series: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/devices/{id}/telemetry", tags: [TAG],
        summary: "Downsampled telemetry of a device in a time range (spec op 11)",
        description:
          "Buckets of `interval` (1m, 5m, 1h, 1d; default 1m) over [from, to] (ISO 8601; default the last hour until now), oldest first. " +
          "Gauges are averaged (CPU, memory, disk, containers), cumulative counters take their maximum (uptimeSeconds, restartCount), " +
          "errorCount is summed (each snapshot counts the errors of its own window). Percentages are used over total within the bucket. " +
          "`total` counts the raw snapshots in the range; `samples` those of each bucket. At most 10,000 buckets per call. " +
          "5m buckets are read from the 5-minute rollups, 1h and 1d from the hourly ones, for the whole rollup buckets inside the range " +
          "that their retention holds; raw snapshots answer 1m and the rest (the partial buckets at the edges of the range). " +
          "`source` names the rollup used (or raw) and `sources` which source answered which part of the range.",
      },
    })
    .input(seriesInput)
    .output(seriesOutput)
    .query(({ ctx, input }) => telemetrySeries(ctx.db, ctx.services.database.opened.raw, ctx.services.config, ctx.principal.organizationId, input)),
});
