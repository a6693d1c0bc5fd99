// Outgoing e-mail behind one small interface, so that the transport can change
// without touching the code that sends: password resets, welcome and verification mails,
// invitations.
//
// The default mailer is an outbox: `send` writes the message into the MailOutbox table with
// the caller's database handle. Given the transaction of a mutation, the message exists
// exactly when the change that caused it does (no mail for a rolled-back reset, no reset
// without its mail). Bodies carry one-time links, so they are sealed with the service's
// encryption key and never logged; only the id, template and recipient domain are.
import type { DbTx } from "../db/client.js";
import type { Services } from "../services.js";
import type { ScheduleDefinition } from "../jobs/types.js";
import { sendSmtp } from "./smtp.js";
import { perService } from "./per-service.js";

export interface MailMessage {
  to: string;
  subject: string;
  /** plain-text body; may hold one-time links, so it is treated as a secret */
  text: string;
  /** which message this is, for operators: password-reset, welcome, email-verification, ... */
  template: string;
}

export interface Mailer {
  /** Accepts a message. `db` is the caller's transaction when there is one. */
  send(db: DbTx, message: MailMessage): Promise<{ id: string }>;
}

/** Stores messages in MailOutbox for a delivery worker (or an operator) to pick up. */
export class OutboxMailer implements Mailer {
  constructor(private readonly services: Pick<Services, "secrets" | "logger">) {}

  async send(db: DbTx, message: MailMessage) {
    const row = await db.mailOutbox.create({
      data: {
        to: message.to,
        subject: message.subject,
        template: message.template,
        bodySealed: this.services.secrets.encrypt(message.text),
      },
      select: { id: true },
    });
    // Never the body or the full address: the log must not become a way to read reset links.
    this.services.logger.info({ mailId: row.id, template: message.template, recipientDomain: message.to.split("@")[1] ?? null }, "mail queued");
    return row;
  }
}

// Account mail goes to the outbox (delivered over SMTP_URL by the `mail.deliver-outbox` job);
// the mailer is per service so that tests can plug in another one.
export const mailerFor = perService((services: Pick<Services, "secrets" | "logger">): Mailer => new OutboxMailer(services));

export const setMailer = mailerFor.set;

const OUTBOX_BATCH = 50;
const OUTBOX_MAX_ATTEMPTS = 8;

/**
 * Delivers queued mail through SMTP when SMTP_URL is set; without it messages stay in the
 * outbox for an operator to read. One schedule run at a time across processes (job runner),
 * each message tried at most OUTBOX_MAX_ATTEMPTS times, oldest first.
 */
export async function deliverOutbox(services: Services, signal?: AbortSignal): Promise<{ sent: number; failed: number }> {
  const { config, prisma, secrets, logger } = services;
  if (!config.SMTP_URL) return { sent: 0, failed: 0 };
  const pending = await prisma.mailOutbox.findMany({
    where: { status: "pending" },
    orderBy: { createdAt: "asc" },
    take: OUTBOX_BATCH,
  });
  let sent = 0;
  let failed = 0;
  for (const mail of pending) {
    if (signal?.aborted) break;
    try {
      await sendSmtp(config, { to: mail.to, subject: mail.subject, text: secrets.decrypt(mail.bodySealed) }, 15_000, signal);
      await prisma.mailOutbox.update({ where: { id: mail.id }, data: { status: "sent", sentAt: new Date(), attempts: { increment: 1 } } });
      sent++;
    } catch (err) {
      const attempts = mail.attempts + 1;
      await prisma.mailOutbox.update({
        where: { id: mail.id },
        data: { attempts, lastError: (err as Error).message.slice(0, 500), status: attempts >= OUTBOX_MAX_ATTEMPTS ? "failed" : "pending" },
      });
      logger.warn({ mailId: mail.id, attempts, err: (err as Error).message }, "mail delivery failed");
      failed++;
    }
  }
  return { sent, failed };
}

export const mailOutboxSchedule: ScheduleDefinition = {
  name: "mail.deliver-outbox",
  everyMs: 15_000,
  jitterMs: 2_000,
  run: async ({ services, signal }) => {
    await deliverOutbox(services, signal);
  },
};
