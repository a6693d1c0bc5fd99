// The device page's System section in Chromium (docs/os-updates.md): a simulated device with
// RAUC (src/simulator's VirtualSystem: two slots, no real RAUC or bootloader) reports, over the
// real heartbeat, a committed update to 2.0.0 and then a 3.0.0 that rolled back; the page shows
// what runs, the other slot, the last outcome with its reason, and both updates in the history.
// A device without RAUC shows no System section.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

const digest = (hex: string) => `sha256:${hex.repeat(32)}`;
const image = (version: string, hex: string) => ({ component: "os", url: `https://files.example/os-${version}.raucb`, repository: "", digest: digest(hex), version });

let service: ConsoleService;
let fleet: SimulatedFleet;

describe.skipIf(!peerAvailable("chromium"))("console device page: System", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "gw", devices: 1, deployments: { timeScale: 0, systemUpdates: "commit" } });
  });

  it("shows the running system, the other slot, the last update's rollback with its reason, and the history", async () => {
    const [device] = fleet.devices;
    const system = device.system!;
    system.update(image("2.0.0", "2a"));
    await fleet.heartbeat([device]);
    system.behaviour = "rollback";
    const reason = system.update(image("3.0.0", "3b"))!;
    await fleet.heartbeat([device]);
    const api = await service.call<{ system: { lastUpdate: { outcome: string } } }>("GET", `/api/v1/devices/${device.deviceId}`);
    expect(api.system.lastUpdate.outcome).toBe("rolled-back");

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    const section = ui.page.getByRole("region", { name: "System" });
    await waitForText(section.locator('dt:text-is("Running") + dd'), `B · 2.0.0 · ${digest("2a").slice(0, 19)}…`);
    await waitForText(section.locator('dt:text-is("Other slot") + dd'), `A · 3.0.0 · ${digest("3b").slice(0, 19)}…`);
    await waitForText(section.locator('dt:text-is("Last update") + dd'), `3.0.0 rolled back · ${reason}`);
    const rows = section.getByRole("table", { name: "System updates" }).locator("tbody tr");
    await rows.nth(1).waitFor();
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).innerText()).toContain("2.0.0 → 3.0.0");
    expect(await rows.nth(0).innerText()).toContain("rolled back");
    expect(await rows.nth(1).innerText()).toContain("1.0.0 → 2.0.0");
    expect(await rows.nth(1).innerText()).toContain("committed");
    await ui.screenshot("device-system");
    await ui.audit();
  });

  it("a device without RAUC has no System section", async () => {
    const [plain] = (await service.enrollFleet({ prefix: "plain", devices: 1 })).devices;
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${plain.deviceId}`);
    await ui.page.getByRole("region", { name: "Facts" }).waitFor();
    expect(await ui.page.getByRole("region", { name: "System" }).count()).toBe(0);
  });
});
