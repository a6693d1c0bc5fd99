// SQL fragments shared by the device list and the group statistics. Everything user-given
// travels as a bind parameter (Prisma.sql tagged templates); identifiers come only from the
// fixed maps below, never from input.
import { Prisma } from "../../generated/prisma/client.js";
import type { Labels } from "./labels.js";
import { utcTimestamp } from "../../db/driver-reads.js";
import { REPORTED_ARCHITECTURES } from "../groups/architectures.js";

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
    `d."id", d."organizationId", d."name", d."reportedDeviceId", d."claimActive", d."status", d."statusReason"`,
    `d."labels", d."os", d."arch", d."agentVersion", d."hardwareModel", d."ipAddress", d."facts", d."admission", d."attestation"`,
    ...["statusChangedAt", "lastSeenAt", "enrolledAt", "createdAt", "updatedAt"].map((c) => utcTimestamp("d", c)),
  ].join(", "),
);

// Prisma stores DateTime in `timestamp(3)` columns as UTC. `now()` is a timestamptz that
// PostgreSQL would convert with the session's TimeZone, so raw SQL converts explicitly.
/**
 * The architecture a device reported, named as manifests name it (x86_64 -> amd64, aarch64 ->
 * arm64, armv7l and armv7 -> arm: REPORTED_ARCHITECTURES, the table the console shows); NULL
 * when it has not reported one. Deployments decide eligibility with it and op 12 counts by it,
 * so the console's preview and the service agree.
 */
export const NORMALIZED_ARCH = Prisma.raw(`CASE lower(d."arch")
  ${Object.entries(REPORTED_ARCHITECTURES).flatMap(([arch, reported]) => reported.map((r) => `WHEN '${r}' THEN '${arch}'`)).join(" ")}
  ELSE lower(d."arch") END`);

/**
 * The rule that decides whether a device can run a profile: every device when the profile names
 * no architecture, else those whose normalised architecture it names (a device that has not
 * reported one cannot). Deployments freeze their targets with it; `POST /groups/eligibility`
 * counts with it.
 */
export function architectureEligible(architectures: readonly string[] | null | undefined): Prisma.Sql {
  if (!architectures) return Prisma.sql`TRUE`;
  return Prisma.sql`coalesce(${JSON.stringify(architectures)}::jsonb ? (${NORMALIZED_ARCH}), FALSE)`;
}

/**
 * Whether a device can take a system image: its agent reports RAUC (fact `rauc`,
 * docs/os-updates.md). Deployments of a profile with a system-image component skip the others;
 * `POST /groups/eligibility` counts them by the same rule.
 */
export function raucEligible(systemImage: boolean): Prisma.Sql {
  return systemImage ? Prisma.sql`coalesce(d."facts"->'rauc' = 'true'::jsonb, FALSE)` : Prisma.sql`TRUE`;
}

/**
 * A device that is offline now: seen once, then no heartbeat for three heartbeat intervals
 * (offline detection, ./offline.ts, marks it so; the device list shows the same status). Staged
 * rollouts draw their canary from the other devices and count these apart; the deployment
 * form's eligibility read counts them by the same rule.
 */
export function deviceOffline(alias = "d"): Prisma.Sql {
  return Prisma.sql`(${Prisma.raw(alias)}."status" = 'offline')`;
}

export const UTC_NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);

export function utc(date: Date): Prisma.Sql {
  return Prisma.sql`(${date.toISOString()}::timestamptz AT TIME ZONE 'UTC')`;
}
