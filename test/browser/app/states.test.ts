// How the console shows what went wrong, in Chromium: a device that does not exist (a stale
// link) shows the API's own message and the request id of the failed call (what a person
// quotes to an operator, who finds it in the service's log), with a retry and the way back to
// the device table; a path that is no console page says so and leads back to the overview.
import { describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";

describe.skipIf(!peerAvailable("chromium"))("console error states", () => {
  const suite = consoleSuite();

  it("a deleted device's page shows the API's message and the request id, and the way back instead of a retry", async () => {
    const fleet = await suite.service.enrollFleet({ prefix: "gone", devices: 1 });
    const id = fleet.devices[0].deviceId!;
    expect((await suite.service.api("DELETE", `/api/v1/devices/${id}`)).status).toBe(200);
    const api = await suite.service.api("GET", `/api/v1/devices/${id}`);
    expect(api.status).toBe(404);

    const ui = await suite.open({ user: ADMIN });
    ui.expectStatus(404, "devices.get");
    // A batch that holds the failed call answers 404 alone, 207 beside the shell's own reads.
    const failed = ui.page.waitForResponse((res) => res.url().includes("devices.get") && [404, 207].includes(res.status()));
    await ui.goto(`/devices/${id}`);
    const requestId = (await failed).headers()["x-request-id"];
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);

    await ui.page.getByRole("heading", { level: 1, name: "Device not found" }).waitFor();
    const alert = ui.page.getByRole("alert").filter({ hasText: "Not found" });
    await waitForText(alert, (t) => t.includes(api.body.message) && t.includes(`request id ${requestId}`));
    // Asking again cannot bring it back: no retry, the way back to the table instead.
    expect(await alert.getByRole("button", { name: "Try again" }).count()).toBe(0);
    await ui.screenshot("device-not-found");
    await alert.getByRole("link", { name: "Back to devices" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/devices", "the device table");
    await ui.settled();
    await ui.audit();
  });

  it("a path that is no console page says so and leads to the overview", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/no-such-page");
    await ui.page.getByRole("heading", { level: 1, name: "This page does not exist" }).waitFor();
    await ui.screenshot("page-not-found");
    await ui.page.getByRole("link", { name: "Go to the overview" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/", "the overview");
    await ui.settled();
    await ui.page.getByRole("region", { name: "Devices by status" }).waitFor();
    await ui.audit();
  });
});
