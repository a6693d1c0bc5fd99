// The rest of a device's page in Chromium: a certificate downloads as the API's PEM, the
// activity timeline filters by type (in the URL), log history filters by level, the
// reported-device-id claim is released after a confirmation, and a device is deleted after a
// confirmation that names it (the API no longer has it, and the device can no longer connect).
import fs from "node:fs";
import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, UI_TIMEOUT_MS } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

describe.skipIf(!peerAvailable("chromium"))("console device actions", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "mill", devices: 4, labels: { site: "graz" } });
  });

  it("downloads a certificate as the API's PEM", async () => {
    const device = fleet.devices[0];
    const [certificate] = (await service.call("GET", `/api/v1/devices/${device.deviceId}/certificates`)).items;
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=certificates`);
    const [download] = await Promise.all([
      ui.page.waitForEvent("download"),
      ui.page.getByRole("button", { name: `Download certificate ${certificate.serialNumber.slice(0, 8)} as PEM` }).click(),
    ]);
    expect(download.suggestedFilename()).toBe(`${device.reportedDeviceId}-${certificate.serialNumber.slice(0, 16)}.pem`);
    const pem = fs.readFileSync((await download.path())!, "utf8");
    expect(pem).toBe(certificate.certificate);
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it("filters the activity by type and the log history by level, both in the URL", async () => {
    const device = fleet.devices[1];
    await service.call("PATCH", `/api/v1/devices/${device.deviceId}`, { body: { labels: { site: "graz", rack: "r1" } } });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=activity`);
    const timeline = ui.page.getByRole("list", { name: "Device activity" });
    await timeline.getByRole("listitem").filter({ hasText: "Enrolled" }).first().waitFor();
    await ui.page.getByLabel("Type").selectOption({ label: "Labels changed" });
    await waitForPath(ui.page, (url) => url.searchParams.get("type") === "labels_changed", "the type in the URL");
    await ui.settled();
    const items = timeline.getByRole("listitem");
    await waitForText(items.first(), (t) => t.includes("Labels changed"));
    // The unfiltered page may still be on screen for a moment (kept while the filtered one loads).
    await expect.poll(async () => (await items.allTextContents()).filter((t) => !t.includes("Labels changed")), { timeout: UI_TIMEOUT_MS }).toEqual([]);
    await ui.audit();

    const line = (level: "info" | "error", message: string) => ({ timestamp: new Date().toISOString(), level, source: "console-test", message });
    const error = `disk failure ${crypto.randomUUID()}`;
    expect((await device.sendLogs([line("info", "routine line"), line("error", error)])).status).toBeLessThan(300);
    await ui.page.getByRole("tab", { name: "Logs" }).click();
    await ui.settled();
    const history = ui.page.getByRole("table", { name: "Log lines, newest first" });
    await history.locator("tbody tr").filter({ hasText: "routine line" }).waitFor();
    await ui.page.getByRole("group", { name: "Levels" }).getByRole("checkbox", { name: "error" }).check();
    await waitForPath(ui.page, (url) => url.searchParams.get("level") === "error", "the level in the URL");
    await waitForText(history.locator("tbody"), (t) => t.includes(error) && !t.includes("routine line"));
    expect(await history.locator("tbody tr").count()).toBe(1);
    await ui.audit();
  });

  it("releases the reported-device-id claim after a confirmation", async () => {
    const device = fleet.devices[2];
    expect((await service.call("GET", `/api/v1/devices/${device.deviceId}`)).claimActive).toBe(true);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    await ui.page.getByRole("button", { name: "Release claim" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Release the reported-device-id claim?" });
    await waitForText(dialog, (t) => t.includes(device.reportedDeviceId) && t.includes("it can still connect"));
    await ui.audit();
    await dialog.getByRole("button", { name: "Release claim" }).click();
    await ui.page.getByText("Claim released", { exact: true }).waitFor();
    await ui.page.getByRole("dialog").waitFor({ state: "detached" });
    // The button goes with the device's read after the release, which may render after the notice.
    await expect.poll(() => ui.page.getByRole("button", { name: "Release claim" }).count(), { timeout: UI_TIMEOUT_MS }).toBe(0);
    expect((await service.call("GET", `/api/v1/devices/${device.deviceId}`)).claimActive).toBe(false);
    expect((await device.heartbeat()).status).toBe(200);
  });

  it("deletes the device after a confirmation that names it, and lands on the device table", async () => {
    const device = fleet.devices[3];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    await ui.page.getByRole("button", { name: "Delete", exact: true }).click();
    const dialog = ui.page.getByRole("dialog", { name: `Delete ${device.reportedDeviceId}?` });
    await waitForText(dialog, (t) => t.includes("cannot be undone"));
    await ui.audit();
    await dialog.getByRole("button", { name: "Delete device" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/devices", "the device table");
    await ui.page.getByText(`${device.reportedDeviceId} deleted`).waitFor();
    await ui.settled();
    await ui.audit();
    // The table's rows are in (another device of the fleet is listed) before the deleted one is looked for.
    await ui.page.getByRole("link", { name: fleet.devices[0].reportedDeviceId, exact: true }).waitFor();
    expect(await ui.page.getByRole("link", { name: device.reportedDeviceId, exact: true }).count()).toBe(0);
    expect((await service.api("GET", `/api/v1/devices/${device.deviceId}`)).status).toBe(404);
    expect((await device.heartbeat()).status).toBe(401);
  });
});
