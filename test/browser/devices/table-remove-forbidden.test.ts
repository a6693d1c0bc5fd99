// The device table in Chromium, beyond table.test.ts: removing a label from the selected
// devices (the API shows it gone from exactly those), and a custom role without
// devices:read that opens the table's link: it reads "You cannot see devices", asks the API
// for no device and no realtime ticket (the harness fails on any unannounced 403) and
// offers no device action.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

interface DeviceRow { id: string; name: string; labels: Record<string, string> }

describe.skipIf(!peerAvailable("chromium"))("console device table: label removal, forbidden", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "lisbon", devices: 5, labels: { site: "lisbon", rack: "r1" } });
  });

  it("removes a label from the selected devices, and the API shows it gone from exactly those", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/devices?labels=site%3Dlisbon");
    const chosen = fleet.devices.slice(1, 3).map((d) => d.reportedDeviceId);
    for (const name of chosen) await ui.page.getByRole("checkbox", { name: `Select ${name}` }).check();
    const bar = ui.page.getByRole("region", { name: "Selected devices" });
    await waitForText(bar.getByText(/selected$/), "2 selected");
    await bar.getByRole("button", { name: "Set or remove a label" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Label 2 devices" });
    await dialog.getByRole("radio", { name: "Remove" }).check();
    // Removing asks for the key only.
    expect(await dialog.getByLabel("Value").count()).toBe(0);
    await dialog.getByLabel("Key").fill("rack");
    await ui.audit();
    await ui.screenshot("devices-bulk-label-remove");
    await dialog.getByRole("button", { name: "Remove label from 2 devices" }).click();
    await ui.page.getByText("rack removed from 2 devices").waitFor();
    await dialog.waitFor({ state: "hidden" });

    const all = await service.call<{ items: DeviceRow[] }>("GET", "/api/v1/devices?labels=site%3Dlisbon&limit=50&sort=name&order=asc");
    expect(all.items).toHaveLength(5);
    for (const d of all.items) {
      expect(d.labels).toEqual(chosen.includes(d.name) ? { site: "lisbon" } : { site: "lisbon", rack: "r1" });
    }
    // The table shows the change on those rows; the other rows keep the label.
    for (const d of all.items) {
      const row = ui.page.getByRole("row").filter({ has: ui.page.getByRole("link", { name: d.name, exact: true }) });
      if (chosen.includes(d.name)) await row.getByText("rack=r1").waitFor({ state: "detached" });
      else await row.getByText("rack=r1").waitFor();
    }
    await ui.audit();
  });

  it("a custom role without devices:read sees the table's forbidden state and asks for no device", async () => {
    const user = await service.createUserWithPermissions("Telemetry reader", ["telemetry:read"]);
    // The API refuses that role the device list.
    const token = await service.bearer(user);
    expect((await service.api("GET", "/api/v1/devices", { key: null, token })).status).toBe(403);

    const ui = await suite.open({ user });
    const deviceRequests: string[] = [];
    ui.page.on("request", (req) => {
      if (/\/trpc\/[^?]*devices\./.test(req.url())) deviceRequests.push(req.url());
    });
    await ui.goto("/devices?labels=site%3Dlisbon");
    await ui.page.getByRole("heading", { name: "You cannot see devices" }).waitFor();
    expect(await ui.page.getByRole("table", { name: "Devices" }).count()).toBe(0);
    for (const name of ["Enroll devices", "Set or remove a label", "Delete"]) {
      expect(await ui.page.getByRole("button", { name }).count()).toBe(0);
    }
    // The sidebar does not offer the area either.
    expect(await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Devices" }).count()).toBe(0);
    expect(deviceRequests).toEqual([]);
    // Nor a realtime ticket: the API gives none to a role without a channel (no device,
    // deployment or alert events); the indicator says so instead of retrying.
    await ui.page.getByRole("status").filter({ hasText: "Live updates off" }).waitFor();
    await ui.screenshot("devices-forbidden");
  });
});
