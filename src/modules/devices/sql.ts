// SQL fragments shared by the device list and the group statistics. Everything user-given
// travels as a bind parameter (Prisma.sql tagged templates); identifiers come only from the
// fixed maps below, never from input.
import { Prisma } from "../../generated/prisma/client.js";
import type { Labels } from "./labels.js";
import { utcTimestamp } from "../../db/driver-reads.js";

/** `labels @> {...}`: served by the GIN index on Device.labels. `{}` matches everything. */
export function selectorCondition(selector: Labels, alias = "d"): Prisma.Sql {
  if (Object.keys(selector).length === 0) return Prisma.sql`TRUE`;
  return Prisma.sql`${Prisma.raw(alias)}."labels" @> ${JSON.stringify(selector)}::jsonb`;
}

export function organizationCondition(organizationId: string, alias = "d"): Prisma.Sql {
  return Prisma.sql`${Prisma.raw(alias)}."organizationId" = ${organizationId}::uuid`;
}

export function and(conditions: Prisma.Sql[]): Prisma.Sql {
  return conditions.length === 0 ? Prisma.sql`TRUE` : Prisma.join(conditions, " AND ");
}

/**
 * The columns a device DTO needs, in the shape toDeviceDto expects; timestamps as UTC
 * instants, so the same list serves Prisma's $queryRaw and the driver (src/db/driver-reads.ts).
 */
export const DEVICE_COLUMNS = Prisma.raw(
  [
    `d."id", d."organizationId", d."name", d."reportedDeviceId", d."claimActive", d."status"`,
    `d."labels", d."os", d."arch", d."agentVersion", d."hardwareModel", d."ipAddress", d."facts"`,
    ...["statusChangedAt", "lastSeenAt", "enrolledAt", "createdAt", "updatedAt"].map((c) => utcTimestamp("d", c)),
  ].join(", "),
);

// Prisma stores DateTime in `timestamp(3)` columns as UTC. `now()` is a timestamptz that
// PostgreSQL would convert with the session's TimeZone, so raw SQL converts explicitly.
/**
 * The architecture a device reported, named as manifests name it (x86_64 -> amd64, aarch64 ->
 * arm64, armv7l -> arm); NULL when it has not reported one. Deployments decide eligibility
 * with it and op 12 counts by it, so the console's preview and the service agree.
 */
export const NORMALIZED_ARCH = Prisma.raw(`CASE lower(d."arch")
  WHEN 'x86_64' THEN 'amd64' WHEN 'x64' THEN 'amd64' WHEN 'aarch64' THEN 'arm64' WHEN 'armv8' THEN 'arm64'
  WHEN 'armv7l' THEN 'arm' WHEN 'armv7' THEN 'arm' WHEN 'armhf' THEN 'arm' WHEN 'armv6l' THEN 'arm'
  ELSE lower(d."arch") END`);

export const UTC_NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);

export function utc(date: Date): Prisma.Sql {
  return Prisma.sql`(${date.toISOString()}::timestamptz AT TIME ZONE 'UTC')`;
}
