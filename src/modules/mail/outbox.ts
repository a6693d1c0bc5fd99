// Reading the outbox's delivery state (never the sealed bodies): the whole outbox for Super
// Admins, and the latest mail of each invitation for the invitations' pages.
import type { DbTx } from "../../db/client.js";
import type { Prisma } from "../../generated/prisma/client.js";
import type { OutboxRow, MailStatus } from "./schemas.js";

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
