// A person's own profile in Chromium: the name and notification preferences saved as the API
// stores them; the organizations they belong to; the open sessions with their device and last
// use; changing the password signs out every other session (a second browser signed in as the
// same person lands on sign-in, a bearer token stops working) while this one stays, and the
// page says how many ended; "Sign out other sessions" does the same without a new password.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { USER_PASSWORD, type ConsoleService, type User } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";

let service: ConsoleService;

interface SessionRow { id: string; current: boolean; device: string; userAgent: string | null; lastUsedAt: string }

/**
 * A second browser of the same person, on a page, then sent to sign-in once its session ends:
 * by its next request, the person's click or one of the page's own polls (the alerts badge)
 * if that comes first. The 401 is announced (`expectStatus`) before the session ends.
 */
async function expectSignedOut(other: ConsolePage) {
  if (new URL(other.page.url()).pathname !== "/sign-in") {
    // Not awaited alone: a poll may take the page to sign-in before the link can be clicked;
    // where the page ends up is what is checked.
    void other.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click().catch(() => undefined);
  }
  const signIn = await waitForPath(other.page, (url) => url.pathname === "/sign-in", "the sign-in page");
  expect(signIn.searchParams.get("reason")).toBe("expired");
  await other.page.getByText("Your session has ended. Sign in again to continue where you were.").waitFor();
  await other.audit();
}

describe.skipIf(!peerAvailable("chromium"))("console profile", () => {
  const suite = consoleSuite();

  beforeAll(() => {
    service = suite.service;
  });

  it("saves the name and notification preferences as the API stores them, and lists the person's organizations", async () => {
    const user = await service.createUser("operator", { name: "Pat Person" });
    const second = await service.createOrganization("Profile Second Org");
    await service.addMember(user.id, second.id, "viewer");
    const token = await service.bearer(user);
    const ui = await suite.open({ user });
    await ui.goto("/profile");

    const account = ui.page.getByRole("form", { name: "Account" });
    await account.getByLabel("Name").fill("");
    await account.getByText("A name is needed").waitFor();
    expect(await account.getByRole("button", { name: "Save name" }).isDisabled()).toBe(true);
    await account.getByLabel("Name").fill("Pat Renamed");
    await account.getByRole("button", { name: "Save name" }).click();
    await ui.page.getByText("Name saved").waitFor();
    expect((await service.call("GET", "/api/v1/profile", { key: null, token })).name).toBe("Pat Renamed");

    const prefs = ui.page.getByRole("form", { name: "Notification preferences" });
    const stored = await service.call("GET", "/api/v1/profile/notification-preferences", { key: null, token });
    expect(await prefs.getByLabel("Devices").isChecked()).toBe(stored.categories.devices);
    expect(await prefs.getByRole("button", { name: "Save preferences" }).isDisabled()).toBe(true);
    await prefs.getByLabel("Devices").setChecked(!stored.categories.devices);
    await prefs.getByLabel("By e-mail").setChecked(false);
    await prefs.getByLabel("Digest").selectOption("weekly");
    await ui.audit();
    await prefs.getByRole("button", { name: "Save preferences" }).click();
    await ui.page.getByText("Notification preferences saved").waitFor();
    expect(await service.call("GET", "/api/v1/profile/notification-preferences", { key: null, token })).toEqual({
      ...stored, email: false, digest: "weekly", categories: { ...stored.categories, devices: !stored.categories.devices },
    });

    const orgs = ui.page.getByRole("list", { name: "Your organizations" });
    const accessible = await service.call<{ items: { name: string; role: string | null }[] }>("GET", "/api/v1/tenant/accessible", { key: null, token });
    await waitForText(orgs, (t) => accessible.items.every((o) => t.includes(o.name) && t.includes(o.role!)));
    expect(await orgs.getByRole("listitem").count()).toBe(2);
    await ui.screenshot("profile");

    // One gap between every card: the sessions card does not touch the grid of cards above it.
    type Box = { getBoundingClientRect(): { top: number; bottom: number } };
    const gridBottom = await ui.page.locator("#main .grid").first().evaluate((el) => (el as unknown as Box).getBoundingClientRect().bottom);
    const sessionsTop = await ui.page.getByRole("region", { name: "Sessions" }).evaluate((el) => (el as unknown as Box).getBoundingClientRect().top);
    expect(sessionsTop - gridBottom).toBeGreaterThanOrEqual(16);
    await ui.page.setViewportSize({ width: 1280, height: 1700 });
    await ui.screenshot("profile-full");
  });

  it("changing the password signs out every other session, and says so; this one stays", async () => {
    const user: User = await service.createUser("viewer", { name: "Cora Changer" });
    const here = await suite.open({ user });
    const elsewhere = await suite.open({ user });
    const token = await service.bearer(user);
    await elsewhere.goto("/profile");
    await here.goto("/profile");

    // Three sessions: two browsers and the API client, newest use first, = the API's list.
    const table = here.page.getByRole("table", { name: "Your sessions" });
    const listed = await service.call<{ items: SessionRow[] }>("GET", "/api/v1/profile/sessions", { key: null, token });
    expect(listed.items).toHaveLength(3);
    // While loading, the table shows placeholder rows: read it once the sessions are in.
    await waitForText(table.locator("tbody"), (t) => t.includes("this session"));
    await expect.poll(() => table.locator("tbody tr").count(), { timeout: 20_000 }).toBe(3);
    const devices = await table.locator("tbody tr").evaluateAll((rows) => rows.map((r) => (r.querySelector("td")?.textContent ?? "").trim()));
    expect(devices).toHaveLength(3);
    expect(devices.filter((d) => d.startsWith("Chrome on Linux"))).toHaveLength(2);
    expect(devices.filter((d) => d.includes("this session"))).toHaveLength(1);
    await here.screenshot("profile-sessions");

    const form = here.page.getByRole("form", { name: "Change password" });
    await form.getByLabel("Current password").fill(USER_PASSWORD);
    await form.getByLabel("New password", { exact: true }).fill("short");
    await form.getByText("At least 10 characters").waitFor();
    expect(await form.getByRole("button", { name: "Change password" }).isDisabled()).toBe(true);
    const next = "a-brand-new-password-2";
    service.rememberSecret(next);
    await form.getByLabel("New password", { exact: true }).fill(next);
    await form.getByLabel("New password again").fill(next + "x");
    await form.getByText("Does not match the new password").waitFor();
    await form.getByLabel("New password again").fill(next);
    await here.audit();
    elsewhere.expectStatus(401);
    await form.getByRole("button", { name: "Change password" }).click();
    await waitForText(form.getByRole("status"), "Password changed. 2 other sessions were signed out.");
    await here.audit();
    await here.screenshot("profile-password-changed");

    // This browser stays signed in, with one session left; the others are gone.
    await waitForText(table.locator("tbody"), (t) => t.includes("this session"));
    await expect.poll(() => table.locator("tbody tr").count(), { timeout: 20_000 }).toBe(1);
    expect((await service.api("GET", "/api/v1/profile", { key: null, token })).status).toBe(401);
    expect((await service.api("POST", "/api/v1/auth/login", { key: null, body: { email: user.email, password: USER_PASSWORD } })).status).toBe(401);
    const fresh = await service.bearer({ email: user.email, password: next });
    expect((await service.call("GET", "/api/v1/profile", { key: null, token: fresh })).email).toBe(user.email);
    await expectSignedOut(elsewhere);
  });

  it("signs out the other sessions after a confirmation", async () => {
    const user = await service.createUser("viewer", { name: "Sid Signout" });
    const here = await suite.open({ user });
    const elsewhere = await suite.open({ user });
    const token = await service.bearer(user);
    await elsewhere.goto("/profile");
    await here.goto("/profile");
    const table = here.page.getByRole("table", { name: "Your sessions" });
    await expect.poll(() => table.locator("tbody tr").count(), { timeout: 20_000 }).toBe(3);

    await here.page.getByRole("button", { name: "Sign out other sessions" }).click();
    const dialog = here.page.getByRole("dialog", { name: "Sign out 2 other sessions?" });
    await dialog.getByText("Every browser and client signed in as you, except this one, must sign in again.").waitFor();
    await here.audit();
    elsewhere.expectStatus(401);
    await dialog.getByRole("button", { name: "Sign out others" }).click();
    await here.page.getByText("2 sessions signed out").waitFor();
    await expect.poll(() => table.locator("tbody tr").count(), { timeout: 20_000 }).toBe(1);
    expect(await here.page.getByRole("button", { name: "Sign out other sessions" }).count()).toBe(0);
    expect((await service.api("GET", "/api/v1/profile/sessions", { key: null, token })).status).toBe(401);
    await expectSignedOut(elsewhere);
    await here.audit();
  });
});
