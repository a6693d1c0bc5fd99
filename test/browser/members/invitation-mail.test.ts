// Invitation mail in Chromium, with the service's SMTP_URL pointing at a loopback SMTP server:
// an invitation created in the browser arrives by mail (recipient, subject, the link the page
// showed) through the service's own job runner, and its row reads "sent"; with the server
// refusing, the row reads "failed" with the server's reason once the attempts are spent. No
// note about a missing SMTP server appears (invitations.test.ts has the service without one).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { mailsFor, startSmtpServer, textOf, type SmtpServer } from "../../support/smtp-server.js";

let smtp: SmtpServer;
// Filled before the service starts (this hook runs before the suite's).
const env: Record<string, string> = { MAIL_MAX_ATTEMPTS: "2", MAIL_RETRY_BASE_MS: "50", JOBS_POLL_INTERVAL_MS: "200" };

describe.skipIf(!peerAvailable("chromium"))("console invitation mail over SMTP", () => {
  beforeAll(async () => {
    smtp = await startSmtpServer();
    env.SMTP_URL = smtp.url;
  });
  afterAll(() => smtp?.close());
  const suite = consoleSuite(env);

  async function inviteInBrowser(admin: Awaited<ReturnType<typeof suite.open>>, email: string) {
    await admin.page.getByRole("button", { name: "Invite someone" }).first().click();
    const dialog = admin.page.getByRole("dialog", { name: "Invite someone" });
    await dialog.getByLabel("E-mail").fill(email);
    await dialog.getByLabel("Role").selectOption({ label: "viewer" });
    await dialog.getByRole("button", { name: "Send invitation" }).click();
    await admin.page.getByRole("heading", { name: `Invitation sent to ${email}` }).waitFor();
    return (await admin.page.getByTestId("invitation-link").textContent())!.trim();
  }
  const mailOf = async (email: string) => (await suite.service.call("GET", `/api/v1/invitations?search=${encodeURIComponent(email)}`)).items[0].mail;

  it("an invitation goes out by mail with the link shown, and its row reads sent", async () => {
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members/invitations");
    const email = "mia.mail@console.test";
    const link = await inviteInBrowser(admin, email);
    expect(await admin.page.getByTestId("no-smtp-note").count()).toBe(0);

    const [mail] = await smtp.waitFor(1);
    expect(mailsFor(smtp, email)).toEqual([mail]);
    expect(mail.data).toContain(`Subject: You are invited to join ${suite.service.defaultOrg.name}`);
    expect(textOf(mail)).toContain(new URL(link).pathname);
    await expect.poll(async () => (await mailOf(email)).status, { timeout: 15_000 }).toBe("sent");

    await admin.goto("/members/invitations");
    const row = admin.page.getByRole("table", { name: "Invitations" }).getByRole("row").filter({ hasText: email });
    await waitForText(row, (t) => t.includes("pending") && t.includes("sent"));
    await admin.settled();
    await admin.audit();
    await admin.screenshot("members-invitation-mail-sent");
  }, 120_000);

  it("a refusing server: the row reads failed with the server's reason once the attempts are spent", async () => {
    smtp.failNext(10);
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members/invitations");
    const email = "fred.failing@console.test";
    await inviteInBrowser(admin, email);
    await expect.poll(async () => (await mailOf(email)).status, { timeout: 30_000 }).toBe("failed");
    expect(mailsFor(smtp, email)).toHaveLength(0);

    await admin.goto("/members/invitations");
    const row = admin.page.getByRole("table", { name: "Invitations" }).getByRole("row").filter({ hasText: email });
    await waitForText(row, (t) => t.includes("failed") && t.includes("after 2 attempts") && t.includes("451"));
    await admin.settled();
    await admin.screenshot("members-invitation-mail-failed");
    smtp.failNext(0);
  }, 120_000);
});
