// Light and dark theme in Chromium: the theme menu switches the whole console to dark (the
// page, the charts' canvases) and the choice outlives a reload; "System" follows the browser's
// colour scheme. Every main page passes axe-core in the dark theme too (colour contrast of
// text, badges and status colours included), and the pages are photographed in it.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

/** The page's background colour as [r, g, b]. */
async function background(page: Page): Promise<number[]> {
  const css = await page.evaluate(() => {
    const g = globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string }; document: { body: unknown } };
    return g.getComputedStyle(g.document.body).backgroundColor;
  });
  return (css.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number);
}
const luminance = ([r, g, b]: number[]) => (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
const themeOf = (page: Page) => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { dataset: { theme?: string } } } }).document.documentElement.dataset.theme);

describe.skipIf(!peerAvailable("chromium"))("console themes", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "night", devices: 4, labels: { site: "oslo", tier: "edge" } });
    fleet.devices[0].failing = true;
    await fleet.heartbeat(fleet.devices.slice(0, 1));
    const start = Date.now() - 30 * 60_000;
    for (const device of fleet.devices) await device.sendTelemetryHistory(start, 60_000);
    for (const device of fleet.devices) await device.sendLogs();
  });

  it("switches to dark from the theme menu, keeps it after a reload, and every main page passes axe in it", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    expect(await themeOf(ui.page)).toBe("light");
    expect(luminance(await background(ui.page))).toBeGreaterThan(0.8);

    await ui.page.getByRole("button", { name: /^Theme: / }).click();
    await ui.page.getByRole("list", { name: "Theme" }).getByRole("button", { name: "Dark" }).click();
    expect(await themeOf(ui.page)).toBe("dark");
    expect(luminance(await background(ui.page))).toBeLessThan(0.2);
    await ui.page.getByRole("button", { name: "Theme: Dark" }).waitFor();
    await ui.audit();

    await ui.page.reload();
    await ui.settled();
    expect(await themeOf(ui.page)).toBe("dark");
    await ui.page.getByRole("button", { name: "Theme: Dark" }).waitFor();
    await waitForText(ui.page.getByRole("region", { name: "Devices by status" }).locator(".donut__center"), "4devices");
    await ui.audit();
    await ui.screenshot("dark-overview");

    const device = fleet.devices[0];
    for (const [path, ready, name] of [
      ["/devices", (p: Page) => p.getByRole("link", { name: device.reportedDeviceId, exact: true }).waitFor(), "dark-devices"],
      [`/devices/${device.deviceId}`, (p: Page) => p.getByRole("figure", { name: "CPU, memory and disk use over the chosen range" }).locator("canvas").first().waitFor(), "dark-device-telemetry"],
      [`/devices/${device.deviceId}?tab=logs`, (p: Page) => p.getByRole("table", { name: "Log lines, newest first" }).locator("tbody tr").first().waitFor(), "dark-device-logs"],
      [`/devices/${device.deviceId}?tab=activity`, (p: Page) => p.getByRole("list", { name: "Device activity" }).waitFor(), "dark-device-activity"],
      [`/devices/${device.deviceId}?tab=certificates`, (p: Page) => p.getByRole("table", { name: "Certificates" }).locator("tbody tr").first().waitFor(), "dark-device-certificates"],
      ["/groups?key=site", (p: Page) => p.getByRole("table", { name: "Values of site" }).waitFor(), "dark-groups"],
      ["/enrollment-tokens", (p: Page) => p.getByRole("table", { name: "Enrollment tokens" }).getByRole("row").nth(1).waitFor(), "dark-enrollment"],
      ["/profile", (p: Page) => p.getByRole("heading", { level: 1 }).waitFor(), "dark-profile"],
    ] as const) {
      await ui.goto(path);
      await ready(ui.page);
      await ui.settled();
      await ui.audit();
      await ui.screenshot(name);
    }
  });

  it("'System' follows the browser's colour scheme", async () => {
    const ui = await suite.open({ user: ADMIN, colorScheme: "dark" });
    await ui.goto("/devices");
    // A new context has no stored choice: System, dark here.
    await ui.page.getByRole("button", { name: "Theme: System" }).waitFor();
    expect(await themeOf(ui.page)).toBe("dark");
    await ui.page.emulateMedia({ colorScheme: "light" });
    await ui.page.waitForFunction(() => (globalThis as unknown as { document: { documentElement: { dataset: { theme?: string } } } }).document.documentElement.dataset.theme === "light");
    expect(luminance(await background(ui.page))).toBeGreaterThan(0.8);
    await ui.audit();
  });
});
