// Delivery of the mail outbox (src/lib/mailer.ts) over SMTP: one `mail.deliver` job per
// message, run by the job runner (src/jobs). The runner's claim gives each job to one process
// and the message's unique job key allows one live job per message, so several processes
// deliver a message once; a failed attempt goes back to pending and is retried with
// exponential back-off until MAIL_MAX_ATTEMPTS, then the message is failed with the SMTP
// server's reason (never the credentials of SMTP_URL). The sealed body is opened only for
// the send itself. Without SMTP_URL messages stay pending in the outbox.
import { Prisma } from "../../generated/prisma/client.js";
import type { Config } from "../../config.js";
import type { DbTx } from "../../db/client.js";
import type { Services } from "../../services.js";
import { MAIL_DELIVER_JOB } from "../../lib/mailer.js";
import { sendSmtp } from "../../lib/smtp.js";
import { PermanentJobError, type JobDefinition, type ScheduleDefinition } from "../../jobs/types.js";

/** one SMTP conversation is abandoned after this long */
const SEND_TIMEOUT_MS = 30_000;
/**
 * A message in `sending` for longer than this was abandoned (its worker died): another may
 * take it. Longer than an attempt can last (its job's timeout), shorter than the job lock a
 * takeover waits for (60 s).
 */
const SENDING_LEASE_SECONDS = 45;
const NOW = Prisma.raw(`(now() AT TIME ZONE 'UTC')`);
const MAX_BACKOFF_MS = 3_600_000;
/** messages enqueued by one run of the catch-up schedule */
const CATCH_UP_BATCH = 500;

/**
 * The message of an SMTP failure without the credentials of SMTP_URL: the URL itself, its user
 * name and password (as written and decoded) and their base64 forms (AUTH LOGIN / PLAIN) are
 * replaced, should a server or the client library ever echo them.
 */
export function redactSmtpError(message: string, smtpUrl: string | undefined): string {
  if (!smtpUrl) return message;
  const secrets = new Set<string>([smtpUrl]);
  try {
    const url = new URL(smtpUrl);
    for (const raw of [url.username, url.password]) {
      if (!raw) continue;
      const decoded = decodeURIComponent(raw);
      for (const value of [raw, decoded, Buffer.from(decoded).toString("base64")]) secrets.add(value);
    }
    if (url.password) secrets.add(Buffer.from(`\u0000${decodeURIComponent(url.username)}\u0000${decodeURIComponent(url.password)}`).toString("base64"));
  } catch {
    // an unparsable URL was refused by the configuration already
  }
  let redacted = message;
  // Longest first: the URL before the password it contains.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (secret.length >= 3) redacted = redacted.split(secret).join("[redacted]");
  }
  return redacted.slice(0, 1000);
}

/** One attempt to send one message. Throws to have the runner retry it after its back-off. */
export async function deliverMail(services: Services, mailId: string, signal: AbortSignal): Promise<void> {
  const { prisma, config, secrets, logger } = services;
  if (!config.SMTP_URL) return; // SMTP_URL was removed meanwhile: the message waits as pending
  // Claim the message: one statement, by the database's clock. A sent or failed message is
  // never sent again, and one being sent is left alone until its attempt must have ended
  // (SENDING_LEASE_SECONDS); so a job enqueued twice, or run twice at once, sends it once.
  const [mail] = await prisma.$queryRaw<Array<{ to: string; subject: string; bodySealed: string; attempts: number }>>`
    UPDATE "MailOutbox" SET "status" = 'sending', "attempts" = "attempts" + 1, "lastAttemptAt" = ${NOW}, "nextAttemptAt" = NULL
    WHERE "id" = ${mailId}::uuid
      AND ("status" = 'pending' OR ("status" = 'sending' AND "lastAttemptAt" < ${NOW} - make_interval(secs => ${SENDING_LEASE_SECONDS}::double precision)))
    RETURNING "to", "subject", "bodySealed", "attempts"`;
  if (!mail) {
    const current = await prisma.mailOutbox.findUnique({ where: { id: mailId }, select: { status: true } });
    if (current?.status === "sending") throw new Error("the message is being sent by another worker"); // try again after it
    return; // settled (sent or failed) or deleted
  }
  try {
    await sendSmtp(config, { to: mail.to, subject: mail.subject, text: secrets.decrypt(mail.bodySealed) }, SEND_TIMEOUT_MS, signal);
  } catch (err) {
    const reason = redactSmtpError((err as Error).message, config.SMTP_URL);
    const last = mail.attempts >= config.MAIL_MAX_ATTEMPTS;
    const retryWithin = Math.min(MAX_BACKOFF_MS, config.MAIL_RETRY_BASE_MS * 2 ** (mail.attempts - 1));
    await prisma.mailOutbox.update({
      where: { id: mailId },
      data: last
        ? { status: "failed", lastError: reason }
        : { status: "pending", lastError: reason, nextAttemptAt: new Date(Date.now() + retryWithin) },
    });
    logger.warn({ mailId, attempts: mail.attempts, final: last, err: reason }, last ? "mail delivery failed for good" : "mail delivery failed; retrying");
    if (last) throw new PermanentJobError(reason);
    throw new Error(reason);
  }
  await prisma.mailOutbox.update({ where: { id: mailId }, data: { status: "sent", sentAt: new Date(), lastError: null } });
  logger.info({ mailId, attempts: mail.attempts }, "mail sent");
}

/**
 * Enqueues the delivery of every open message without a live job, in one INSERT ... SELECT:
 * messages queued while SMTP_URL was unset (sent once it is set), and any whose job ended
 * without settling them. A message with a pending or running job is skipped by its unique key.
 */
export async function enqueueOpenMail(db: DbTx, config: Pick<Config, "SMTP_URL" | "MAIL_MAX_ATTEMPTS">): Promise<number> {
  if (!config.SMTP_URL) return 0;
  return db.$executeRaw`
    INSERT INTO "Job" ("id", "type", "payload", "uniqueKey", "activeKey", "state", "attempts", "maxAttempts", "runAt", "createdAt", "updatedAt")
    SELECT gen_random_uuid(), ${MAIL_DELIVER_JOB}, jsonb_build_object('mailId', m."id"),
           ${`${MAIL_DELIVER_JOB}:`} || m."id", ${`${MAIL_DELIVER_JOB}:`} || m."id", 'pending', 0, ${config.MAIL_MAX_ATTEMPTS + 1}::int, ${NOW}, ${NOW}, ${NOW}
    FROM (SELECT "id" FROM "MailOutbox" WHERE "status" IN ('pending', 'sending') ORDER BY "createdAt" LIMIT ${CATCH_UP_BATCH}::int) m
    ON CONFLICT ("activeKey") DO NOTHING`;
}

export function mailJobs(config: Config): { definitions: JobDefinition[]; schedules: ScheduleDefinition[] } {
  const deliver: JobDefinition<{ mailId: string }> = {
    type: MAIL_DELIVER_JOB,
    maxAttempts: config.MAIL_MAX_ATTEMPTS + 1,
    timeoutMs: SEND_TIMEOUT_MS + 10_000,
    backoff: { baseMs: config.MAIL_RETRY_BASE_MS, maxMs: MAX_BACKOFF_MS },
    run: ({ services, job, signal }) => deliverMail(services, job.payload.mailId, signal),
  };
  const catchUp: ScheduleDefinition = {
    name: "mail.deliver-outbox",
    everyMs: 60_000,
    jitterMs: 5_000,
    run: async ({ services, logger }) => {
      const enqueued = await enqueueOpenMail(services.prisma, services.config);
      if (enqueued > 0) logger.info({ enqueued }, "outbox mail enqueued for delivery");
    },
  };
  return { definitions: [deliver], schedules: [catchUp] };
}
