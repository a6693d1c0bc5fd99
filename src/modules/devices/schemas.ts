// The device resource, its activity entries and status breakdowns, and the mappers from
// database rows (Prisma models or rows of raw SQL) to these DTOs.
import { z } from "zod";
import type { DeviceStatus } from "../../lib/events.js";
import { labelsOf, labelsSchema } from "./labels.js";

export const DEVICE_STATUSES = ["pending", "provisioned", "online", "offline", "error"] as const satisfies readonly DeviceStatus[];
export const deviceStatus = z.enum(DEVICE_STATUSES);

const isoOrNull = z.string().datetime().nullable();

export const deviceOutput = z.object({
  id: z.string().uuid(),
  organizationId: z.string().uuid(),
  name: z.string(),
  reportedDeviceId: z.string().nullable(),
  /** false once the reported-device-id claim was released */
  claimActive: z.boolean(),
  status: deviceStatus,
  statusChangedAt: isoOrNull,
  /** why the device is in `error` (its heartbeat's message, or a failed deployment's); null in any other status */
  statusReason: z.string().nullable(),
  labels: z.record(z.string(), z.string()),
  os: z.string().nullable(),
  arch: z.string().nullable(),
  agentVersion: z.string().nullable(),
  hardwareModel: z.string().nullable(),
  ipAddress: z.string().nullable(),
  /** further facts the agent reported, free-form */
  facts: z.record(z.string(), z.unknown()),
  lastSeenAt: isoOrNull,
  enrolledAt: isoOrNull,
  /** pending: waits in the enrollment lobby (docs/admission.md); it heartbeats but gets nothing */
  admission: z.enum(["admitted", "pending"]),
  /** tpm: its key is held by a TPM the service attested at enrollment (docs/admission.md); null: a software key */
  attestation: z.enum(["tpm"]).nullable(),
  createdAt: z.string().datetime(),
  updatedAt: z.string().datetime(),
});
export type DeviceDto = z.infer<typeof deviceOutput>;

/** Spec "Group statistics": online, offline, pending, error are required; we add provisioned. */
export const byStatusOutput = z.object({
  online: z.number().int(),
  offline: z.number().int(),
  pending: z.number().int(),
  error: z.number().int(),
  provisioned: z.number().int(),
});
export type ByStatus = z.infer<typeof byStatusOutput>;

export function emptyByStatus(): ByStatus {
  return { online: 0, offline: 0, pending: 0, error: 0, provisioned: 0 };
}

/** Folds `(status, count)` rows into a breakdown that always has every status. */
export function byStatusOf(rows: Iterable<{ status: string; count: number | bigint }>): ByStatus {
  const out = emptyByStatus();
  for (const row of rows) {
    if (row.status in out) out[row.status as keyof ByStatus] += Number(row.count);
  }
  return out;
}

export const DEVICE_EVENT_TYPES = [
  "enrolled",
  "status_changed",
  "labels_changed",
  "updated",
  "claim_released",
  "certificate_issued",
  "certificate_renewed",
  "certificate_revoked",
  "deployment_joined",
  "deployment_left",
  "approved",
] as const;
export type DeviceEventType = (typeof DEVICE_EVENT_TYPES)[number];

export const deviceEventOutput = z.object({
  id: z.string().uuid(),
  deviceId: z.string().uuid(),
  type: z.enum(DEVICE_EVENT_TYPES),
  message: z.string(),
  data: z.record(z.string(), z.unknown()),
  actorType: z.enum(["user", "api_key", "device", "system"]),
  actorId: z.string().nullable(),
  createdAt: z.string().datetime(),
});
export type DeviceEventDto = z.infer<typeof deviceEventOutput>;

/** A device row as Prisma returns it, or as raw SQL returns it (times may arrive as strings). */
export interface DeviceRow {
  id: string;
  organizationId: string;
  name: string;
  reportedDeviceId: string | null;
  claimActive: boolean;
  status: string;
  statusChangedAt: Date | string | null;
  statusReason?: string | null;
  labels: unknown;
  os: string | null;
  arch: string | null;
  agentVersion: string | null;
  hardwareModel: string | null;
  ipAddress: string | null;
  facts: unknown;
  lastSeenAt: Date | string | null;
  enrolledAt: Date | string | null;
  /** absent in rows read before admission existed: admitted */
  admission?: string;
  attestation?: string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
}

export const iso = (v: Date | string) => (v instanceof Date ? v : new Date(v)).toISOString();
export const isoNullable = (v: Date | string | null | undefined) => (v == null ? null : iso(v));

const asRecord = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

export function toDeviceDto(row: DeviceRow): DeviceDto {
  return {
    id: row.id,
    organizationId: row.organizationId,
    name: row.name,
    reportedDeviceId: row.reportedDeviceId,
    claimActive: row.claimActive,
    status: (DEVICE_STATUSES as readonly string[]).includes(row.status) ? (row.status as DeviceStatus) : "error",
    statusChangedAt: isoNullable(row.statusChangedAt),
    statusReason: row.status === "error" ? (row.statusReason ?? null) : null,
    labels: labelsOf(row.labels),
    os: row.os,
    arch: row.arch,
    agentVersion: row.agentVersion,
    hardwareModel: row.hardwareModel,
    ipAddress: row.ipAddress,
    facts: asRecord(row.facts),
    lastSeenAt: isoNullable(row.lastSeenAt),
    enrolledAt: isoNullable(row.enrolledAt),
    admission: row.admission === "pending" ? "pending" : "admitted",
    attestation: row.attestation === "tpm" ? "tpm" : null,
    createdAt: iso(row.createdAt),
    updatedAt: iso(row.updatedAt),
  };
}

/** A row of a device's activity log, as the service reads it. */
export interface DeviceEventRow {
  id: string;
  deviceId: string;
  type: string;
  message: string;
  data: unknown;
  actorType: string;
  actorId: string | null;
  createdAt: Date | string;
}

export function toDeviceEventDto(row: DeviceEventRow): DeviceEventDto {
  return {
    id: row.id,
    deviceId: row.deviceId,
    type: row.type as DeviceEventType,
    message: row.message,
    data: asRecord(row.data),
    actorType: row.actorType as DeviceEventDto["actorType"],
    actorId: row.actorId,
    createdAt: iso(row.createdAt),
  };
}

export { labelsSchema };
