// The heartbeat write path: one statement per heartbeat, committed asynchronously. It re-checks the caller's
// certificate (unrevoked, unexpired, organization active), locks the device row, marks it
// online (or error), records facts and lastSeenAt, and, only when the status changed, writes
// the activity entry, all in that one statement. No read-modify-write race: the previous
// status is read under the row lock of the same statement.
import type { RawDatabase } from "../../db/adapters.js";
import { Prisma } from "../../generated/prisma/client.js";
import type { DevicePrincipal } from "../../trpc/device-auth.js";
import { UTC_NOW } from "../devices/sql.js";
import type { DeviceStatus } from "../../lib/events.js";
import { splitFacts, type Facts } from "./schemas.js";

export interface HeartbeatWrite {
  status: "online" | "error";
  facts?: Facts;
}

export interface HeartbeatResult {
  previous: DeviceStatus;
  current: DeviceStatus;
}

/**
 * null when the device or its certificate is no longer valid (deleted, revoked, expired).
 * Runs on the driver directly (`database.opened.raw`, the same pool or PGlite instance
 * Prisma uses), not through Prisma: on this path Prisma's per-query compilation was a large
 * share of the CPU a heartbeat costs (docs/benchmarks.md). The statement is still a
 * parameterized tagged template.
 */
export async function recordHeartbeat(raw: RawDatabase, device: DevicePrincipal, input: HeartbeatWrite, sourceIp: string | null): Promise<HeartbeatResult | null> {
  const { named, rest } = splitFacts(input.facts);
  // Facts replace the previous free-form facts when the agent sends any; named facts
  // (columns) change only when reported.
  const factsJson = input.facts ? JSON.stringify(rest) : null;
  const statement = Prisma.sql`
    WITH async_commit AS (
      -- This statement's own transaction commits without waiting for the WAL flush: a crash
      -- may lose the last fraction of a second of heartbeats (the next ones redo them), never
      -- half of one. Measured on PostgreSQL 15 here: 3-4 ms -> 0.1-0.4 ms per heartbeat
      -- (docs/benchmarks.md). Local to this statement's transaction; nothing else is affected.
      SELECT set_config('synchronous_commit', 'off', true) AS "setting"
    ), prev AS (
      SELECT d."id", d."status" FROM "Device" d
       WHERE d."id" = ${device.deviceId}::uuid AND d."organizationId" = ${device.organizationId}::uuid
         AND EXISTS (SELECT 1 FROM async_commit a WHERE a."setting" = 'off')
         AND EXISTS (SELECT 1 FROM "DeviceCertificate" c
                      WHERE c."fingerprint" = ${device.fingerprint} AND c."deviceId" = d."id"
                        AND NOT c."revoked" AND c."notAfter" > ${UTC_NOW})
         AND EXISTS (SELECT 1 FROM "Organization" o WHERE o."id" = d."organizationId" AND o."status" = 'active')
       FOR UPDATE OF d
    ), upd AS (
      UPDATE "Device" d SET
        "status" = ${input.status},
        "statusChangedAt" = CASE WHEN p."status" = ${input.status} THEN d."statusChangedAt" ELSE ${UTC_NOW} END,
        "updatedAt" = CASE WHEN p."status" = ${input.status} THEN d."updatedAt" ELSE ${UTC_NOW} END,
        "lastSeenAt" = ${UTC_NOW},
        "os" = COALESCE(${named.os ?? null}::text, d."os"),
        "arch" = COALESCE(${named.arch ?? null}::text, d."arch"),
        "agentVersion" = COALESCE(${named.agentVersion ?? null}::text, d."agentVersion"),
        "hardwareModel" = COALESCE(${named.hardwareModel ?? null}::text, d."hardwareModel"),
        "ipAddress" = COALESCE(${named.ipAddress ?? sourceIp}::text, d."ipAddress"),
        "facts" = COALESCE(${factsJson}::jsonb, d."facts")
      FROM prev p
      WHERE d."id" = p."id"
      RETURNING d."id", d."organizationId", p."status" AS "previous", d."status" AS "current"
    ), logged AS (
      INSERT INTO "DeviceEvent" ("organizationId", "deviceId", "type", "message", "data", "actorType", "actorId", "createdAt")
      SELECT u."organizationId", u."id", 'status_changed', 'Status changed from ' || u."previous" || ' to ' || u."current",
             jsonb_build_object('from', u."previous", 'to', u."current", 'reason', 'heartbeat'), 'device', u."id"::text, ${UTC_NOW}
        FROM upd u WHERE u."previous" <> u."current"
      RETURNING 1
    )
    SELECT "previous", "current" FROM upd`;
  const rows = await raw.query<HeartbeatResult>(statement.text, statement.values);
  return rows[0] ?? null;
}
