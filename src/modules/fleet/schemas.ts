// The fleet health summary: one answer for a dashboard's first screen.
import { z } from "zod";
import { byStatusOutput } from "../devices/schemas.js";

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
