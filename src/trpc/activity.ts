// When something was last used or active, for the people who read it: an API key's and a
// session's lastUsedAt, a user's lastActivityAt (their last request in a session) and an
// organization's lastActivityAt (the last request of anyone or anything in it: a member's, an
// API key's, a device's). Written beside the request, never awaited by it, and at most once a
// minute per record in each process: a busy caller costs a write a minute, not one a request.
import type { Services } from "../services.js";
import { perService } from "../lib/per-service.js";

/** A record's time of use is written at most this often (per process). */
export const ACTIVITY_WRITE_INTERVAL_MS = 60_000;
const MAX_REMEMBERED = 10_000;

const writtenOf = perService((_services: Services) => new Map<string, number>());

/** Whether the use of `record` is to be written now (remembered as written if so). */
function due(services: Services, record: string, now: number): boolean {
  const written = writtenOf(services);
  if ((written.get(record) ?? 0) > now - ACTIVITY_WRITE_INTERVAL_MS) return false;
  if (written.size > MAX_REMEMBERED) written.clear();
  written.set(record, now);
  return true;
}

/** Runs `write` (not awaited by the request) when `record` is due; a failure is logged. */
function touch(services: Services, record: string, what: string, write: (at: Date) => Promise<unknown>): void {
  const now = Date.now();
  if (!due(services, record, now)) return;
  write(new Date(now)).catch((err: Error) => services.logger.warn({ err: err.message }, `could not record ${what}`));
}

/** An API key was used (its lastUsedAt), and so its organization. */
export function touchApiKey(services: Services, keyId: string, organizationId: string): void {
  touch(services, `key:${keyId}`, "API key use", (at) => services.prisma.apiKey.update({ where: { id: keyId }, data: { lastUsedAt: at } }));
  touchOrganization(services, organizationId);
}

/** A session was used: its lastUsedAt, its user's lastActivityAt, and the organization it acts in. */
export function touchSession(services: Services, sessionId: string, userId: string, organizationId: string): void {
  touch(services, `session:${sessionId}`, "session use", (at) =>
    Promise.all([
      services.prisma.session.update({ where: { id: sessionId }, data: { lastUsedAt: at } }),
      services.prisma.user.update({ where: { id: userId }, data: { lastActivityAt: at } }),
    ]),
  );
  touchOrganization(services, organizationId);
}

/**
 * Something acted in the organization (Platform → Organizations, "Last activity"). The
 * statement leaves updatedAt alone (activity is no change to the organization) and never
 * moves the time back (another process may have written a later one).
 */
export function touchOrganization(services: Services, organizationId: string): void {
  touch(services, `organization:${organizationId}`, "organization activity", () => services.prisma.$executeRaw`
    UPDATE "Organization" SET "lastActivityAt" = (now() AT TIME ZONE 'UTC')
     WHERE id = ${organizationId}::uuid AND ("lastActivityAt" IS NULL OR "lastActivityAt" < (now() AT TIME ZONE 'UTC'))`);
}
