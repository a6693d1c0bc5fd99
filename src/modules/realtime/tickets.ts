// Tickets for the realtime WebSocket. Browsers cannot put headers on a WebSocket handshake,
// so a caller first asks for a ticket with its normal credentials and then opens
// /api/v1/realtime?ticket=... within TICKET_TTL_SECONDS. The ticket is random, stored only
// as its SHA-256 (in the database, so any process may accept it) and used once: consuming it
// is a single conditional UPDATE, so two processes can never both accept it.
import type { DbTx } from "../../db/client.js";
import { randomToken, sha256Hex } from "../../lib/crypto.js";
import { can, type Principal } from "../../trpc/principal.js";
import { forbidden } from "../../trpc/errors.js";

export const TICKET_TTL_SECONDS = 30;
const TICKET_PREFIX = "rt_";

/** What a connection may receive, and the permission each needs. */
export const REALTIME_CHANNELS = {
  devices: "devices:read",
  deployments: "deployments:read",
  alerts: "alerts:read",
} as const;
export type RealtimeChannel = keyof typeof REALTIME_CHANNELS;

export interface TicketHolder {
  organizationId: string;
  userId: string;
  apiKeyId: string | null;
  channels: RealtimeChannel[];
}

export async function issueTicket(db: DbTx, principal: Principal, now = new Date()) {
  const channels = (Object.keys(REALTIME_CHANNELS) as RealtimeChannel[]).filter((c) => can(principal, REALTIME_CHANNELS[c]));
  if (channels.length === 0) throw forbidden("The realtime channel needs at least one of devices:read, deployments:read, alerts:read");
  const ticket = randomToken(TICKET_PREFIX, 40);
  const expiresAt = new Date(now.getTime() + TICKET_TTL_SECONDS * 1000);
  const row = await db.realtimeTicket.create({
    data: {
      tokenHash: sha256Hex(ticket),
      organizationId: principal.organizationId,
      userId: principal.userId,
      apiKeyId: principal.apiKeyId,
      channels,
      expiresAt,
    },
    select: { id: true },
  });
  return { id: row.id, ticket, expiresAt: expiresAt.toISOString(), channels, url: `/api/v1/realtime?ticket=${ticket}` };
}

/** Marks the ticket used and answers its holder; null when unknown, used or expired. */
export async function consumeTicket(db: DbTx, ticket: string, now = new Date()): Promise<TicketHolder | null> {
  if (!ticket.startsWith(TICKET_PREFIX) || ticket.length > 100) return null;
  const rows = await db.$queryRaw<{ organizationId: string; userId: string; apiKeyId: string | null; channels: string[] }[]>`
    UPDATE "RealtimeTicket" SET "usedAt" = ${now.toISOString()}::timestamptz
     WHERE "tokenHash" = ${sha256Hex(ticket)} AND "usedAt" IS NULL AND "expiresAt" > ${now.toISOString()}::timestamptz
    RETURNING "organizationId", "userId", "apiKeyId", "channels"`;
  const row = rows[0];
  if (!row) return null;
  // Credentials were checked when the ticket was issued, seconds ago; the organization must still exist.
  const org = await db.organization.findUnique({ where: { id: row.organizationId }, select: { id: true } });
  if (!org) return null;
  return { ...row, channels: row.channels as RealtimeChannel[] };
}

/** Used and expired tickets are of no further use; the retention job deletes them. */
export async function pruneTickets(db: DbTx, now = new Date()): Promise<number> {
  const cutoff = new Date(now.getTime() - 3600_000);
  const { count } = await db.realtimeTicket.deleteMany({ where: { expiresAt: { lt: cutoff } } });
  return count;
}
