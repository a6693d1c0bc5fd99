// Outgoing e-mail behind one small interface, so that the transport can change (SMTP later)
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
    this.services.logger.info({ mailId: row.id, template: message.template, toDomain: message.to.split("@")[1] ?? null }, "mail queued");
    return row;
  }
}

// Services has no mailer field yet; until an SMTP setting exists the mailer is chosen here,
// per Services instance, so tests (and a future SMTP transport) can plug in another one.
const mailers = new WeakMap<object, Mailer>();

export function mailerFor(services: Pick<Services, "secrets" | "logger">): Mailer {
  let mailer = mailers.get(services);
  if (!mailer) {
    mailer = new OutboxMailer(services);
    mailers.set(services, mailer);
  }
  return mailer;
}

export function setMailer(services: object, mailer: Mailer) {
  mailers.set(services, mailer);
}
