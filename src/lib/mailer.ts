// Outgoing e-mail behind one small interface, so that the transport can change
// without touching the code that sends: password resets, welcome and verification mails,
// invitations.
//
// The default mailer is an outbox: `send` writes the message into the MailOutbox table with
// the caller's database handle. Given the transaction of a mutation, the message exists
// exactly when the change that caused it does (no mail for a rolled-back reset, no reset
// without its mail). Bodies carry one-time links, so they are sealed with the service's
// encryption key and never logged; only the id, template and recipient domain are. With
// SMTP_URL set, the same transaction enqueues the message's `mail.deliver` job
// (src/modules/mail/delivery.ts sends it).
import type { DbTx } from "../db/client.js";
import type { Services } from "../services.js";
import { enqueueJob } from "../jobs/queue.js";
import { perService } from "./per-service.js";

export interface MailMessage {
  to: string;
  subject: string;
  /** plain-text body; may hold one-time links, so it is treated as a secret */
  text: string;
  /** which message this is, for operators: password-reset, welcome, email-verification, ... */
  template: string;
  /** the invitation the message carries, so that its delivery state shows with the invitation */
  invitationId?: string;
}

export interface Mailer {
  /** Accepts a message. `db` is the caller's transaction when there is one. */
  send(db: DbTx, message: MailMessage): Promise<{ id: string }>;
}

/** The job that sends one outbox message; one live job per message (its unique key). */
export const MAIL_DELIVER_JOB = "mail.deliver";
export const mailJobKey = (mailId: string) => `${MAIL_DELIVER_JOB}:${mailId}`;

/** Stores messages in MailOutbox and, when SMTP is configured, enqueues their delivery. */
export class OutboxMailer implements Mailer {
  constructor(private readonly services: Pick<Services, "secrets" | "logger" | "config">) {}

  async send(db: DbTx, message: MailMessage) {
    const smtp = Boolean(this.services.config.SMTP_URL);
    const row = await db.mailOutbox.create({
      data: {
        to: message.to,
        subject: message.subject,
        template: message.template,
        bodySealed: this.services.secrets.encrypt(message.text),
        invitationId: message.invitationId ?? null,
        nextAttemptAt: smtp ? new Date() : null,
      },
      select: { id: true },
    });
    if (smtp) {
      // The delivery's own counter decides when to stop; the runner's limit is a backstop.
      await enqueueJob(db, { type: MAIL_DELIVER_JOB, payload: { mailId: row.id }, uniqueKey: mailJobKey(row.id), maxAttempts: this.services.config.MAIL_MAX_ATTEMPTS + 1 });
    }
    // Never the body or the full address: the log must not become a way to read reset links.
    this.services.logger.info({ mailId: row.id, template: message.template, recipientDomain: message.to.split("@")[1] ?? null }, smtp ? "mail queued" : "mail queued (no SMTP_URL: it stays in the outbox)");
    return row;
  }
}

// The mailer is per service so that tests can plug in another one.
export const mailerFor = perService((services: Pick<Services, "secrets" | "logger" | "config">): Mailer => new OutboxMailer(services));

export const setMailer = mailerFor.set;
