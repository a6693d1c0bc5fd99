// The sidebar in Chromium: every link in the main navigation opens a console page (never the
// unknown-path page), so nothing in the navigation is a dead end; each page has its main
// buttons beside its title; the sidebar's background runs the length of a long page.
import { describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite, SCREENSHOT_DIR, waitForPath } from "../../support/browser.js";

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
    expect(targets.map((t) => t.name)).toEqual(["Overview", "Devices", "Lobby", "Groups", "Jobs", "Enrollment", "Applications", "Deployments", "Registries", "Marketplace", "Configuration", "Device configuration", "Alerts", "Certificates", "Audit log", "Members & roles", "API keys", "Organization", "Users", "Organizations", "Tenant switches"]);
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
      // The page's main buttons sit where every page has them: beside the title, at the top
      // right, however long the description below the title (API keys had its button below it).
      const header = await ui.page.evaluate(() => {
        type Box = { getBoundingClientRect(): { top: number; bottom: number; left: number; right: number } };
        const doc = (globalThis as unknown as { document: { querySelector(s: string): Box | null } }).document;
        const title = doc.querySelector(".page-header h1");
        const actions = doc.querySelector(".page-header .page-header__actions");
        if (!title || !actions) return null;
        const [t, a] = [title.getBoundingClientRect(), actions.getBoundingClientRect()];
        return { titleBottom: t.bottom, titleRight: t.right, actionsTop: a.top, actionsLeft: a.left };
      });
      if (header) {
        expect(header.actionsTop, `${target.name}: the buttons' top against the title's bottom`).toBeLessThan(header.titleBottom);
        expect(header.actionsLeft, `${target.name}: the buttons right of the title`).toBeGreaterThan(header.titleRight);
      }
      await ui.audit();
    }
  }, 240_000);

  it("the sidebar's background runs the whole length of a page longer than the window", async () => {
    const ui = await suite.open({ user: ADMIN, viewport: { width: 1280, height: 420 } });
    await ui.goto("/profile");
    await ui.page.getByRole("table", { name: "Your sessions" }).waitFor();
    await ui.settled();
    const height = await ui.page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollHeight: number } } }).document.documentElement.scrollHeight);
    expect(height).toBeGreaterThan(420 + 200);
    // the whole page as a person sees it in a full-page screenshot: a few pixels of the
    // sidebar's left padding near the top and at the very bottom, and of the page's background
    const pixels = (x: number, y: number) => ui.page.screenshot({ fullPage: true, clip: { x, y, width: 4, height: 4 }, animations: "disabled" });
    const sidebarTop = await pixels(2, 300);
    const sidebarBottom = await pixels(2, height - 6);
    const pageBackground = await pixels(1280 - 8, height - 6);
    expect(sidebarTop.equals(pageBackground)).toBe(false);
    expect(sidebarBottom.equals(sidebarTop)).toBe(true);
    await ui.page.screenshot({ path: `${SCREENSHOT_DIR}/navigation-sidebar-long-page.png`, fullPage: true });
  });
});
