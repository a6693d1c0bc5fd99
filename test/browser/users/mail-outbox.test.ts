// The mail outbox on the platform Users page in Chromium (GET /api/v1/mail/outbox, Super
// Admins): with SMTP_URL on a loopback SMTP server an invitation's mail arrives and its row
// reads sent, with its attempt; without SMTP_URL the page says that no mail goes out and where
// the links are, the message waits as pending with the API's note, and a password reset says
// it was not mailed (it said "mailed" whatever became of it).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { startSmtpServer, type SmtpServer } from "../../support/smtp-server.js";

type Suite = ReturnType<typeof consoleSuite>;

async function invite(suite: Suite, email: string) {
  const viewer = (await suite.service.call("GET", "/api/v1/roles?limit=200")).items.find((r: { name: string }) => r.name === "viewer");
  await suite.service.call("POST", "/api/v1/invitations", { body: { email, roleId: viewer.id } });
}

async function outboxRow(suite: Suite, email: string) {
  const ui = await suite.open({ user: ADMIN });
  await ui.goto("/platform/users");
  const outbox = ui.page.getByRole("table", { name: "Mail outbox" });
  return { ui, row: outbox.getByRole("row").filter({ hasText: email }) };
}

describe.skipIf(!peerAvailable("chromium"))("mail outbox with SMTP", () => {
  let smtp: SmtpServer;
  const env: Record<string, string> = { JOBS_POLL_INTERVAL_MS: "200" };
  beforeAll(async () => {
    smtp = await startSmtpServer();
    env.SMTP_URL = smtp.url;
  });
  afterAll(() => smtp?.close());
  const suite = consoleSuite(env);

  it("a delivered invitation mail reads sent, after one attempt", async () => {
    const email = "sam.sent@console.test";
    await invite(suite, email);
    await smtp.waitFor(1);
    const api = async () => (await suite.service.call("GET", `/api/v1/mail/outbox?to=${encodeURIComponent(email)}`)).items[0];
    await expect.poll(async () => (await api()).status, { timeout: 15_000 }).toBe("sent");
    const mail = await api();

    const { ui, row } = await outboxRow(suite, email);
    await waitForText(row, (t) => t.includes("sent") && t.includes("1 of") && t.includes(`You are invited to join ${suite.service.defaultOrg.name}`));
    expect(await row.locator(`time[datetime="${mail.lastAttemptAt}"]`).count()).toBe(1);
    expect(await ui.page.getByRole("note", { name: "No SMTP server" }).count()).toBe(0);
    await ui.settled();
    await ui.audit();
    await ui.screenshot("platform-mail-outbox-sent");
  }, 120_000);
});

describe.skipIf(!peerAvailable("chromium"))("mail outbox without SMTP", () => {
  const suite = consoleSuite();

  it("says that no mail goes out; the invitation waits as pending with its note; a reset says it was not mailed", async () => {
    const email = "pat.pending@console.test";
    await invite(suite, email);
    const { ui, row } = await outboxRow(suite, email);
    await ui.page.getByRole("note", { name: "No SMTP server" }).getByText("no mail goes out").waitFor();
    await waitForText(row, (t) => t.includes("pending") && t.includes("0 of") && t.includes("Members > Invitations"));
    await ui.settled();
    await ui.audit();
    await ui.screenshot("platform-mail-outbox-no-smtp");

    // A password reset: the toast says the link was not mailed, and the reset mail joins the outbox as pending.
    const user = await suite.service.createUser("viewer", { name: "Rita Reset" });
    await ui.page.getByLabel("Search").fill(user.email);
    const users = ui.page.getByRole("table", { name: "Users" });
    await users.getByRole("button", { name: `Reset password of ${user.email}` }).click();
    await ui.page.getByRole("dialog", { name: `Reset the password of ${user.email}?` }).getByRole("button", { name: "Send reset link" }).click();
    await ui.page.getByText(`Reset link for ${user.email} not mailed`).waitFor();
    expect(await ui.page.getByText(`Reset link mailed to ${user.email}`).count()).toBe(0);
    await waitForText(ui.page.getByRole("table", { name: "Mail outbox" }).getByRole("row").filter({ hasText: user.email }).filter({ hasText: "Reset your" }), (t) => t.includes("pending") && t.includes("SMTP_URL"));
    await ui.screenshot("platform-mail-outbox-reset-not-mailed");
  }, 120_000);
});
