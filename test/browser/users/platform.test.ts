// The Super Admin's platform pages in Chromium, each action checked against the API:
// * Users: create one, find it by search (in the URL), disable it (its sign-in is refused),
//   enable it (signs in again), mail a reset link, export the filtered list as CSV.
// * Organizations: statistics per organization, create one, suspend and restore it, delete it;
//   deleting one that still has devices is refused with the blockers named, and no button.
// * Tenant switches: a switch started with a reason shows the banner and the active switch,
//   and ending it from the page ends it.
// An organization's owner who is no Super Admin sees no Platform section, and the pages answer
// that they are not theirs, without asking the API anything it would refuse.
import fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, USER_PASSWORD, type ConsoleService, type Organization, type User } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";

let service: ConsoleService;
let fleetOrg: Organization;
let owner: User;

async function signInStatus(email: string, password: string) {
  return (await service.api("POST", "/api/v1/auth/login", { key: null, body: { email, password } })).status;
}

async function contextOf(ui: ConsolePage) {
  const res = await ui.page.request.get("/api/v1/tenant/context");
  expect(res.status()).toBe(200);
  return (await res.json()) as { organization: { id: string }; activeSwitch: null | { toOrgId: string; reason?: string } };
}

describe.skipIf(!peerAvailable("chromium"))("platform pages for Super Admins", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleetOrg = await service.createOrganization("Harbour Cranes");
    const fleetOwner = await service.createUser("owner", { organizationId: fleetOrg.id });
    await service.enrollFleet({ prefix: "crane", devices: 2, as: { key: null, token: await service.bearer(fleetOwner) } });
    owner = await service.createUser("owner", { name: "Olga Owner" });
  });

  it("users: create, search, disable (sign-in refused), enable, reset password, export", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    const nav = ui.page.getByRole("navigation", { name: "Main" });
    await nav.getByRole("heading", { name: "Platform" }).waitFor();
    await nav.getByRole("link", { name: "Users" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/platform/users", "the users page");
    await ui.page.getByRole("table", { name: "Users" }).getByText(ADMIN.email).waitFor();
    await ui.settled();
    await ui.audit();
    // Created in the console's one date format (as the Organization page shows its own), not "12/7/2026".
    const admin = (await service.call<{ items: { createdAt: string }[] }>("GET", `/api/v1/users?search=${encodeURIComponent(ADMIN.email)}`)).items[0];
    const consoleDate = new Intl.DateTimeFormat("en-US", { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit", timeZone: "UTC" });
    const adminRow = ui.page.getByRole("table", { name: "Users" }).getByRole("row").filter({ hasText: ADMIN.email });
    expect(await adminRow.locator(`time[datetime="${admin.createdAt}"]`).textContent()).toBe(consoleDate.format(new Date(admin.createdAt)));

    const email = `casey-${Date.now()}@console.test`;
    await ui.page.getByRole("button", { name: "Create user" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Create a user" });
    await dialog.getByLabel("E-mail").fill(email);
    await dialog.getByLabel("Name").fill("Casey Newcomer");
    await dialog.getByLabel(/^Password/).fill("short");
    await dialog.getByText("At least 12 characters (5 so far)").waitFor();
    expect(await dialog.getByRole("button", { name: "Create user" }).isDisabled()).toBe(true);
    await dialog.getByLabel(/^Password/).fill(USER_PASSWORD);
    await ui.audit();
    await dialog.getByRole("button", { name: "Create user" }).click();
    await ui.page.getByText(`User ${email} created`).waitFor();
    const created = (await service.call<{ items: { id: string; status: string; name: string }[] }>("GET", `/api/v1/users?search=${encodeURIComponent(email)}`)).items;
    expect(created).toMatchObject([{ name: "Casey Newcomer", status: "active" }]);
    const userId = created[0].id;
    await service.addMember(userId, service.defaultOrg.id, "viewer");
    expect(await signInStatus(email, USER_PASSWORD)).toBe(200);

    // Search: in the URL, the table shows only the match.
    await ui.page.getByLabel("Search").fill("casey-");
    await waitForPath(ui.page, (url) => url.searchParams.get("search") === "casey-", "the search in the URL");
    const table = ui.page.getByRole("table", { name: "Users" });
    await waitForText(table.locator("tbody"), (t) => t.includes(email) && !t.includes(ADMIN.email));
    await ui.settled();

    // Disable: the sign-in is refused.
    await table.getByRole("button", { name: `Disable ${email}` }).click();
    const confirmDisable = ui.page.getByRole("dialog", { name: `Disable ${email}?` });
    await ui.audit();
    await confirmDisable.getByRole("button", { name: "Disable user" }).click();
    await table.getByRole("button", { name: `Enable ${email}` }).waitFor();
    expect((await service.call("GET", `/api/v1/users/${userId}`)).status).toBe("disabled");
    expect(await signInStatus(email, USER_PASSWORD)).toBe(401);
    await ui.screenshot("platform-users-disabled");

    // Enable: signs in again.
    await table.getByRole("button", { name: `Enable ${email}` }).click();
    await ui.page.getByRole("dialog", { name: `Enable ${email}?` }).getByRole("button", { name: "Enable user" }).click();
    await table.getByRole("button", { name: `Disable ${email}` }).waitFor();
    expect((await service.call("GET", `/api/v1/users/${userId}`)).status).toBe("active");
    expect(await signInStatus(email, USER_PASSWORD)).toBe(200);

    // Reset password: the API mails a link and says until when it works.
    await table.getByRole("button", { name: `Reset password of ${email}` }).click();
    await ui.page.getByRole("dialog", { name: `Reset the password of ${email}?` }).getByRole("button", { name: "Send reset link" }).click();
    await ui.page.getByText(`Reset link for ${email} not mailed`).waitFor();

    // Export: the filtered list as a CSV download.
    const [download] = await Promise.all([ui.page.waitForEvent("download"), ui.page.getByRole("button", { name: "Export CSV" }).click()]);
    expect(download.suggestedFilename()).toMatch(/^users-\d{4}-\d{2}-\d{2}\.csv$/);
    const csv = fs.readFileSync((await download.path())!, "utf8").split("\r\n").filter(Boolean);
    expect(csv).toHaveLength(2);
    expect(csv[0]).toContain("email");
    expect(csv[1]).toContain(email);
    await ui.page.getByText("Exported 1 user as CSV").waitFor();
    await ui.settled();
    await ui.audit();
  });

  it("organizations: statistics, create, suspend, restore, delete; one with devices names its blockers", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/platform/organizations");
    const table = ui.page.getByRole("table", { name: "Organizations" });
    const craneRow = table.getByRole("row").filter({ hasText: "Harbour Cranes" });
    await waitForText(craneRow, (t) => t.includes("active"));
    // Members, devices and deployments, as the API counts them.
    const stats = (await service.call("GET", `/api/v1/organizations/${fleetOrg.id}?includeStats=true`)).stats;
    expect(stats).toMatchObject({ userCount: 1, deviceCount: 2 });
    const cells = await craneRow.getByRole("cell").allTextContents();
    expect(cells.slice(2, 5)).toEqual([String(stats.userCount), String(stats.deviceCount), String(stats.deploymentCount)]);
    // Last activity: the owner's sign-in and requests and the devices' calls (not "never"), the time the API gives
    const { lastActivityAt } = await service.call<{ lastActivityAt: string | null }>("GET", `/api/v1/organizations/${fleetOrg.id}`);
    expect(lastActivityAt).not.toBeNull();
    expect(await craneRow.getByRole("cell").nth(5).locator("time").getAttribute("datetime")).toBe(lastActivityAt);

    // Deleting one with devices: the blockers are named, and there is nothing to confirm.
    await craneRow.getByRole("button", { name: "Delete Harbour Cranes" }).click();
    const blocked = ui.page.getByRole("dialog", { name: "Delete Harbour Cranes?" });
    await waitForText(blocked.getByRole("status", { name: "Deletion blocked" }), (t) => t.includes("still has 2 devices"));
    expect(await blocked.getByRole("button", { name: "Delete organization" }).count()).toBe(0);
    await ui.audit();
    await ui.screenshot("platform-organizations-delete-blocked");
    await blocked.getByRole("button", { name: "Close" }).click();

    // Create.
    await ui.page.getByRole("button", { name: "Create organization" }).first().click();
    const create = ui.page.getByRole("dialog", { name: "Create an organization" });
    await create.getByLabel("Name").fill("Parcel Robotics");
    await create.getByLabel(/^Slug/).fill("Parcel_Robotics");
    await create.getByText("Lower-case letters, digits and single hyphens").waitFor();
    await create.getByLabel(/^Slug/).fill("parcel-robotics");
    await create.getByLabel(/^Description/).fill("Sorting robots");
    await create.getByRole("button", { name: "Create organization" }).click();
    await ui.page.getByText("Organization Parcel Robotics created").waitFor();
    const parcel = await service.call<{ id: string; status: string; description: string }>("GET", "/api/v1/organizations/by-slug/parcel-robotics");
    expect(parcel).toMatchObject({ status: "active", description: "Sorting robots" });
    const parcelRow = table.getByRole("row").filter({ hasText: "Parcel Robotics" });

    // Suspend with a reason, then restore.
    await parcelRow.getByRole("button", { name: "Suspend Parcel Robotics" }).click();
    const suspend = ui.page.getByRole("dialog", { name: "Suspend Parcel Robotics?" });
    await suspend.getByLabel(/^Reason/).fill("Invoice overdue");
    await suspend.getByRole("button", { name: "Suspend organization" }).click();
    await parcelRow.getByRole("button", { name: "Restore Parcel Robotics" }).waitFor();
    await waitForText(parcelRow, (t) => t.includes("suspended"));
    expect((await service.call("GET", `/api/v1/organizations/${parcel.id}`)).status).toBe("suspended");
    await ui.settled();
    await ui.audit();
    await ui.screenshot("platform-organizations");

    await parcelRow.getByRole("button", { name: "Restore Parcel Robotics" }).click();
    await ui.page.getByRole("dialog", { name: "Restore Parcel Robotics?" }).getByRole("button", { name: "Restore organization" }).click();
    await parcelRow.getByRole("button", { name: "Suspend Parcel Robotics" }).waitFor();
    expect((await service.call("GET", `/api/v1/organizations/${parcel.id}`)).status).toBe("active");

    // Delete the empty one.
    await parcelRow.getByRole("button", { name: "Delete Parcel Robotics" }).click();
    const remove = ui.page.getByRole("dialog", { name: "Delete Parcel Robotics?" });
    await remove.getByText("This cannot be undone").waitFor();
    await remove.getByRole("button", { name: "Delete organization" }).click();
    await ui.page.getByText("Organization Parcel Robotics deleted").waitFor();
    await parcelRow.waitFor({ state: "detached" });
    expect((await service.api("GET", `/api/v1/organizations/${parcel.id}`)).status).toBe(404);
    await ui.settled();
    await ui.audit();
  });

  it("tenant switches: a switch with a reason shows the banner and the active switch; ending it from the page ends it", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/platform/tenant-switches");
    const start = ui.page.getByRole("form", { name: "Start a switch" });
    await start.getByLabel("Organization").selectOption({ label: "Harbour Cranes (active)" });
    await start.getByRole("button", { name: "Switch into…" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Switch into Harbour Cranes" });
    await dialog.getByLabel("Reason").fill("Crane 7 support call");
    await ui.audit();
    await dialog.getByRole("button", { name: "Switch for 60 minutes" }).click();

    const banner = ui.page.getByRole("region", { name: "Tenant switch" });
    await waitForText(banner, (t) => t.includes("Harbour Cranes") && t.includes("Crane 7 support call"));
    expect(await contextOf(ui)).toMatchObject({ organization: { id: fleetOrg.id }, activeSwitch: { toOrgId: fleetOrg.id, reason: "Crane 7 support call" } });
    await ui.settled();
    await ui.audit();

    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Tenant switches" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/platform/tenant-switches", "the tenant switches page");
    const active = ui.page.getByRole("table", { name: "Active switches" });
    const row = active.getByRole("row").filter({ hasText: "Crane 7 support call" });
    await waitForText(row, (t) => t.includes("you") && t.includes("Harbour Cranes"));
    // Switched in, the only organization left to enter is none: the page says a new switch replaces this one.
    await ui.page.getByText("Switching again replaces the active switch; your home organization stays Default.").waitFor();
    expect(await ui.page.getByText("You are a member of every organization").count()).toBe(0);
    const listed = await service.call<{ items: { toOrgId: string; reason?: string }[] }>("GET", "/api/v1/tenant/switches/active");
    expect(listed.items).toEqual([expect.objectContaining({ toOrgId: fleetOrg.id, reason: "Crane 7 support call" })]);
    await ui.settled();
    await ui.audit();
    await ui.screenshot("platform-tenant-switches");

    await row.getByRole("button", { name: "End switch into Harbour Cranes" }).click();
    await ui.page.getByText("Switch ended").waitFor();
    await banner.waitFor({ state: "detached" });
    expect(await contextOf(ui)).toMatchObject({ organization: { id: service.defaultOrg.id }, activeSwitch: null });
    expect((await service.call<{ items: unknown[] }>("GET", "/api/v1/tenant/switches/active")).items).toEqual([]);
    await ui.settled();
    await ui.audit();
  });

  it("an owner who is no Super Admin sees no Platform section, and the pages say they are not theirs", async () => {
    const ui = await suite.open({ user: owner });
    await ui.goto("/");
    const nav = ui.page.getByRole("navigation", { name: "Main" });
    await nav.getByRole("link", { name: "Organization" }).waitFor();
    expect(await nav.getByRole("heading", { name: "Platform" }).count()).toBe(0);
    for (const [path, what] of [["/platform/users", "the platform's users"], ["/platform/organizations", "the platform's organizations"], ["/platform/tenant-switches", "tenant switches"]]) {
      await ui.goto(path);
      await ui.page.getByRole("heading", { name: `You cannot see ${what}` }).waitFor();
      expect(await ui.page.getByRole("button").filter({ hasText: /Create|Export|Switch into/ }).count()).toBe(0);
    }
    // The API agrees: these are Super Admin operations.
    const token = await service.bearer(owner);
    expect((await service.api("POST", "/api/v1/users", { key: null, token, body: { email: "x@console.test", name: "X" } })).status).toBe(403);
    expect((await service.api("GET", "/api/v1/tenant/switches/active", { key: null, token })).status).toBe(403);
  });
});
