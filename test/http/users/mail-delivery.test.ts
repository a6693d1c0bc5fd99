// Account mails queued in the outbox reach a real SMTP server on loopback.
import { afterAll, beforeAll, expect, it } from "vitest";
import { deliverOutbox } from "../../../src/lib/mailer.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { startSmtpServer, type SmtpServer } from "../../support/smtp-server.js";

let h: Harness;
let smtp: SmtpServer;
beforeAll(async () => {
  smtp = await startSmtpServer();
  h = await createHarness({ SMTP_URL: smtp.url, SMTP_FROM: "fleet@example.test", JOBS_ENABLED: "false" });
});
afterAll(async () => {
  await h?.close();
  await smtp?.close();
});

it("delivers a password-reset mail from the outbox through SMTP and marks it sent", async () => {
  const tenant = await h.createTenant("Mail Co");
  const res = await h.api("POST", `/api/v1/users/${tenant.user.id}/reset-password`, { body: {} });
  expect(res.status).toBeLessThan(300);
  const queued = await h.services.prisma.mailOutbox.findFirstOrThrow({ where: { to: tenant.user.email } });
  expect(queued.status).toBe("pending");

  const result = await deliverOutbox(h.services);
  expect(result.sent).toBeGreaterThanOrEqual(1);
  const [mail] = await smtp.waitFor(1);
  expect(mail.to.join(",")).toContain(tenant.user.email);
  expect(mail.data).toContain("Subject:");
  const after = await h.services.prisma.mailOutbox.findUniqueOrThrow({ where: { id: queued.id } });
  expect(after.status).toBe("sent");
  expect(after.sentAt).not.toBeNull();
});

it("keeps a message pending with its error while the SMTP server is unreachable", async () => {
  const { loadConfig } = await import("../../../src/config.js");
  const broken = { ...h.services, config: { ...h.services.config, ...loadConfig({ SMTP_URL: "smtp://127.0.0.1:1" }) , SMTP_URL: "smtp://127.0.0.1:1" } };
  const tenant = await h.createTenant("Mail Down Co");
  await h.api("POST", `/api/v1/users/${tenant.user.id}/reset-password`, { body: {} });
  const result = await deliverOutbox(broken as typeof h.services);
  expect(result.failed).toBeGreaterThanOrEqual(1);
  const row = await h.services.prisma.mailOutbox.findFirstOrThrow({ where: { to: tenant.user.email } });
  expect(row.status).toBe("pending");
  expect(row.attempts).toBe(1);
  expect(row.lastError).toBeTruthy();
});
