// The sidebar in Chromium: every link in the main navigation opens a console page (never the
// unknown-path page), so nothing in the navigation is a dead end.
import { describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite, waitForPath } from "../../support/browser.js";

/** The heading of the console's unknown-path page (app/states.test.ts shows it). */
const UNKNOWN_PATH_HEADING = "This page does not exist";

describe.skipIf(!peerAvailable("chromium"))("console navigation", () => {
  const suite = consoleSuite();

  it("every navigation link opens a page", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    const nav = ui.page.getByRole("navigation", { name: "Main" });
    await nav.waitFor();

    const links = nav.getByRole("link");
    const targets = await links.evaluateAll((els) => els.map((el) => ({ name: (el.textContent ?? "").trim(), href: el.getAttribute("href") ?? "" })));
    expect(targets.map((t) => t.name)).toEqual(["Overview", "Devices", "Groups", "Enrollment", "Applications", "Deployments", "Registries", "Marketplace", "Configuration", "Alerts", "Certificates", "Audit log", "Members & roles", "API keys", "Organization", "Users", "Organizations", "Tenant switches"]);
    // The organization has no marketplace store yet: the API answers 404 and the page offers to set one up.
    ui.expectStatus(404, "marketplaceStore.get");

    // Every area has landed: nothing in the sidebar is marked "coming" any more.
    expect(await nav.locator(".nav-link--coming").count()).toBe(0);
    await ui.screenshot("navigation-sidebar");

    // Each link, clicked as a person would, opens its page, and none is the unknown-path page.
    for (const target of [...targets].reverse()) {
      await nav.getByRole("link", { name: target.name, exact: true }).click();
      await waitForPath(ui.page, (url) => url.pathname === target.href, `the ${target.name} page`);
      await ui.settled();
      await ui.page.getByRole("heading", { level: 1 }).first().waitFor();
      expect(await ui.page.getByRole("heading", { name: UNKNOWN_PATH_HEADING }).count()).toBe(0);
      await ui.audit();
    }
  });
});
