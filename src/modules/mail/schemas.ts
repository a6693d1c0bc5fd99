// The mail outbox as the API shows it: each message's delivery state, never its body (it
// carries one-time links). Tenants see the state of their invitations' mails with the
// invitation; Super Admins see the whole outbox (GET /mail/outbox).
import { z } from "zod";
import type { MailOutbox } from "../../generated/prisma/client.js";
import type { Config } from "../../config.js";
import { pageOutput, pagingInput } from "../../lib/paging.js";

/** A message as read for display: everything but the sealed body. */
export type OutboxRow = Omit<MailOutbox, "bodySealed">;

export const MAIL_STATUSES = ["pending", "sending", "sent", "failed"] as const;
export type MailStatus = (typeof MAIL_STATUSES)[number];

export const mailDeliveryOutput = z.object({
  id: z.string().uuid(),
  status: z.enum(MAIL_STATUSES).describe("pending (waiting for an attempt, or for SMTP_URL), sending, sent, failed (given up)"),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  lastAttemptAt: z.string().datetime().nullable(),
  /** pending after a failed attempt: the next one starts by then */
  nextAttemptAt: z.string().datetime().nullable(),
  sentAt: z.string().datetime().nullable(),
  /** why the last attempt failed (the SMTP server's answer) */
  lastError: z.string().nullable(),
  /** set while the message cannot go out: why, and where the administrator finds the link instead */
  note: z.string().nullable(),
});
export type MailDeliveryDto = z.infer<typeof mailDeliveryOutput>;

export const outboxMailOutput = mailDeliveryOutput.extend({
  to: z.string(),
  subject: z.string(),
  template: z.string(),
  invitationId: z.string().uuid().nullable(),
  createdAt: z.string().datetime(),
});

export const listOutboxInput = z.object({
  ...pagingInput,
  status: z.enum(MAIL_STATUSES).optional(),
  to: z.string().trim().max(320).optional().describe("the recipient's address (exact, any letter case)"),
});

export const outboxPageOutput = pageOutput(outboxMailOutput).extend({
  /** false: no SMTP_URL, nothing is sent and messages wait as pending */
  smtpConfigured: z.boolean(),
});

/** Where the link of a message that cannot be sent is, by template. */
export function undeliveredNote(template: string): string {
  const why = "Not sent: the service has no SMTP server (SMTP_URL); it goes out once one is configured.";
  if (template === "invitation") {
    return `${why} Meanwhile hand the invitation link over yourself: it is shown once after inviting or resending ` +
      "(console: Members > Invitations; API: the token of POST /invitations and POST /invitations/{id}/resend).";
  }
  return `${why} The one-time code in this message is not shown anywhere else: configure SMTP_URL, or ask the user to use another way in (an invitation link, the identity provider).`;
}

export function toMailDeliveryDto(mail: OutboxRow, config: Pick<Config, "SMTP_URL" | "MAIL_MAX_ATTEMPTS">): MailDeliveryDto {
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    id: mail.id,
    status: mail.status as MailStatus,
    attempts: mail.attempts,
    maxAttempts: config.MAIL_MAX_ATTEMPTS,
    lastAttemptAt: iso(mail.lastAttemptAt),
    nextAttemptAt: iso(mail.nextAttemptAt),
    sentAt: iso(mail.sentAt),
    lastError: mail.lastError,
    note: !config.SMTP_URL && (mail.status === "pending" || mail.status === "sending") ? undeliveredNote(mail.template) : null,
  };
}

export function toOutboxMailDto(mail: OutboxRow, config: Pick<Config, "SMTP_URL" | "MAIL_MAX_ATTEMPTS">) {
  return {
    ...toMailDeliveryDto(mail, config),
    to: mail.to,
    subject: mail.subject,
    template: mail.template,
    invitationId: mail.invitationId,
    createdAt: mail.createdAt.toISOString(),
  };
}
