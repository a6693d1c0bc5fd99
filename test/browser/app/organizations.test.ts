// Where a person acts, in Chromium: a member of two organizations switches between them from
// the header and then sees only the organization switched to; a Super Admin entering an
// organization they are not a member of does so with a reason for a limited time, under a
// banner that names the organization, the reason and the end time, whose button ends it.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type Organization } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";

let service: ConsoleService;
let acme: Organization;

/** Who the console's cookie session is, and where it acts (GET /tenant/context with the page's cookie). */
async function contextOf(ui: ConsolePage) {
  const res = await ui.page.request.get("/api/v1/tenant/context");
  expect(res.status()).toBe(200);
  return (await res.json()) as { organization: { id: string; name: string }; role: string | null; activeSwitch: null | { toOrgId: string; reason?: string; expiresAt: string } };
}

describe.skipIf(!peerAvailable("chromium"))("console organizations", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    acme = await service.createOrganization("Acme Robotics");
    const owner = await service.createUser("owner", { organizationId: acme.id });
    const asAcme = { key: null, token: await service.bearer(owner) };
    await service.enrollFleet({ prefix: "acme", devices: 4, labels: { site: "acme-plant" }, as: asAcme });
    await service.enrollFleet({ prefix: "default", devices: 2, labels: { site: "hq" } });
  });


  it("a member of two organizations switches from the header and sees the other organization's fleet only", async () => {
    const user = await service.createUser("operator", { name: "Dana Two-Orgs" });
    await service.addMember(user.id, acme.id, "viewer");
    const ui = await suite.open({ user });
    await ui.goto("/devices");
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–2 of 2");

    const switcher = ui.page.getByRole("banner").getByRole("button", { name: /^Default operator.*switch organization/ });
    await switcher.click();
    const choices = ui.page.getByRole("list", { name: "Organizations" });
    await choices.getByRole("button", { name: /Acme Robotics/ }).waitFor();
    await ui.audit();
    await choices.getByRole("button", { name: /Acme Robotics/ }).click();

    await ui.page.getByText("Now acting in Acme Robotics").waitFor();
    await waitForPath(ui.page, (url) => url.pathname === "/", "the overview");
    await ui.page.getByRole("banner").getByRole("button", { name: /^Acme Robotics viewer.*switch organization/ }).waitFor();
    await waitForText(ui.page.getByRole("region", { name: "Devices by status" }).locator(".donut__center"), "4devices");
    await ui.settled();
    await ui.audit();
    expect(await contextOf(ui)).toMatchObject({ organization: { id: acme.id }, role: "viewer" });

    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Devices" }).click();
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–4 of 4");
    await ui.page.getByRole("link", { name: "acme-000001", exact: true }).waitFor();
    await ui.settled();
    await ui.audit();

    // A reload keeps acting in Acme (the session's organization, not the page's memory).
    await ui.page.reload();
    await ui.settled();
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–4 of 4");
  });

  it("a Super Admin's switch into another tenant shows a banner with the organization, reason and end time; its button ends the switch", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("banner").getByRole("button", { name: /^Default owner.*switch organization/ }).click();
    await ui.page.getByRole("list", { name: "Organizations" }).getByRole("button", { name: /Acme Robotics.*Super Admin: switch with a reason/ }).click();

    const dialog = ui.page.getByRole("dialog", { name: "Switch into Acme Robotics" });
    await dialog.getByLabel("Reason").fill("Support ticket #4711");
    await dialog.getByLabel("Duration").selectOption("30");
    await ui.audit();
    await dialog.getByRole("button", { name: "Switch for 30 minutes" }).click();

    const banner = ui.page.getByRole("region", { name: "Tenant switch" });
    await banner.waitFor();
    const context = await contextOf(ui);
    expect(context).toMatchObject({ organization: { id: acme.id }, role: null, activeSwitch: { toOrgId: acme.id, reason: "Support ticket #4711" } });
    const endsAt = new Date(context.activeSwitch!.expiresAt);
    expect(endsAt.getTime() - Date.now()).toBeGreaterThan(28 * 60_000);
    // in the console's one date format (web/src/ui/time.tsx), as every page shows a date
    const endTime = new Intl.DateTimeFormat("en-US", { year: "numeric", month: "short", day: "numeric", hour: "numeric", minute: "2-digit", second: "2-digit", timeZone: "UTC" }).format(endsAt);
    const text = await waitForText(banner, (t) => t.includes("Acme Robotics"));
    expect(text).toContain("Support ticket #4711");
    expect(text).toContain(endTime);
    expect(await banner.locator("time").first().getAttribute("datetime")).toBe(context.activeSwitch!.expiresAt);
    await waitForText(ui.page.getByRole("region", { name: "Devices by status" }).locator(".donut__center"), "4devices");
    await ui.settled();
    await ui.audit();
    await ui.screenshot("app-tenant-switch-banner");

    // The banner stays on every page while the switch lasts.
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Devices" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/devices", "the devices page");
    await banner.waitFor();
    await ui.settled();
    await ui.audit();

    await banner.getByRole("button", { name: "End switch" }).click();
    await ui.page.getByText("Back in Default").waitFor();
    await banner.waitFor({ state: "detached" });
    expect(await contextOf(ui)).toMatchObject({ organization: { id: service.defaultOrg.id }, activeSwitch: null });
    await waitForText(ui.page.getByRole("region", { name: "Devices by status" }).locator(".donut__center"), "2devices");
    await ui.settled();
    await ui.audit();
  });
});
