// The mail outbox delivered over SMTP (src/modules/mail/delivery.ts): a real SMTP server on
// loopback receives invitation and password-reset mails through the job runner; a server in
// trouble is retried with back-off and delivers once; a server that never recovers fails the
// message with its reason and without the SMTP credentials; two workers racing deliver once;
// and without SMTP_URL the messages wait and the API says where the link is.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobRunner } from "../../../src/jobs/index.js";
import { deliverMail, enqueueOpenMail, mailJobs, redactSmtpError } from "../../../src/modules/mail/delivery.js";
import type { Services } from "../../../src/services.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { mailsFor as mailsTo, startSmtpServer, textOf as bodyOf, type SmtpServer } from "../../support/smtp-server.js";
import { systemRoleId } from "../members/identity-support.js";

const SMTP_USER = "fleet-mailer";
const SMTP_PASSWORD = "s3cret-smtp-pass";
const MAX_ATTEMPTS = 3;

let counter = 0;
const freshEmail = () => `mail-${++counter}-${Date.now()}@example.test`;

function runnerFor(services: Services, workerId: string) {
  return new JobRunner(services, { definitions: mailJobs(services.config).definitions, concurrency: 2, workerId });
}

/** Makes the message's retry due now instead of after its back-off. */
async function makeDue(h: Harness, mailId: string) {
  return h.services.prisma.$executeRaw`
    UPDATE "Job" SET "runAt" = (now() AT TIME ZONE 'UTC') - interval '1 second' WHERE "uniqueKey" = ${`mail.deliver:${mailId}`} AND "state" = 'pending'`;
}

async function jobOf(h: Harness, mailId: string) {
  const [job] = await h.services.prisma.$queryRaw<Array<{ state: string; later: boolean }>>`
    SELECT "state", "runAt" > (now() AT TIME ZONE 'UTC') AS "later" FROM "Job" WHERE "uniqueKey" = ${`mail.deliver:${mailId}`} ORDER BY "createdAt" DESC LIMIT 1`;
  return job;
}

describe("with SMTP_URL", () => {
  let h: Harness;
  let smtp: SmtpServer;
  let tenant: Tenant;
  let viewer: string;
  const invite = (email: string) => h.api("POST", "/api/v1/invitations", { key: tenant.key, body: { email, roleId: viewer } });

  beforeAll(async () => {
    smtp = await startSmtpServer({ auth: true });
    const url = new URL(smtp.url);
    url.username = SMTP_USER;
    url.password = SMTP_PASSWORD;
    h = await createHarness({
      SMTP_URL: url.toString(), SMTP_FROM: "Fleet <fleet@example.test>", JOBS_ENABLED: "false",
      MAIL_MAX_ATTEMPTS: String(MAX_ATTEMPTS), MAIL_RETRY_BASE_MS: "60000",
    });
    tenant = await h.createTenant("Mail Delivery Co");
    viewer = await systemRoleId(h, "viewer");
  });
  afterAll(async () => {
    await h?.close();
    await smtp?.close();
  });

  it("delivers an invitation mail through the job runner: recipient, subject and link arrive; the invitation and the outbox show it sent", async () => {
    const email = freshEmail();
    const res = await invite(email);
    expect(res.status).toBe(201);
    expect(res.body.mail).toMatchObject({ status: "pending", attempts: 0, maxAttempts: MAX_ATTEMPTS, note: null });

    await runnerFor(h.services, "worker-a").drain();
    const [mail] = mailsTo(smtp, email);
    expect(mail.to).toEqual([`<${email}>`]);
    expect(mail.from).toBe("<fleet@example.test>");
    expect(mail.data).toContain("Subject: You are invited to join Mail Delivery Co");
    expect(bodyOf(mail)).toContain(`/invitations/${res.body.token}`);

    const got = await h.api("GET", `/api/v1/invitations/${res.body.id}`, { key: tenant.key });
    expect(got.body.mail).toMatchObject({ id: res.body.mail.id, status: "sent", attempts: 1, lastError: null, nextAttemptAt: null });
    expect(got.body.mail.sentAt).not.toBeNull();
    const list = await h.api("GET", "/api/v1/invitations", { key: tenant.key });
    expect(list.body.smtpConfigured).toBe(true);
    expect(list.body.items.find((i: { id: string }) => i.id === res.body.id).mail.status).toBe("sent");

    const outbox = await h.api("GET", `/api/v1/mail/outbox?to=${encodeURIComponent(email)}`);
    expect(outbox.status).toBe(200);
    expect(outbox.body).toMatchObject({ total: 1, smtpConfigured: true });
    expect(outbox.body.items[0]).toMatchObject({ to: email, template: "invitation", status: "sent", invitationId: res.body.id, attempts: 1 });
    expect(outbox.text).not.toContain(res.body.token);
    expect(outbox.text).not.toContain("bodySealed");
    // Never the body or the SMTP password in the log.
    expect(h.logs.join("")).not.toContain(res.body.token);
    expect(h.logs.join("")).not.toContain(SMTP_PASSWORD);
  });

  it("delivers a password-reset mail with its code", async () => {
    const person = await h.createTenant("Reset Mail Co");
    const reset = await h.api("POST", `/api/v1/users/${person.user.id}/reset-password`, { body: {} });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ sent: true, mail: { status: "pending", attempts: 0, note: null } });
    await runnerFor(h.services, "worker-a").drain();
    const [mail] = mailsTo(smtp, person.user.email);
    expect(mail.data).toContain("Subject: Reset your Fleet Manager password");
    expect(bodyOf(mail)).toMatch(/Your one-time code: fmp_[A-Za-z0-9]{40}/);
    const row = await h.services.prisma.mailOutbox.findFirstOrThrow({ where: { to: person.user.email } });
    expect(row).toMatchObject({ status: "sent", attempts: 1, template: "password-reset" });
  });

  it("retries a refusing server with back-off and, once it recovers, delivers the message once", async () => {
    const email = freshEmail();
    const res = await invite(email);
    const mailId: string = res.body.mail.id;
    const runner = runnerFor(h.services, "worker-a");
    smtp.failNext(2);

    await runner.runOnce();
    let row = await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } });
    expect(row).toMatchObject({ status: "pending", attempts: 1 });
    expect(row.lastError).toContain("451");
    expect(row.nextAttemptAt!.getTime()).toBeGreaterThan(row.lastAttemptAt!.getTime());
    // Back-off: the retry is not due yet, so another run does not try again.
    expect(await jobOf(h, mailId)).toEqual({ state: "pending", later: true });
    await runner.runOnce();
    expect((await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } })).attempts).toBe(1);
    const got = await h.api("GET", `/api/v1/invitations/${res.body.id}`, { key: tenant.key });
    expect(got.body.mail).toMatchObject({ status: "pending", attempts: 1 });
    expect(got.body.mail.lastError).toContain("451");

    expect(await makeDue(h, mailId)).toBe(1);
    await runner.runOnce();
    expect((await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } })).attempts).toBe(2);
    expect(mailsTo(smtp, email)).toHaveLength(0);

    expect(await makeDue(h, mailId)).toBe(1);
    await runner.drain();
    row = await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } });
    expect(row).toMatchObject({ status: "sent", attempts: 3, lastError: null, nextAttemptAt: null });
    expect(mailsTo(smtp, email)).toHaveLength(1);
    expect((await jobOf(h, mailId)).state).toBe("succeeded");
    // Nothing enqueues it again: the catch-up schedule skips settled messages.
    expect(await enqueueOpenMail(h.services.prisma, h.services.config)).toBe(0);
    await runner.drain();
    expect(mailsTo(smtp, email)).toHaveLength(1);
  });

  it("fails a message after MAIL_MAX_ATTEMPTS with the server's reason, without the SMTP credentials", async () => {
    const email = freshEmail();
    const res = await invite(email);
    const mailId: string = res.body.mail.id;
    const runner = runnerFor(h.services, "worker-a");
    smtp.failNext(MAX_ATTEMPTS, "AUTH"); // the server echoes the AUTH PLAIN credentials in its refusal
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      if (attempt > 1) expect(await makeDue(h, mailId)).toBe(1);
      await runner.runOnce();
    }
    const row = await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } });
    expect(row).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, nextAttemptAt: null, sentAt: null });
    expect(row.lastError).toContain("535");
    const plain = Buffer.from(`\u0000${SMTP_USER}\u0000${SMTP_PASSWORD}`).toString("base64");
    for (const secret of [SMTP_PASSWORD, SMTP_USER, plain]) {
      expect(row.lastError).not.toContain(secret);
      expect(h.logs.join("")).not.toContain(secret);
    }
    expect((await jobOf(h, mailId)).state).toBe("failed");
    const outbox = await h.api("GET", `/api/v1/mail/outbox?status=failed&to=${encodeURIComponent(email)}`);
    expect(outbox.body.items).toHaveLength(1);
    expect(outbox.body.items[0]).toMatchObject({ status: "failed", attempts: MAX_ATTEMPTS, maxAttempts: MAX_ATTEMPTS });
    expect(outbox.text).not.toContain(SMTP_PASSWORD);
    expect(mailsTo(smtp, email)).toHaveLength(0);
  });

  it("two workers racing deliver each message once", async () => {
    const emails = [freshEmail(), freshEmail(), freshEmail()];
    const ids: string[] = [];
    for (const email of emails) ids.push((await invite(email)).body.mail.id);
    // Enqueued again by the catch-up schedule: the unique key keeps one live job per message.
    expect(await enqueueOpenMail(h.services.prisma, h.services.config)).toBe(0);
    await Promise.all([runnerFor(h.services, "worker-a").drain(), runnerFor(h.services, "worker-b").drain()]);
    for (const email of emails) expect(mailsTo(smtp, email)).toHaveLength(1);

    // Two attempts of one message at once (a duplicate job, a takeover): one sends it.
    const email = freshEmail();
    const mailId: string = (await invite(email)).body.mail.id;
    const outcomes = await Promise.allSettled([
      deliverMail(h.services, mailId, new AbortController().signal),
      deliverMail(h.services, mailId, new AbortController().signal),
    ]);
    // The one that found it being sent asks to be retried (its job would be, after its back-off).
    for (const o of outcomes) if (o.status === "rejected") expect(String(o.reason)).toContain("being sent by another worker");
    expect(mailsTo(smtp, email)).toHaveLength(1);
    expect(await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: mailId } })).toMatchObject({ status: "sent", attempts: 1 });
    await runnerFor(h.services, "worker-b").drain(); // the message's own job finds it sent
    expect(mailsTo(smtp, email)).toHaveLength(1);
  });

  it("is Super Admin only", async () => {
    expect((await h.api("GET", "/api/v1/mail/outbox", { key: tenant.key })).status).toBe(403);
    expect((await h.api("GET", "/api/v1/mail/outbox?status=unknown")).status).toBe(400);
  });
});

describe("without SMTP_URL", () => {
  let h: Harness;
  let smtp: SmtpServer;
  let tenant: Tenant;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    h = await createHarness({ JOBS_ENABLED: "false" });
    tenant = await h.createTenant("No Smtp Co");
  });
  afterAll(async () => {
    await h?.close();
    await smtp?.close();
  });

  it("keeps messages pending with no delivery job, and the API says where the invitation link is", async () => {
    const email = freshEmail();
    const res = await h.api("POST", "/api/v1/invitations", { key: tenant.key, body: { email, roleId: await systemRoleId(h, "viewer") } });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^fmi_/);
    expect(res.body.mail).toMatchObject({ status: "pending", attempts: 0, nextAttemptAt: null });
    expect(res.body.mail.note).toContain("SMTP_URL");
    expect(res.body.mail.note).toContain("Members > Invitations");
    expect(await h.services.prisma.$queryRaw`SELECT 1 FROM "Job" WHERE "type" = 'mail.deliver'`).toEqual([]);

    const list = await h.api("GET", "/api/v1/invitations", { key: tenant.key });
    expect(list.body.smtpConfigured).toBe(false);
    expect(list.body.items[0].mail.note).toContain("hand the invitation link over yourself");

    const answer = await h.api("POST", `/api/v1/users/${tenant.user.id}/reset-password`, { body: {} });
    expect(answer.body).toMatchObject({ sent: true, mail: { status: "pending" } });
    expect(answer.body.mail.note).toContain("not shown anywhere else: configure SMTP_URL");
    const outbox = await h.api("GET", "/api/v1/mail/outbox");
    expect(outbox.body.smtpConfigured).toBe(false);
    const reset = outbox.body.items.find((m: { template: string }) => m.template === "password-reset");
    expect(reset).toMatchObject({ status: "pending", to: tenant.user.email });
    expect(reset.note).toContain("SMTP_URL");

    // The job, should one run, leaves the message as it is; nothing is enqueued.
    expect(await enqueueOpenMail(h.services.prisma, h.services.config)).toBe(0);
    await deliverMail(h.services, res.body.mail.id, new AbortController().signal);
    expect(await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: res.body.mail.id } })).toMatchObject({ status: "pending", attempts: 0 });
  });

  it("sends what waited once SMTP_URL is set (the catch-up schedule enqueues it)", async () => {
    const email = freshEmail();
    const res = await h.api("POST", "/api/v1/invitations", { key: tenant.key, body: { email, roleId: await systemRoleId(h, "viewer") } });
    // The same database, served by a process configured with an SMTP server.
    const withSmtp = { ...h.services, config: { ...h.services.config, SMTP_URL: smtp.url } } as Services;
    expect(await enqueueOpenMail(withSmtp.prisma, withSmtp.config)).toBeGreaterThanOrEqual(1);
    await runnerFor(withSmtp, "worker-c").drain();
    expect(mailsTo(smtp, email)).toHaveLength(1);
    expect(bodyOf(mailsTo(smtp, email)[0])).toContain(`/invitations/${res.body.token}`);
    expect(await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: res.body.mail.id } })).toMatchObject({ status: "sent" });
  });
});

it("redacts the SMTP credentials from a failure's message", () => {
  const url = "smtp://user%40corp:p%40ss-word@mail.example:587";
  expect(redactSmtpError(`connect to ${url} failed for user@corp with p@ss-word and p%40ss-word`, url)).toBe(
    "connect to [redacted] failed for [redacted] with [redacted] and [redacted]",
  );
  expect(redactSmtpError("535 denied", undefined)).toBe("535 denied");
});
