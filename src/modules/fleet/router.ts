// GET /api/v1/fleet/health: the organization's fleet at a glance; GET /api/v1/fleet/telemetry:
// fleet-wide (or selector-wide) telemetry series from the rollups.
import { protectedProcedure, router } from "../../trpc/procedures.js";
import { parseSelectorString } from "../devices/labels.js";
import { fleetHealthInput, fleetHealthOutput, fleetSeriesInput, fleetSeriesOutput } from "./schemas.js";
import { fleetHealth } from "./service.js";
import { fleetSeries } from "./telemetry.js";

export const fleetRouter = router({
  health: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/fleet/health", tags: ["Fleet"],
        summary: "Fleet health summary",
        description:
          "Devices by status; devices under resource pressure (CPU, memory or disk percent of their latest snapshot above the " +
          "thresholds, default 90); devices with failed containers; devices whose certificate expires soon (default within 30 days) " +
          "or has expired; firing alerts by severity.",
      },
    })
    .input(fleetHealthInput)
    .output(fleetHealthOutput)
    .query(({ ctx, input }) => fleetHealth(ctx.db, ctx.principal.organizationId, input)),

  series: protectedProcedure("telemetry:read")
    .meta({
      openapi: {
        method: "GET", path: "/fleet/telemetry", tags: ["Fleet"],
        summary: "Fleet-wide telemetry over time (all devices, or those matching a label selector)",
        description:
          "Per bucket of `interval` (5m, 1h, 1d; default 1h) over [from, to] (ISO 8601; default the last 24 hours): devices reporting, " +
          "the average and 95th percentile over devices of each device's average CPU, and failed containers (each device's highest count " +
          "in the bucket, summed). Computed from the per-device rollups (5-minute for 5m, hourly for 1h and 1d); every interval bucket " +
          "overlapping [from, to] counts whole. The whole fleet (no `labels`) is read from figures precomputed every minute " +
          "(TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS; today's day bucket every 10 minutes, TELEMETRY_FLEET_DAY_REFRESH_SECONDS), each bucket saying when in `computedAt`. Only buckets with data are returned, " +
          "oldest first; at most 10,000 buckets.",
      },
    })
    .input(fleetSeriesInput)
    .output(fleetSeriesOutput)
    .query(({ ctx, input }) => fleetSeries(ctx.db, ctx.principal.organizationId, { ...input, selector: parseSelectorString(input.labels) })),
});
