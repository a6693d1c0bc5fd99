// The device table in Chromium, beyond paging and filtering (table.test.ts): the label
// selector offers the fleet's keys and then a key's values, with the API's device counts, as
// the browser's suggestions; and a device's change of status shows in the table without a
// reload (the realtime channel).
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let edge: SimulatedFleet;

/** The suggestions the browser offers for the label selector (its datalist), as "value | label". */
async function suggestions(page: Page): Promise<string[]> {
  const listId = await page.getByLabel("Label selector").getAttribute("list");
  return page.locator(`datalist[id="${listId}"] option`).evaluateAll((options) =>
    options.map((o) => {
      const option = o as unknown as { value: string; textContent: string | null };
      return `${option.value} | ${option.textContent ?? ""}`;
    }));
}

async function waitForSuggestions(page: Page, expected: string[]): Promise<void> {
  await expect.poll(() => suggestions(page), { timeout: 20_000, interval: 100 }).toEqual(expected);
}

describe.skipIf(!peerAvailable("chromium"))("console device table, suggestions and live status", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    edge = await service.enrollFleet({ prefix: "kiln", devices: 5, labels: { site: "turin", tier: "edge" } });
    await service.enrollFleet({ prefix: "core", devices: 2, labels: { site: "milan", tier: "core" } });
  });

  it("offers the fleet's label keys, then the typed key's values, with the API's device counts", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices");
    const selector = ui.page.getByLabel("Label selector");

    await selector.fill("ti");
    const keys = await service.call<{ items: { key: string; deviceCount: number }[] }>("GET", "/api/v1/groups/label-keys?limit=200");
    const tier = keys.items.find((k) => k.key === "tier")!;
    expect(tier.deviceCount).toBe(7);
    await waitForSuggestions(ui.page, [`tier= | tier (${tier.deviceCount} devices)`]);

    await selector.fill("tier=");
    const values = await service.call<{ items: { value: string; count: number }[] }>("GET", "/api/v1/groups/label-keys/tier/values?limit=50");
    expect(values.items.map((v) => [v.value, v.count])).toEqual([["edge", 5], ["core", 2]]);
    await waitForSuggestions(ui.page, values.items.map((v) => `tier=${v.value} | ${v.count} devices`));
    await selector.fill("tier=c");
    await waitForSuggestions(ui.page, ["tier=core | 2 devices"]);
    await ui.audit();

    // Taking the suggestion filters the table.
    await selector.fill("tier=core");
    await waitForPath(ui.page, (url) => url.searchParams.get("labels") === "tier=core", "labels=tier=core in the URL");
    await ui.settled();
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–2 of 2");
    await ui.audit();
  });

  it("shows a device's change of status in the table without a reload", async () => {
    const device = edge.devices[0];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices?labels=site%3Dturin");
    const row = ui.page.getByRole("table", { name: "Devices" }).getByRole("row").filter({ has: ui.page.getByRole("link", { name: device.reportedDeviceId, exact: true }) });
    await waitForText(row, (t) => t.includes("Online"));
    await ui.page.getByRole("status").filter({ hasText: "Live" }).waitFor();
    // A mark in the page: gone if the page were loaded again.
    await ui.page.evaluate(() => { (globalThis as unknown as { stillTheSamePage: boolean }).stillTheSamePage = true; });

    device.failing = true;
    await edge.heartbeat([device]);
    expect((await service.call("GET", `/api/v1/devices/${device.deviceId}`)).status).toBe("error");
    await waitForText(row, (t) => t.includes("Error") && !t.includes("Online"));
    expect(await ui.page.evaluate(() => (globalThis as unknown as { stillTheSamePage?: boolean }).stillTheSamePage)).toBe(true);
    await ui.audit();
  });
});
