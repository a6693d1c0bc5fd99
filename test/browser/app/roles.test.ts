// A viewer ("reads everything, changes nothing") in Chromium: every page of the fleet shows
// its data and no control that could only fail (found by accessible name, as a person would
// look for them), and no page asks the API for something the role may not have (the harness
// fails the test on any 4xx it was not told about). An owner on the same pages does see the
// controls, so their absence means something.
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { type ConsoleService, type SimulatedFleet, type User } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let viewer: User;
let owner: User;

/** Buttons and links that change something, by the names the console gives them. */
const WRITE_CONTROLS = [
  /^Enroll devices$/, /^Create (an enrollment )?token$/, /^Revoke/, /^Rename$/, /^Release claim$/, /^Delete/, /^Edit labels$/,
  /^Set or remove a label$/, /^Select /, /^Select all rows/,
];

/** The write controls a page shows (buttons, links and checkboxes), by accessible name. */
async function writeControls(page: Page): Promise<string[]> {
  const found: string[] = [];
  for (const role of ["button", "link", "checkbox"] as const) {
    for (const name of WRITE_CONTROLS) {
      const count = await page.getByRole(role, { name }).count();
      if (count > 0) found.push(`${role} ${name} (${count})`);
    }
  }
  return found;
}

/** The pages of the fleet, each with something that proves its data arrived. */
function pages(deviceId: string, deviceName: string) {
  return [
    { path: "/", loaded: (p: Page) => waitForText(p.getByRole("region", { name: "Devices by status" }).locator(".donut__center"), "3devices") },
    { path: "/devices", loaded: (p: Page) => p.getByRole("link", { name: deviceName, exact: true }).waitFor() },
    { path: `/devices/${deviceId}?tab=activity`, loaded: (p: Page) => p.getByRole("list", { name: "Device activity" }).waitFor() },
    {
      path: `/devices/${deviceId}?tab=certificates`,
      // Downloading a certificate only reads: everyone who sees it may.
      loaded: async (p: Page) => {
        await waitForText(p.getByRole("table", { name: "Certificates" }).locator("tbody tr").first(), (t) => t.includes("valid"));
        await p.getByRole("button", { name: /^Download certificate/ }).first().waitFor();
      },
    },
    { path: "/groups?key=site", loaded: (p: Page) => p.getByRole("table", { name: "Values of site" }).waitFor() },
    { path: "/enrollment-tokens", loaded: (p: Page) => p.getByRole("table", { name: "Enrollment tokens" }).getByRole("row").nth(1).waitFor() },
  ];
}

describe.skipIf(!peerAvailable("chromium"))("console roles", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "ro", devices: 3, labels: { site: "lisbon" } });
    viewer = await service.createUser("viewer", { name: "Vera Viewer" });
    owner = await service.createUser("owner", { name: "Otto Owner" });
  });


  it("a viewer sees every fleet page's data and no control that changes anything", async () => {
    const ui = await suite.open({ user: viewer });
    const device = fleet.devices[0];
    for (const { path, loaded } of pages(device.deviceId!, device.reportedDeviceId)) {
      await ui.goto(path);
      await loaded(ui.page);
      await ui.settled();
      expect(await writeControls(ui.page), path).toEqual([]);
      await ui.audit();
    }
  });

  it("an owner on the same pages has the controls", async () => {
    const ui = await suite.open({ user: owner });
    const device = fleet.devices[1];
    const seen = new Set<string>();
    for (const { path, loaded } of pages(device.deviceId!, device.reportedDeviceId)) {
      await ui.goto(path);
      await loaded(ui.page);
      await ui.settled();
      for (const control of await writeControls(ui.page)) seen.add(control.replace(/ \(\d+\)$/, ""));
    }
    for (const expected of ["button /^Rename$/", "button /^Release claim$/", "button /^Delete/", "button /^Edit labels$/", "button /^Revoke/", "checkbox /^Select /", "link /^Enroll devices$/", "button /^Create (an enrollment )?token$/"]) {
      expect([...seen]).toContain(expected);
    }
  });

  it("an empty organization tells a viewer there are no devices, without offering to enroll some", async () => {
    const empty = await service.createOrganization("Empty Works");
    const person = await service.createUser("viewer", { organizationId: empty.id });
    const ui = await suite.open({ user: person });
    await ui.goto("/");
    await ui.page.getByRole("region", { name: "Devices by status" }).getByText("No devices yet").waitFor();
    expect(await writeControls(ui.page)).toEqual([]);
    await ui.goto("/devices");
    await ui.page.getByText("No devices yet").waitFor();
    expect(await writeControls(ui.page)).toEqual([]);
  });
});
