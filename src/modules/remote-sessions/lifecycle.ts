// A session's moves after it was opened: started (both legs of its first stream joined) and
// ended, whatever ends it (the stream's end, a close, a refusal, a timeout, a revoked
// certificate, a sign-out, the service stopping). Each move is one conditional UPDATE, so that
// of two processes racing to end a session exactly one writes the end and its audit entry;
// then the "ended" signal closes the session's legs in every process.
import { Prisma } from "../../generated/prisma/client.js";
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import { maskSecrets } from "../../trpc/audit.js";
import type { RequestInfo } from "../../trpc/context.js";
import type { EndReason } from "./schemas.js";
import { remoteSignalsOf } from "./signals.js";

export const AUDIT_ENTITY = "remote-session";
export const AUDIT = {
  requested: "remote-session.requested",
  started: "remote-session.started",
  ended: "remote-session.ended",
  refused: "remote-session.refused",
} as const;

export interface Actor {
  type: "user" | "api_key" | "device" | "system";
  id: string | null;
  userId?: string | null;
}

interface EndedRow {
  id: string;
  organizationId: string;
  deviceId: string;
  userId: string;
  kind: string;
  endReason: string;
  bytesToDevice: bigint;
  bytesFromDevice: bigint;
  exitCode: number | null;
  startedAt: Date | null;
  endedAt: Date;
}

export interface EndDetails {
  exitCode?: number | null;
  /** counted by the relay of the session's stream, added to what is stored */
  bytesToDevice?: number;
  bytesFromDevice?: number;
  /** said to the user's leg on channel 3 as { error } before it closes */
  message?: string;
}

/**
 * Ends the live sessions `condition` selects (a SQL condition on "RemoteSession" s) with
 * `reason`; one audit entry each; the legs everywhere are closed. Answers the ended ids.
 */
export async function endSessionsWhere(
  services: Services,
  condition: Prisma.Sql,
  reason: EndReason,
  actor: Actor = { type: "system", id: null },
  details: EndDetails = {},
  request: RequestInfo | null = null,
  db: DbTx = services.prisma,
): Promise<string[]> {
  const rows = await db.$queryRaw<EndedRow[]>`
    UPDATE "RemoteSession" s SET
      "state" = 'ended', "endReason" = ${reason}, "endedAt" = now(), "endMessage" = ${details.message?.slice(0, 1000) ?? null},
      "exitCode" = COALESCE(${details.exitCode ?? null}::int, s."exitCode"),
      "bytesToDevice" = s."bytesToDevice" + ${details.bytesToDevice ?? 0}::bigint,
      "bytesFromDevice" = s."bytesFromDevice" + ${details.bytesFromDevice ?? 0}::bigint
     WHERE s."state" <> 'ended' AND ${condition}
    RETURNING s."id", s."organizationId", s."deviceId", s."userId", s."kind", s."endReason", s."bytesToDevice", s."bytesFromDevice",
              s."exitCode", s."startedAt", s."endedAt"`;
  if (rows.length === 0) return [];
  await db.remoteConnection.updateMany({ where: { sessionId: { in: rows.map((r) => r.id) }, endedAt: null }, data: { endedAt: new Date() } });
  await db.auditEntry.createMany({
    data: rows.map((r) => ({
      organizationId: r.organizationId,
      actorType: actor.type,
      actorId: actor.id,
      userId: actor.userId ?? null,
      action: reason === "device-refused" ? AUDIT.refused : AUDIT.ended,
      entityType: AUDIT_ENTITY,
      entityId: r.id,
      outcome: "success",
      changes: maskSecrets({
        deviceId: r.deviceId, userId: r.userId, kind: r.kind, endReason: r.endReason,
        bytesToDevice: Number(r.bytesToDevice), bytesFromDevice: Number(r.bytesFromDevice), exitCode: r.exitCode,
        startedAt: r.startedAt?.toISOString() ?? null, endedAt: r.endedAt.toISOString(),
      }) as object,
      message: details.message?.slice(0, 1000) ?? null,
      sourceIp: request?.sourceIp ?? null,
      userAgent: request?.userAgent ?? null,
      requestId: request?.requestId ?? null,
    })),
  });
  // Inside a caller's transaction the caller announces once it committed (announceEnded).
  if (db === services.prisma) announceEnded(services, rows.map((r) => r.id), reason, details.message);
  return rows.map((r) => r.id);
}

/** Closes the sessions' legs in every process (after the end was committed). */
export function announceEnded(services: Services, ids: string[], reason: EndReason, message?: string) {
  const signals = remoteSignalsOf(services);
  for (const id of ids) signals.publish({ type: "ended", sessionId: id, reason, ...(message ? { message: message.slice(0, 500) } : {}) });
}

export function endSession(services: Services, sessionId: string, reason: EndReason, actor?: Actor, details?: EndDetails, request?: RequestInfo | null) {
  return endSessionsWhere(services, Prisma.sql`s."id" = ${sessionId}::uuid`, reason, actor, details, request ?? null);
}

/** Both legs of the first stream are there: pending -> active, once, with its audit entry. */
export async function markStarted(services: Services, sessionId: string): Promise<boolean> {
  const rows = await services.prisma.$queryRaw<{ organizationId: string; deviceId: string; userId: string; kind: string }[]>`
    UPDATE "RemoteSession" SET "state" = 'active', "startedAt" = now(), "lastActivityAt" = now()
     WHERE "id" = ${sessionId}::uuid AND "state" = 'pending'
    RETURNING "organizationId", "deviceId", "userId", "kind"`;
  const row = rows[0];
  if (!row) return false;
  await services.prisma.auditEntry.create({
    data: {
      organizationId: row.organizationId, actorType: "device", actorId: row.deviceId, userId: row.userId,
      action: AUDIT.started, entityType: AUDIT_ENTITY, entityId: sessionId, outcome: "success",
      changes: { deviceId: row.deviceId, userId: row.userId, kind: row.kind },
    },
  });
  return true;
}

/** What a relay counted on a stream of a session that goes on (port-forward), added to the stored counts. */
export async function addCounts(services: Services, sessionId: string, toDevice: number, fromDevice: number, exitCode?: number | null) {
  if (!toDevice && !fromDevice && exitCode == null) return;
  await services.prisma.$executeRaw`
    UPDATE "RemoteSession" SET "bytesToDevice" = "bytesToDevice" + ${toDevice}::bigint, "bytesFromDevice" = "bytesFromDevice" + ${fromDevice}::bigint,
           "exitCode" = COALESCE(${exitCode ?? null}::int, "exitCode")
     WHERE "id" = ${sessionId}::uuid`;
}

/** Live sessions past a deadline (join, absolute, idle), ended in one statement per reason: the safety net behind the relays' own timers. */
export async function sweepExpired(services: Services): Promise<number> {
  const joined = await endSessionsWhere(services, Prisma.sql`s."state" = 'pending' AND s."joinDeadline" <= now()`, "device-never-joined");
  const expired = await endSessionsWhere(services, Prisma.sql`s."expiresAt" <= now()`, "max-duration");
  const idle = await endSessionsWhere(
    services,
    Prisma.sql`s."state" = 'active' AND s."lastActivityAt" + make_interval(secs => s."idleTimeoutSeconds") <= now()`,
    "idle-timeout",
  );
  return joined.length + expired.length + idle.length;
}
