// Sessions whose credentials went away end at once: the device's certificate its leg joined
// with was revoked (or expired), the sign-in session it was opened from ended (sign-out,
// "end my other sessions", a password change, a removed membership, a disabled user), or the
// API key it was opened with was revoked. Credentials are revoked in many places; rather than
// each of them knowing about remote access, the processes holding live streams look, in one
// statement, every REVOCATION_CHECK_MS (nothing is asked while a process holds no stream).
import { Prisma } from "../../generated/prisma/client.js";
import type { Services } from "../../services.js";
import { endSessionsWhere } from "./lifecycle.js";
import { remoteRelayOf } from "./relay.js";

export const REVOCATION_CHECK_MS = 1000;

/** Ends those of `sessionIds` whose credentials are gone, each with its reason. */
export async function endRevoked(services: Services, sessionIds: string[]): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const ids = Prisma.sql`s."id" IN (${Prisma.join(sessionIds.map((id) => Prisma.sql`${id}::uuid`))})`;
  const certificate = await endSessionsWhere(services, Prisma.sql`${ids} AND EXISTS (
      SELECT 1 FROM "RemoteConnection" c JOIN "DeviceCertificate" dc ON dc."id" = c."deviceCertificateId"
       WHERE c."sessionId" = s."id" AND (dc."revoked" OR dc."notAfter" <= now()))`,
    "certificate-revoked", undefined, { message: "the device's certificate was revoked" });
  const user = await endSessionsWhere(services, Prisma.sql`${ids} AND (
      EXISTS (SELECT 1 FROM "Session" a WHERE a."id" = s."authSessionId" AND (a."revokedAt" IS NOT NULL OR a."expiresAt" <= now()))
      OR EXISTS (SELECT 1 FROM "ApiKey" k WHERE k."id" = s."apiKeyId" AND k."revokedAt" IS NOT NULL))`,
    "user-signed-out", undefined, { message: "the user's sign-in session (or API key) has ended" });
  return [...certificate, ...user];
}

/** The periodic look of this process at the sessions it relays; returns the stop. */
export function subscribeToEndings(services: Services): () => void {
  const relay = remoteRelayOf(services);
  let running = false;
  const timer = setInterval(() => {
    if (running || relay.streams.size === 0) return;
    running = true;
    const ids = [...new Set([...relay.streams.values()].map((s) => s.session.id))];
    endRevoked(services, ids)
      .catch((err: Error) => services.logger.warn({ err: err.message }, "remote session credential check failed"))
      .finally(() => (running = false));
  }, REVOCATION_CHECK_MS);
  timer.unref();
  return () => clearInterval(timer);
}
