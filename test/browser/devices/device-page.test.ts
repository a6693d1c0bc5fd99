// One device's page in Chromium: its facts are the API's, its labels are edited in place (and
// the API holds the new set), a rename sticks, and a certificate revoked with a reason is
// revoked for the API and for the device itself, which can no longer authenticate with it.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

describe.skipIf(!peerAvailable("chromium"))("console device page", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "plant", devices: 4, labels: { site: "hamburg", tier: "edge" } });
  });


  it("shows the device's facts as the API reports them", async () => {
    const device = fleet.devices[0];
    const api = await service.call("GET", `/api/v1/devices/${device.deviceId}`);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    await ui.page.getByRole("heading", { level: 1, name: device.reportedDeviceId }).waitFor();
    const facts = ui.page.getByRole("region", { name: "Facts" });
    for (const [label, value] of [
      ["Reported device id", api.reportedDeviceId],
      ["Operating system", api.os],
      ["Architecture", api.arch],
      ["Agent version", api.agentVersion],
      ["Hardware model", api.hardwareModel],
      ["Device id", api.id],
    ] as const) {
      await waitForText(facts.locator(`dt:text-is("${label}") + dd`), value);
    }
    await waitForText(ui.page.getByRole("region", { name: "Labels" }).locator(".chips"), "site=hamburgtier=edge");
    await ui.screenshot("device-page");
  });

  it("says why a device is in error beside its status, as its heartbeat told it", async () => {
    const device = fleet.devices[3];
    device.failing = true;
    await fleet.heartbeat([device]);
    const api = await service.call<{ status: string; statusReason: string }>("GET", `/api/v1/devices/${device.deviceId}`);
    expect(api.status).toBe("error");
    expect(api.statusReason).toBe(device.fault!.reason);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    await waitForText(ui.page.getByRole("status", { name: "Why the device is in error" }), `Error: ${api.statusReason}`);
    await ui.screenshot("device-page-error");
    await ui.audit();
  });

  it("edits the labels in place: the API holds exactly the new set, and the activity shows the change", async () => {
    const device = fleet.devices[1];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=activity`);
    const labels = ui.page.getByRole("region", { name: "Labels" });
    await labels.getByRole("button", { name: "Edit labels" }).click();

    // Rows sorted by key: site, tier. Change site, drop tier, add rack.
    await labels.getByLabel("Label 1 key").waitFor();
    expect(await labels.getByLabel("Label 1 key").inputValue()).toBe("site");
    await labels.getByLabel("Label 1 value").fill("bremen");
    await labels.getByRole("button", { name: "Remove label tier" }).click();
    await labels.getByRole("button", { name: "Add label" }).click();
    // A key the API would refuse is named at once, and nothing can be saved.
    await labels.getByLabel("Label 2 key").fill("bad key");
    await labels.getByText("label keys are 1-128 characters").waitFor();
    expect(await labels.getByRole("button", { name: "Save labels" }).isDisabled()).toBe(true);
    await ui.audit();
    await labels.getByLabel("Label 2 key").fill("rack");
    await labels.getByLabel("Label 2 value").fill("r12");
    await labels.getByRole("button", { name: "Save labels" }).click();
    await ui.page.getByText("Labels saved").waitFor();

    await waitForText(labels.locator(".chips"), "rack=r12site=bremen");
    expect((await service.call("GET", `/api/v1/devices/${device.deviceId}`)).labels).toEqual({ site: "bremen", rack: "r12" });
    const timeline = ui.page.getByRole("list", { name: "Device activity" });
    await timeline.getByRole("listitem").filter({ hasText: "Labels changed" }).first().waitFor();
    await ui.audit();
  });

  it("renames the device", async () => {
    const device = fleet.devices[2];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    await ui.page.getByRole("button", { name: "Rename" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Rename device" });
    await dialog.getByLabel("Name").fill("line-3-gateway");
    await ui.audit();
    await dialog.getByRole("button", { name: "Rename" }).click();
    await ui.page.getByRole("heading", { level: 1, name: "line-3-gateway" }).waitFor();
    expect((await service.call("GET", `/api/v1/devices/${device.deviceId}`)).name).toBe("line-3-gateway");
  });

  it("revokes a certificate with a reason: the API shows it revoked and the device can no longer authenticate with it", async () => {
    const device = fleet.devices[3];
    const [certificate] = (await service.call("GET", `/api/v1/devices/${device.deviceId}/certificates`)).items;
    expect(certificate).toMatchObject({ status: "valid", revoked: false });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=certificates`);
    const table = ui.page.getByRole("table", { name: "Certificates" });
    await waitForText(table.locator("tbody tr").first(), (t) => t.includes("valid"));
    await table.getByRole("button", { name: `Revoke certificate ${certificate.serialNumber.slice(0, 8)}` }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Revoke this certificate?" });
    await dialog.getByLabel("Reason").selectOption("Key compromise");
    await ui.audit();
    await dialog.getByRole("button", { name: "Revoke certificate" }).click();
    await ui.page.getByText("Certificate revoked", { exact: true }).waitFor();
    await waitForText(table.locator("tbody tr").first(), (t) => t.includes("revoked") && t.includes("Key compromise"));
    expect(await table.getByRole("button", { name: /^Revoke certificate/ }).count()).toBe(0);
    await ui.audit();

    const after = await service.call("GET", `/api/v1/devices/${device.deviceId}/certificates/${certificate.id}`);
    expect(after).toMatchObject({ revoked: true, status: "revoked", revokeReason: "Key compromise" });
    const heartbeat = await device.heartbeat();
    expect(heartbeat.status).toBe(401);
  });
});
