// Reading the outbox's delivery state (never the sealed bodies): the whole outbox for Super
// Admins, and the latest mail of each invitation for the invitations' pages.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { Config } from "../../config.js";
import { toMailDeliveryDto, type OutboxRow, type MailStatus } from "./schemas.js";

const withoutBody = { bodySealed: true } as const;

export async function listOutbox(db: DbTx, query: { limit: number; offset: number; status?: MailStatus; to?: string }) {
  const where: Prisma.MailOutboxWhereInput = {
    ...(query.status ? { status: query.status } : {}),
    ...(query.to ? { to: query.to.toLowerCase() } : {}),
  };
  const [items, total] = await Promise.all([
    db.mailOutbox.findMany({ where, omit: withoutBody, orderBy: [{ createdAt: "desc" }, { id: "asc" }], take: query.limit, skip: query.offset }),
    db.mailOutbox.count({ where }),
  ]);
  return { items, total };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The delivery state of one message the mailer accepted; null when it is not in the outbox (another mailer is plugged in). */
export async function mailStateOf(db: DbTx, config: Pick<Config, "SMTP_URL" | "MAIL_MAX_ATTEMPTS">, mailId: string) {
  const row = UUID.test(mailId) ? await db.mailOutbox.findUnique({ where: { id: mailId }, omit: withoutBody }) : null;
  return row ? toMailDeliveryDto(row, config) : null;
}

/** The newest mail of each invitation (its last send or resend), in one query. */
export async function latestInvitationMails(db: DbTx, invitationIds: string[]): Promise<Map<string, OutboxRow>> {
  if (invitationIds.length === 0) return new Map();
  const rows = await db.mailOutbox.findMany({
    where: { invitationId: { in: invitationIds } },
    omit: withoutBody,
    orderBy: [{ invitationId: "asc" }, { createdAt: "desc" }],
    distinct: ["invitationId"],
  });
  return new Map(rows.map((row) => [row.invitationId!, row]));
}
