// What a device is offered: the streams of its live sessions it has not joined yet, each with
// the one-use token of its leg. The long-poll hands an offer out once (again after
// REOFFER_SECONDS if the device did not join: its first try may have failed); the heartbeat
// lists every pending offer, as the fallback when the long-poll is not held.
import { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import type { Offer, RemoteKind } from "./schemas.js";
import { deviceLegToken } from "./tokens.js";

export const REOFFER_SECONDS = 10;
export const deviceStreamUrlOf = (sessionId: string) => `/api/v1/agent/remote-sessions/${sessionId}/stream`;

interface OfferRow {
  sessionId: string;
  connectionId: string;
  kind: string;
  expiresAt: Date;
  command: string[];
  tty: boolean;
  cols: number | null;
  rows: number | null;
  timeoutSeconds: number | null;
  target: { host: string; port: number } | null;
  path: string | null;
  size: bigint | null;
  mode: number | null;
  sha256: string | null;
  userId: string;
  email: string | null;
  name: string | null;
  reason: string | null;
}

/**
 * The device's pending offers. `handOut`: only those not handed out in the last
 * REOFFER_SECONDS, marked handed out now (the long-poll); otherwise all (the heartbeat).
 */
export async function pendingOffers(services: Services, deviceId: string, handOut: boolean): Promise<Offer[]> {
  // A stream's own deadline: its creation plus the session's join timeout.
  const pending = Prisma.sql`
    c."deviceId" = ${deviceId}::uuid AND c."deviceJoinedAt" IS NULL AND c."endedAt" IS NULL
    AND s."state" <> 'ended' AND c."createdAt" + (s."joinDeadline" - s."createdAt") > now()`;
  const rows = handOut
    ? await services.prisma.$queryRaw<OfferRow[]>`
        WITH picked AS (
          UPDATE "RemoteConnection" c SET "offeredAt" = now()
            FROM "RemoteSession" s
           WHERE s."id" = c."sessionId" AND ${pending}
             AND (c."offeredAt" IS NULL OR c."offeredAt" < now() - make_interval(secs => ${REOFFER_SECONDS}))
          RETURNING c."id", c."sessionId", c."createdAt"
        )
        SELECT ${offerColumns} FROM picked c JOIN "RemoteSession" s ON s."id" = c."sessionId" LEFT JOIN "User" u ON u."id" = s."userId"
         ORDER BY c."createdAt"`
    : await services.prisma.$queryRaw<OfferRow[]>`
        SELECT ${offerColumns} FROM "RemoteConnection" c JOIN "RemoteSession" s ON s."id" = c."sessionId" LEFT JOIN "User" u ON u."id" = s."userId"
         WHERE ${pending} ORDER BY c."createdAt" LIMIT 100`;
  return rows.map((r) => toOffer(services, r));
}

const offerColumns = Prisma.sql`
  s."id" AS "sessionId", c."id" AS "connectionId", s."kind", c."createdAt" + (s."joinDeadline" - s."createdAt") AS "expiresAt",
  s."command", s."tty", s."cols", s."rows", s."timeoutSeconds", s."target", s."path", s."size", s."mode", s."sha256",
  s."userId", u."email", u."name", s."reason"`;

function toOffer(services: Services, r: OfferRow): Offer {
  return {
    sessionId: r.sessionId,
    connectionId: r.connectionId,
    kind: r.kind as RemoteKind,
    token: deviceLegToken(services.jwtKey, r.connectionId),
    streamUrl: deviceStreamUrlOf(r.sessionId),
    expiresAt: new Date(r.expiresAt).toISOString(),
    command: r.command,
    tty: r.tty,
    cols: r.cols,
    rows: r.rows,
    timeoutSeconds: r.timeoutSeconds,
    target: r.target,
    path: r.path,
    size: r.size === null ? null : Number(r.size),
    mode: r.mode,
    sha256: r.sha256,
    user: { id: r.userId, email: r.email, name: r.name },
    reason: r.reason,
  };
}
