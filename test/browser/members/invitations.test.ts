// Members & roles in Chromium: an invitation created in the browser is accepted on its public
// page in a second browser context (a name and a password), which lands the new member signed
// in; they then sign in again through the sign-in page with the role they were given. Resend
// replaces the link (the old one is refused on the public page), revoke ends it. The last owner
// cannot be removed: the dialog shows the API's refusal. A role change is stored. The service
// here has no SMTP server: the page says no mail goes out and the link shown is the way in
// (invitation-mail.test.ts has the service with one).
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, submitSignInForm, waitForPath, waitForText } from "../../support/browser.js";

let service: ConsoleService;

const NEW_MEMBER = { email: "nina.new@console.test", name: "Nina Newcomer", password: "nina-chose-this-password" };

/** The path of the invitation link the page shows once. */
async function shownInvitationPath(page: import("playwright-core").Page): Promise<string> {
  const link = await page.getByTestId("invitation-link").textContent();
  const url = new URL(link!.trim());
  expect(url.origin).toBe(new URL(service.url).origin);
  expect(url.pathname).toMatch(/^\/invitations\/fmi_[A-Za-z0-9]+$/);
  return url.pathname;
}

describe.skipIf(!peerAvailable("chromium"))("console invitations and members", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
  });

  it("an invitation created in the browser is accepted on its public page; the new member signs in with the role given", async () => {
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members/invitations");
    await admin.page.getByText("No invitations yet").waitFor();
    await admin.page.getByRole("button", { name: "Invite someone" }).first().click();
    const dialog = admin.page.getByRole("dialog", { name: "Invite someone" });
    await dialog.getByLabel("E-mail").fill(NEW_MEMBER.email);
    await dialog.getByLabel("Role").selectOption({ label: "operator" });
    await admin.audit();
    await dialog.getByRole("button", { name: "Send invitation" }).click();
    await admin.page.getByRole("heading", { name: `Invitation created for ${NEW_MEMBER.email}` }).waitFor();
    const path = await shownInvitationPath(admin.page);
    // No SMTP server: the card and the page say that no mail goes out and the link is to be handed over.
    await waitForText(admin.page.getByRole("note").filter({ hasText: "No e-mail was sent" }), (t) => t.includes(`hand it over to ${NEW_MEMBER.email} yourself`));
    await waitForText(admin.page.getByTestId("no-smtp-note"), (t) => t.includes("no SMTP server (SMTP_URL)") && t.includes("copy the invitation link shown here"));
    await admin.settled();
    await admin.audit();
    await admin.screenshot("members-invitation-sent");

    // The API holds the same invitation: pending, with the role chosen.
    const listed = await service.call("GET", "/api/v1/invitations");
    expect(listed.items).toHaveLength(1);
    expect(listed.items[0]).toMatchObject({ email: NEW_MEMBER.email, status: "pending", role: { name: "operator" } });
    expect(listed.items[0].mail).toMatchObject({ status: "pending", attempts: 0 });
    expect(listed.items[0].mail.note).toContain("SMTP_URL");
    const row = admin.page.getByRole("table", { name: "Invitations" }).getByRole("row").filter({ hasText: NEW_MEMBER.email });
    await waitForText(row, (t) => t.includes("operator") && t.includes("pending") && t.includes("not sent"));

    // The person invited, in a browser of their own, without an account.
    const invitee = await suite.open();
    await invitee.goto(path);
    await invitee.page.getByRole("heading", { name: `Join ${service.defaultOrg.name}` }).waitFor();
    await waitForText(invitee.page.locator("form"), (t) => t.includes("as operator") && t.includes(NEW_MEMBER.email));
    await invitee.page.getByLabel("Your name").fill(NEW_MEMBER.name);
    await invitee.page.getByLabel("Choose a password").fill(NEW_MEMBER.password);
    await invitee.screenshot("members-invitation-public-page");
    await invitee.page.getByRole("button", { name: "Accept and sign in" }).click();
    await waitForPath(invitee.page, (url) => url.pathname === "/", "the overview after accepting");
    await invitee.settled();
    await invitee.audit();
    // Signed in as the new member (the cookie the sign-in page would get), with the role given.
    const context = await invitee.context.request.get(`${service.url}/api/v1/tenant/context`);
    expect(context.status()).toBe(200);
    expect(await context.json()).toMatchObject({ email: NEW_MEMBER.email, name: NEW_MEMBER.name, role: "operator" });
    await invitee.page.getByRole("button", { name: `Account: ${NEW_MEMBER.name}` }).waitFor();

    // The invitation is accepted and the member is stored with that role.
    const after = await service.call("GET", "/api/v1/invitations");
    expect(after.items[0]).toMatchObject({ email: NEW_MEMBER.email, status: "accepted" });
    const members = await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/members?search=nina`);
    expect(members.items).toEqual([expect.objectContaining({ email: NEW_MEMBER.email, name: NEW_MEMBER.name, role: expect.objectContaining({ name: "operator" }) })]);

    // Later, in a fresh browser, through the sign-in page: the role given, and the console as an operator sees it.
    const later = await suite.open();
    await later.goto("/sign-in");
    await submitSignInForm(later.page, NEW_MEMBER.email, NEW_MEMBER.password);
    await waitForPath(later.page, (url) => url.pathname === "/", "the overview after sign-in");
    await later.settled();
    await later.audit();
    const again = await later.context.request.get(`${service.url}/api/v1/tenant/context`);
    expect((await again.json()).role).toBe("operator");
    const nav = later.page.getByRole("navigation", { name: "Main" });
    await nav.getByRole("link", { name: "Deployments" }).waitFor();
    // An operator reads the members but may not change them: the list, without its controls.
    expect((await again.json()).permissions).toContain("members:read");
    expect((await again.json()).permissions).not.toContain("members:write");
    await nav.getByRole("link", { name: "Members & roles" }).click();
    await waitForPath(later.page, (url) => url.pathname === "/members", "the members page");
    await later.page.getByRole("table", { name: "Members" }).getByRole("row").filter({ hasText: NEW_MEMBER.email }).waitFor();
    await later.settled();
    await later.audit();
    expect(await later.page.getByRole("button", { name: /^(Change role|Remove)/ }).count()).toBe(0);
  }, 180_000);

  it("resend replaces the link, revoke ends it; the public page says the old link is no longer valid", async () => {
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members/invitations");
    await admin.page.getByRole("button", { name: "Invite someone" }).first().click();
    const dialog = admin.page.getByRole("dialog", { name: "Invite someone" });
    await dialog.getByLabel("E-mail").fill("rosa.resend@console.test");
    await dialog.getByLabel("Role").selectOption({ label: "viewer" });
    await dialog.getByRole("button", { name: "Send invitation" }).click();
    await admin.page.getByRole("heading", { name: "Invitation created for rosa.resend@console.test" }).waitFor();
    const firstPath = await shownInvitationPath(admin.page);

    await admin.page.getByRole("button", { name: "Resend the invitation of rosa.resend@console.test" }).click();
    const confirm = admin.page.getByRole("dialog", { name: "Resend the invitation of rosa.resend@console.test?" });
    await admin.audit();
    await confirm.getByRole("button", { name: "Resend invitation" }).click();
    await confirm.waitFor({ state: "hidden" });
    await waitForText(admin.page.getByTestId("invitation-link"), (t) => !t.endsWith(firstPath));
    const secondPath = await shownInvitationPath(admin.page);
    expect(secondPath).not.toBe(firstPath);
    const stored = (await service.call("GET", "/api/v1/invitations?search=rosa")).items[0];
    expect(stored).toMatchObject({ status: "pending", sendCount: 2 });

    // The first link is dead: the public page says so (the API answers 404 for it).
    const invitee = await suite.open();
    invitee.expectStatus(404, "invitations.publicGet");
    await invitee.goto(firstPath);
    await invitee.page.getByRole("alert").getByText(/This invitation link is not valid/).waitFor();
    await invitee.screenshot("members-invitation-link-invalid");

    await admin.page.getByRole("button", { name: "Revoke the invitation of rosa.resend@console.test" }).click();
    await admin.page.getByRole("dialog", { name: /^Revoke the invitation/ }).getByRole("button", { name: "Revoke invitation" }).click();
    const row = admin.page.getByRole("table", { name: "Invitations" }).getByRole("row").filter({ hasText: "rosa.resend@console.test" });
    await waitForText(row, (t) => t.includes("revoked"));
    expect((await service.call("GET", `/api/v1/invitations/${stored.id}`)).status).toBe("revoked");
    expect((await service.api("GET", `/api/v1/public/invitations/${secondPath.split("/").pop()}`, { key: null })).status).toBe(404);
  }, 180_000);

  it("changes a member's role; the last owner's removal is refused with the API's reason", async () => {
    const person = await service.createUser("viewer", { name: "Carl Changed" });
    const admin = await suite.open({ user: ADMIN });
    await admin.goto("/members");
    const table = admin.page.getByRole("table", { name: "Members" });
    await table.getByRole("row").filter({ hasText: person.email }).waitFor();

    await admin.page.getByRole("button", { name: "Change role of Carl Changed" }).click();
    const dialog = admin.page.getByRole("dialog", { name: "Change the role of Carl Changed" });
    await dialog.getByLabel("Role").selectOption({ label: "operator" });
    await admin.audit();
    await dialog.getByRole("button", { name: "Change role" }).click();
    await dialog.waitFor({ state: "hidden" });
    await waitForText(table.getByRole("row").filter({ hasText: person.email }), (t) => t.includes("operator"));
    const stored = await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/members/${person.id}`);
    expect(stored.role.name).toBe("operator");

    // The organization's only owner: removal is refused, and the dialog says why.
    const owners = (await service.call("GET", `/api/v1/organizations/${service.defaultOrg.id}/members?limit=200`)).items.filter((m: { role: { name: string } }) => m.role.name === "owner");
    expect(owners).toHaveLength(1);
    const owner = owners[0];
    admin.expectStatus(409, "members.remove");
    await admin.page.getByRole("button", { name: `Remove ${owner.name}` }).click();
    const confirm = admin.page.getByRole("dialog", { name: `Remove ${owner.name}?` });
    await confirm.getByRole("button", { name: "Remove member" }).click();
    await confirm.getByRole("alert").getByText(/Cannot remove the last owner of the organization/).waitFor();
    await admin.audit();
    await admin.screenshot("members-last-owner-refused");
    await confirm.getByRole("button", { name: "Cancel" }).click();
    expect((await service.api("GET", `/api/v1/organizations/${service.defaultOrg.id}/members/${owner.userId}`)).status).toBe(200);

    // Anyone else can be removed.
    await admin.page.getByRole("button", { name: "Remove Carl Changed" }).click();
    await admin.page.getByRole("dialog", { name: "Remove Carl Changed?" }).getByRole("button", { name: "Remove member" }).click();
    await table.getByRole("row").filter({ hasText: person.email }).waitFor({ state: "detached" });
    expect((await service.api("GET", `/api/v1/organizations/${service.defaultOrg.id}/members/${person.id}`)).status).toBe(404);
    await admin.screenshot("members-list");
  }, 180_000);
});
