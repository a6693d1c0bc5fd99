// What a device's operating system runs (docs/os-updates.md): the agent reports, after each boot,
// the RAUC slot it booted, that slot's image (version, bundle digest, image digest), the other
// slot's, and how its last system update ended. The service keeps it on DeviceSystem (one row per
// device, written only when the report changed) and each finished update on DeviceSystemUpdate
// (the device's history); a deployment of a system image is judged by it (deployments/agent-state.ts).
import { z } from "zod";
import type { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import { notFound } from "../../trpc/errors.js";
import { iso, isoNullable } from "./schemas.js";

const digest = z.string().regex(/^sha256:[0-9a-f]{64}$/, "sha256:<64 hex digits>");
const slot = z.string().trim().min(1).max(100);
const version = z.string().trim().min(1).max(256);
export const SYSTEM_UPDATE_OUTCOMES = ["committed", "rolled-back", "failed"] as const;

/** The heartbeat's `system` (agent -> service). */
export const systemReport = z.object({
  bootedSlot: slot.describe("the slot the bootloader booted (its bootname)"),
  booted: z.object({
    version: version.nullish().describe("the version RAUC installed into the booted slot"),
    digest: digest.nullish().describe("sha256 of the RAUC bundle that installed the booted slot (the component's digest); absent when no update of the agent installed it"),
    imageDigest: digest.nullish().describe("sha256 of the image RAUC wrote into the booted slot"),
  }),
  other: z.object({
    slot,
    version: version.nullish(),
    digest: digest.nullish(),
    imageDigest: digest.nullish(),
  }).nullish().describe("the other slot of the same class (the one an update writes)"),
  lastUpdate: z.object({
    digest: digest.describe("sha256 of the update's RAUC bundle"),
    fromVersion: version.nullish(),
    toVersion: version.nullish(),
    fromSlot: slot.nullish(),
    toSlot: slot.nullish(),
    outcome: z.enum(SYSTEM_UPDATE_OUTCOMES).describe("committed: booted and marked good after its health checks; rolled-back: the bootloader runs the previous slot again; failed: refused or broken before a reboot"),
    reason: z.string().max(2000).nullish().describe("why it rolled back or failed (the agent's words)"),
    startedAt: z.string().datetime(),
    finishedAt: z.string().datetime(),
  }).nullish().describe("the last finished system update (one in progress is in the facts osUpdate.*)"),
}).describe("the operating system the device booted (a device with RAUC; docs/os-updates.md)");
export type SystemReport = z.infer<typeof systemReport>;

const slotOutput = z.object({
  slot: z.string().nullable(),
  version: z.string().nullable(),
  digest: z.string().nullable().describe("sha256 of the RAUC bundle that installed it, when the agent did"),
  imageDigest: z.string().nullable(),
});

/** `system` of GET /devices/{id}. */
export const deviceSystemOutput = z.object({
  booted: slotOutput.describe("what runs: the booted slot"),
  other: slotOutput.describe("the other slot (the fallback after an update, or the next update's target)"),
  lastUpdate: z.object({
    outcome: z.enum(SYSTEM_UPDATE_OUTCOMES),
    reason: z.string().nullable(),
    version: z.string().nullable(),
    digest: z.string().nullable(),
  }).nullable(),
  reportedAt: z.string().datetime(),
}).nullable().describe("the operating system as the agent reported it after its last boot; null: the device has not reported one (no RAUC)");

export const systemUpdateOutput = z.object({
  id: z.string().uuid(),
  digest: z.string(),
  fromVersion: z.string().nullable(),
  toVersion: z.string().nullable(),
  fromSlot: z.string().nullable(),
  toSlot: z.string().nullable(),
  outcome: z.enum(SYSTEM_UPDATE_OUTCOMES),
  reason: z.string().nullable(),
  startedAt: z.string().datetime(),
  finishedAt: z.string().datetime(),
});

/**
 * Stores a device's system report: its DeviceSystem row (only when something in it changed) and
 * its last update in the history (once: the agent repeats it, at least every 10th heartbeat). One statement.
 */
export async function recordSystemReport(db: Pick<DbTx, "$executeRaw">, device: { id: string; organizationId: string }, report: SystemReport): Promise<void> {
  const last = report.lastUpdate ?? null;
  const row = {
    bootedSlot: report.bootedSlot, bootedVersion: report.booted.version ?? null, bootedDigest: report.booted.digest ?? null,
    bootedImageDigest: report.booted.imageDigest ?? null, otherSlot: report.other?.slot ?? null, otherVersion: report.other?.version ?? null,
    otherDigest: report.other?.digest ?? null, otherImageDigest: report.other?.imageDigest ?? null,
    lastOutcome: last?.outcome ?? null, lastReason: last?.reason?.slice(0, 2000) ?? null, lastVersion: last?.toVersion ?? null, lastDigest: last?.digest ?? null,
  };
  const update = last ? { ...last, startedAt: last.startedAt.replace("Z", ""), finishedAt: last.finishedAt.replace("Z", ""), reason: last.reason?.slice(0, 2000) ?? null } : null;
  await db.$executeRaw`
    WITH r AS (
      SELECT * FROM jsonb_to_record(${JSON.stringify(row)}::jsonb) AS x(
        "bootedSlot" text, "bootedVersion" text, "bootedDigest" text, "bootedImageDigest" text, "otherSlot" text, "otherVersion" text,
        "otherDigest" text, "otherImageDigest" text, "lastOutcome" text, "lastReason" text, "lastVersion" text, "lastDigest" text)
    ), history AS (
      INSERT INTO "DeviceSystemUpdate" ("organizationId", "deviceId", "digest", "fromVersion", "toVersion", "fromSlot", "toSlot", "outcome", "reason", "startedAt", "finishedAt")
      SELECT ${device.organizationId}::uuid, ${device.id}::uuid, u."digest", u."fromVersion", u."toVersion", u."fromSlot", u."toSlot", u."outcome", u."reason", u."startedAt", u."finishedAt"
        FROM jsonb_to_recordset(${JSON.stringify(update ? [update] : [])}::jsonb) AS u(
          "digest" text, "fromVersion" text, "toVersion" text, "fromSlot" text, "toSlot" text, "outcome" text, "reason" text, "startedAt" timestamp, "finishedAt" timestamp)
      ON CONFLICT ("deviceId", "digest", "startedAt") DO NOTHING
    )
    INSERT INTO "DeviceSystem" ("deviceId", "organizationId", "bootedSlot", "bootedVersion", "bootedDigest", "bootedImageDigest", "otherSlot", "otherVersion",
                                "otherDigest", "otherImageDigest", "lastOutcome", "lastReason", "lastVersion", "lastDigest", "reportedAt")
    SELECT ${device.id}::uuid, ${device.organizationId}::uuid, r.*, (now() AT TIME ZONE 'UTC') FROM r
    ON CONFLICT ("deviceId") DO UPDATE SET
      "bootedSlot" = EXCLUDED."bootedSlot", "bootedVersion" = EXCLUDED."bootedVersion", "bootedDigest" = EXCLUDED."bootedDigest",
      "bootedImageDigest" = EXCLUDED."bootedImageDigest", "otherSlot" = EXCLUDED."otherSlot", "otherVersion" = EXCLUDED."otherVersion",
      "otherDigest" = EXCLUDED."otherDigest", "otherImageDigest" = EXCLUDED."otherImageDigest", "lastOutcome" = EXCLUDED."lastOutcome",
      "lastReason" = EXCLUDED."lastReason", "lastVersion" = EXCLUDED."lastVersion", "lastDigest" = EXCLUDED."lastDigest", "reportedAt" = EXCLUDED."reportedAt"
    WHERE ("DeviceSystem"."bootedSlot", "DeviceSystem"."bootedVersion", "DeviceSystem"."bootedDigest", "DeviceSystem"."bootedImageDigest",
           "DeviceSystem"."otherSlot", "DeviceSystem"."otherVersion", "DeviceSystem"."otherDigest", "DeviceSystem"."otherImageDigest",
           "DeviceSystem"."lastOutcome", "DeviceSystem"."lastReason", "DeviceSystem"."lastVersion", "DeviceSystem"."lastDigest")
      IS DISTINCT FROM
          (EXCLUDED."bootedSlot", EXCLUDED."bootedVersion", EXCLUDED."bootedDigest", EXCLUDED."bootedImageDigest",
           EXCLUDED."otherSlot", EXCLUDED."otherVersion", EXCLUDED."otherDigest", EXCLUDED."otherImageDigest",
           EXCLUDED."lastOutcome", EXCLUDED."lastReason", EXCLUDED."lastVersion", EXCLUDED."lastDigest")`;
}

type SystemRow = Prisma.DeviceSystemGetPayload<object>;

export function toSystemDto(row: SystemRow | null): z.infer<typeof deviceSystemOutput> {
  if (!row) return null;
  return {
    booted: { slot: row.bootedSlot, version: row.bootedVersion, digest: row.bootedDigest, imageDigest: row.bootedImageDigest },
    other: { slot: row.otherSlot, version: row.otherVersion, digest: row.otherDigest, imageDigest: row.otherImageDigest },
    lastUpdate: row.lastOutcome
      ? { outcome: row.lastOutcome as (typeof SYSTEM_UPDATE_OUTCOMES)[number], reason: row.lastReason, version: row.lastVersion, digest: row.lastDigest }
      : null,
    reportedAt: iso(row.reportedAt),
  };
}

/** The system a device reported (the device itself is checked by the caller). */
export async function deviceSystemOf(db: DbTx, organizationId: string, deviceId: string) {
  return toSystemDto(await db.deviceSystem.findFirst({ where: { deviceId, organizationId } }));
}

/** A device's system updates, newest first; 404 for a device of another organization. */
export async function listSystemUpdates(db: DbTx, organizationId: string, deviceId: string, page: { limit: number; offset: number }) {
  const device = await db.device.findFirst({ where: { id: deviceId, organizationId }, select: { id: true } });
  if (!device) throw notFound("Device");
  const where = { deviceId, organizationId };
  const [rows, total] = await Promise.all([
    db.deviceSystemUpdate.findMany({ where, orderBy: [{ finishedAt: "desc" }, { id: "desc" }], take: page.limit, skip: page.offset }),
    db.deviceSystemUpdate.count({ where }),
  ]);
  return {
    rows: rows.map((r) => ({
      id: r.id, digest: r.digest, fromVersion: r.fromVersion, toVersion: r.toVersion, fromSlot: r.fromSlot, toSlot: r.toSlot,
      outcome: r.outcome as (typeof SYSTEM_UPDATE_OUTCOMES)[number], reason: r.reason, startedAt: iso(r.startedAt), finishedAt: isoNullable(r.finishedAt)!,
    })),
    total,
  };
}
