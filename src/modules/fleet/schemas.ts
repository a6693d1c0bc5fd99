// The fleet health summary: one answer for a dashboard's first screen.
import { z } from "zod";
import { byStatusOutput } from "../devices/schemas.js";
import { isoInstant } from "../../lib/iso-time.js";

const percent = () => z.coerce.number().min(0).max(100);

export const fleetHealthInput = z.object({
  cpuThreshold: percent().default(90).describe("CPU percent above which a device is under pressure"),
  memoryThreshold: percent().default(90).describe("memory percent above which a device is under pressure"),
  diskThreshold: percent().default(90).describe("disk percent above which a device is under pressure"),
  certificateDays: z.coerce.number().int().min(1).max(3650).default(30).describe("a certificate expiring within this many days is 'expiring soon'"),
});
export type FleetHealthInput = z.infer<typeof fleetHealthInput>;

const deviceRef = { deviceId: z.string(), name: z.string(), timestamp: z.string() };

export const fleetHealthOutput = z.object({
  generatedAt: z.string(),
  devices: z.object({ total: z.number().int(), byStatus: byStatusOutput }),
  resourcePressure: z.object({
    thresholds: z.object({ cpuUsagePercent: z.number(), memoryUsagePercent: z.number(), diskUsagePercent: z.number() }),
    /** devices whose latest snapshot is above at least one threshold */
    count: z.number().int(),
    /** the worst of them (at most 20), worst first */
    devices: z.array(z.object({
      ...deviceRef,
      cpuUsagePercent: z.number().nullable(),
      memoryUsagePercent: z.number().nullable(),
      diskUsagePercent: z.number().nullable(),
      over: z.array(z.enum(["cpu", "memory", "disk"])),
    })),
  }),
  failedContainers: z.object({
    /** devices whose latest snapshot reports failed containers */
    devices: z.number().int(),
    containers: z.number().int(),
    items: z.array(z.object({ ...deviceRef, containersFailed: z.number().int() })),
  }),
  certificates: z.object({
    expiringWithinDays: z.number().int(),
    /** devices whose newest valid certificate expires within that many days */
    expiringSoon: z.number().int(),
    /** devices whose newest unrevoked certificate has already expired */
    expired: z.number().int(),
  }),
  alerts: z.object({
    firing: z.number().int(),
    bySeverity: z.object({ info: z.number().int(), warning: z.number().int(), critical: z.number().int() }),
  }),
});

export const fleetSeriesInput = z.object({
  from: isoInstant.optional().describe("start of the range, ISO 8601 (default: 24 hours before `to`)"),
  to: isoInstant.optional().describe("end of the range, ISO 8601 (default: now)"),
  interval: z.enum(["5m", "1h", "1d"]).default("1h").describe("bucket size: 5m (5-minute rollups), 1h or 1d (hourly rollups)"),
  labels: z.string().max(8000).optional().describe("label selector key=value,key2=value2: only the devices carrying every pair (default: the whole fleet)"),
});
export type FleetSeriesInput = Omit<z.infer<typeof fleetSeriesInput>, "labels">;

export const fleetSeriesOutput = z.object({
  interval: z.string(),
  from: z.string(),
  to: z.string(),
  source: z.enum(["rollup-5m", "rollup-1h"]).describe("the per-device rollup the series was computed from"),
  data: z.array(z.object({
    /** bucket start */
    timestamp: z.string(),
    /** devices with at least one snapshot in the bucket */
    devicesReporting: z.number().int(),
    /** average over devices of each device's average CPU in the bucket; null when none reported CPU */
    cpuUsagePercentAvg: z.number().nullable(),
    /** 95th percentile (interpolated) over devices of each device's average CPU */
    cpuUsagePercentP95: z.number().nullable(),
    /** sum over devices of each device's highest count of failed containers in the bucket */
    containersFailed: z.number().int(),
    devicesWithFailedContainers: z.number().int(),
    computedAt: z.string().optional().describe(
      "whole-fleet series only (no `labels`): when this bucket's figures were computed from the rollups; a bucket still receiving data is recomputed every TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS (default 60), today's day bucket every TELEMETRY_FLEET_DAY_REFRESH_SECONDS (default 600)",
    ),
  })),
});
