// The overview in Chromium, over simulated devices: its numbers are the API's (devices by
// status, fleet health, a label's values), and a device that changes status shows on it
// without a reload (the realtime channel).
import { beforeAll, describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText, UI_TIMEOUT_MS } from "../../support/browser.js";

let service: ConsoleService;
let berlin: SimulatedFleet;
let munich: SimulatedFleet;

const STATUSES = ["Online", "Offline", "Error", "Pending", "Provisioned"] as const;
const API_STATUS = { Online: "online", Offline: "offline", Error: "error", Pending: "pending", Provisioned: "provisioned" } as const;

/** The figures of a card, read from its text as a person reads them ("3 with failed containers"). */
async function figure(card: Locator, label: string): Promise<number> {
  const text = (await card.textContent()) ?? "";
  const match = new RegExp(`([\\d,]+)\\s*${label}`).exec(text);
  if (!match) throw new Error(`"${label}" is not on the card: ${text}`);
  return Number(match[1].replaceAll(",", ""));
}

/** The donut's text equivalent: "Devices by status: Online 6, Offline 0, ...". */
function donutText(byStatus: Record<string, number>): string {
  return `Devices by status: ${STATUSES.map((s) => `${s} ${byStatus[API_STATUS[s]]}`).join(", ")}`;
}

describe.skipIf(!peerAvailable("chromium"))("console overview", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    berlin = await service.enrollFleet({ prefix: "berlin", devices: 6, labels: { site: "berlin", tier: "edge" } });
    munich = await service.enrollFleet({ prefix: "munich", devices: 4, labels: { site: "munich", tier: "edge" } });
    // Provisioned: enrolled, never heard from since.
    await service.enrollFleet({ prefix: "spare", devices: 3, labels: { site: "spares" }, heartbeat: false });
    // Two Munich devices fail: their heartbeats say error, their telemetry shows failed containers.
    for (const device of munich.devices.slice(0, 2)) device.failing = true;
    await munich.heartbeat(munich.devices.slice(0, 2));
    await berlin.sendTelemetry(2);
    await munich.sendTelemetry(6);
  });


  it("shows the API's numbers: devices by status, fleet health and a label's values", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    const [stats, health, bySite] = await Promise.all([
      service.call("GET", "/api/v1/groups/stats"),
      service.call("GET", "/api/v1/fleet/health"),
      service.call("GET", "/api/v1/groups/by-label/site"),
    ]);
    expect(stats.byStatus).toMatchObject({ online: 8, error: 2, provisioned: 3 });

    const status = ui.page.getByRole("region", { name: "Devices by status" });
    await status.getByRole("img", { name: donutText(stats.byStatus) }).waitFor();
    await waitForText(status.locator(".donut__center"), `${stats.total}devices`);
    for (const s of STATUSES) {
      const item = status.getByRole("listitem").filter({ has: ui.page.getByRole("link", { name: s, exact: true }) });
      await waitForText(item, `${s}${stats.byStatus[API_STATUS[s]]}`);
    }

    const healthCard = ui.page.getByRole("region", { name: "Fleet health" });
    // Its own read (fleet health), which may land after the status card's: its figures come together.
    await waitForText(healthCard, (t) => t.includes("under resource pressure") && t.includes("with failed containers") && t.includes("certificates expiring or expired"));
    expect(await figure(healthCard, "under resource pressure")).toBe(health.resourcePressure.count);
    expect(await figure(healthCard, "with failed containers")).toBe(health.failedContainers.devices);
    expect(health.failedContainers.devices).toBe(2);
    expect(await figure(healthCard, "containers? failed")).toBe(health.failedContainers.containers);
    expect(await figure(healthCard, "certificates expiring or expired")).toBe(health.certificates.expiringSoon + health.certificates.expired);
    expect(await figure(healthCard, health.alerts.firing === 1 ? "alert firing" : "alerts firing")).toBe(health.alerts.firing);

    const labels = ui.page.getByRole("region", { name: "Labels" });
    await labels.getByLabel("Label key").selectOption("site");
    const bars = labels.getByRole("list", { name: "Devices by site" });
    await bars.waitFor();
    for (const group of bySite.groups as { value: string; count: number }[]) {
      const row = bars.getByRole("listitem").filter({ has: ui.page.getByRole("link", { name: group.value, exact: true }) });
      await waitForText(row, `${group.value}${group.count}`);
    }
    expect(await bars.getByRole("listitem").count()).toBe(bySite.groups.length);
    await ui.audit();
    await ui.screenshot("fleet-overview");

    // The legend's links open the device table filtered by that status.
    await status.getByRole("link", { name: "Error", exact: true }).click();
    await ui.page.waitForURL((url) => url.pathname === "/devices" && url.searchParams.get("status") === "error");
    await ui.settled();
    await ui.audit();
    const rows = ui.page.getByRole("table", { name: "Devices" }).getByRole("row");
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), "1–2 of 2");
    expect(await rows.count()).toBe(3); // the header and two devices
  });

  it("shows a device's change of status without a reload", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    const before = await service.call("GET", "/api/v1/groups/stats");
    const status = ui.page.getByRole("region", { name: "Devices by status" });
    await status.getByRole("img", { name: donutText(before.byStatus) }).waitFor();
    await ui.page.getByRole("status").filter({ hasText: "Live" }).waitFor();

    const device = berlin.devices[5];
    device.failing = true;
    await berlin.heartbeat([device]);
    const after = await service.call("GET", "/api/v1/groups/stats");
    expect(after.byStatus.error).toBe(before.byStatus.error + 1);
    await status.getByRole("img", { name: donutText(after.byStatus) }).waitFor({ timeout: UI_TIMEOUT_MS });

    // The latest status changes lead with it.
    const recent = ui.page.getByRole("region", { name: "Latest status changes" });
    await waitForText(recent.getByRole("listitem").first(), (t) => t.startsWith("Error") && t.includes(device.reportedDeviceId));
    await ui.audit();
  });
});
