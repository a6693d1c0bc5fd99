// A device's Telemetry and Logs tabs in Chromium, fed by a simulated device over the agent
// protocol: the gauges show the API's latest snapshot, the charts are drawn from the stored
// snapshots (the hover read-out gives the API's bucket values, and "–" where the device was
// silent), log history pages back in time held at its newest line, and log follow shows a
// line the device sends after the page opened, holds new lines while paused and shows them on
// resume.
import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText, UI_TIMEOUT_MS } from "../../support/browser.js";
import { formatters } from "../../../web/src/ui/time-series.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

const MINUTE = 60_000;
const format = formatters("en-US", "UTC");

interface Bucket { timestamp: string; samples: number; cpuUsagePercent: number | null; memoryUsagePercent: number | null }

/**
 * Moves the mouse over `chartName`'s plot at time `ms` of its x range [fromMs, toMs] and
 * answers the read-out of `series`, once the read-out's time is `pointMs` (the point the
 * cursor snaps to).
 */
async function readOut(page: Page, chartName: string, ms: number, range: [number, number], series: string, pointMs = ms): Promise<string> {
  const figure = page.getByRole("figure", { name: chartName });
  const plot = figure.locator(".u-over");
  const box = (await plot.boundingBox())!;
  const [fromMs, toMs] = range;
  await plot.hover({ position: { x: (box.width * (ms - fromMs)) / (toMs - fromMs), y: box.height / 2 } });
  const legend = figure.locator(".u-legend tr");
  await waitForText(legend.filter({ hasText: "Time" }).locator(".u-value"), format.pointTime(pointMs / 1000));
  return waitForText(legend.filter({ hasText: series }).locator(".u-value"), (t) => t !== "");
}

describe.skipIf(!peerAvailable("chromium"))("console device telemetry and logs", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "press", devices: 2, labels: { site: "leipzig" } });
  });

  it("draws the charts from the device's snapshots, with a gap where it sent nothing, and shows the latest as gauges", async () => {
    const device = fleet.devices[0];
    // Two stretches of one snapshot a minute, 14 silent minutes between them.
    const t0 = Math.floor(Date.now() / MINUTE) * MINUTE - 40 * MINUTE;
    expect((await device.sendTelemetryHistory(t0, MINUTE, t0 + 10 * MINUTE)).status).toBeLessThan(300);
    expect((await device.sendTelemetryHistory(t0 + 25 * MINUTE, MINUTE, t0 + 35 * MINUTE)).status).toBeLessThan(300);
    const from = new Date(t0 - 5 * MINUTE).toISOString();
    const to = new Date(t0 + 40 * MINUTE).toISOString();
    const api = await service.call<{ total: number; data: Bucket[] }>("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${from}&to=${to}&interval=1m`);
    expect(api.total).toBe(22);
    const latest = await service.call<{ cpuUsagePercent: number; memoryUsagePercent: number }>("GET", `/api/v1/devices/${device.deviceId}/telemetry/latest`);

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    // The default tab is the last hour's telemetry; a person picks a custom range from there.
    await ui.page.getByRole("tab", { name: "Telemetry", selected: true }).waitFor();
    await ui.page.getByRole("button", { name: "Custom" }).click();
    await ui.page.getByLabel("From", { exact: true }).fill(from.slice(0, 16));
    await ui.page.getByLabel("To", { exact: true }).fill(to.slice(0, 16));
    await ui.page.getByLabel("Interval").selectOption("1m");
    await ui.settled();
    expect(new URL(ui.page.url()).searchParams.get("range")).toBe("custom");
    expect(new URL(ui.page.url()).searchParams.get("interval")).toBe("1m");

    await waitForText(ui.page.locator(".telemetry-footnote"), (t) => t.startsWith(`22 snapshots in ${api.data.length} buckets of 1 minute.`));
    const percent = new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 0 });
    expect(await ui.page.getByRole("meter", { name: "CPU" }).getAttribute("aria-valuetext")).toBe(percent.format(latest.cpuUsagePercent / 100));
    expect(await ui.page.getByRole("meter", { name: "Memory" }).getAttribute("aria-valuetext")).toBe(percent.format(latest.memoryUsagePercent / 100));

    const chart = "CPU, memory and disk use over the chosen range";
    const range: [number, number] = [Date.parse(from), Date.parse(to)];
    for (const bucket of [api.data[3], api.data[15]]) {
      const at = Date.parse(bucket.timestamp);
      expect(await readOut(ui.page, chart, at, range, "CPU")).toBe(format.value(bucket.cpuUsagePercent, "percent"));
      expect(await readOut(ui.page, chart, at, range, "Memory")).toBe(format.value(bucket.memoryUsagePercent, "percent"));
    }
    // In the silence the read-out has no value (the cursor snaps to the break placed a minute
    // after the last snapshot): the line is broken there, not bridged.
    expect(await readOut(ui.page, chart, t0 + 12 * MINUTE, range, "CPU", t0 + 11 * MINUTE)).toBe("–");
    await ui.audit();
    await ui.screenshot("device-telemetry");
  });

  it("pages back through the log history, held at the newest line while lines keep arriving", async () => {
    const device = fleet.devices[0];
    const start = Date.now() - 10 * 60_000;
    const lines = Array.from({ length: 150 }, (_, i) => ({ timestamp: new Date(start + i * 1000).toISOString(), level: "info" as const, source: "history-test", message: `history line ${String(i).padStart(3, "0")}` }));
    expect((await device.sendLogs(lines)).status).toBeLessThan(300);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=logs&source=history-test`);
    const table = ui.page.getByRole("table", { name: "Log lines, newest first" });
    const pages = ui.page.getByRole("navigation", { name: "Log pages, newest first" });
    await waitForText(pages.locator("span").first(), "1–100 of 150");
    await waitForText(table.locator("tbody tr").first(), (t) => t.includes("history line 149"));
    expect(await table.locator("tbody tr").count()).toBe(100);

    // A line arriving while the reader pages back does not shift the older pages.
    expect((await device.sendLogs([{ timestamp: new Date().toISOString(), level: "info", source: "history-test", message: "history line new" }])).status).toBeLessThan(300);
    await pages.getByRole("button", { name: "Next page" }).click();
    await waitForText(pages.locator("span").first(), "101–150 of 150");
    await waitForText(table.locator("tbody tr").first(), (t) => t.includes("history line 049"));
    await waitForText(table.locator("tbody tr").last(), (t) => t.includes("history line 000"));
    expect(await table.locator("tbody tr").count()).toBe(50);
    await ui.page.getByText(/held at .* while you page back/).waitFor();
    await ui.audit();

    // "Newest lines" lets go of the anchor: the new line leads.
    await ui.page.getByRole("button", { name: "Newest lines" }).click();
    await waitForText(pages.locator("span").first(), "1–100 of 151");
    await waitForText(table.locator("tbody tr").first(), (t) => t.includes("history line new"));
    await ui.audit();
  });

  it("follows the logs: a line the device sends after the page opened appears; paused, new lines wait until resumed", async () => {
    const device = fleet.devices[1];
    expect((await device.sendLogs()).status).toBeLessThan(300);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=logs`);
    const history = ui.page.getByRole("table", { name: "Log lines, newest first" });
    await history.locator("tbody tr").first().waitFor();

    await ui.page.getByRole("button", { name: "Follow live" }).click();
    await waitForText(ui.page.locator(".log-bar .badge").first(), "Streaming");
    await ui.audit();
    const followed = ui.page.getByRole("table", { name: "Followed log lines, oldest first" });
    // The stream first replays the device's newest lines (up to the console's tail of 200), and
    // "Streaming" shows as soon as it is open, the replayed lines a moment later (the page adds
    // lines in batches): count once every stored line is shown.
    const stored = (await service.call<{ total: number }>("GET", `/api/v1/devices/${device.deviceId}/logs?limit=1`)).total;
    expect(stored).toBeGreaterThan(0);
    await expect.poll(() => followed.locator("tbody tr").count(), { timeout: UI_TIMEOUT_MS }).toBe(Math.min(stored, 200));
    const before = await followed.locator("tbody tr").count();

    const line = (message: string) => ({ timestamp: new Date().toISOString(), level: "warn" as const, source: "console-test", message });
    const first = `disk pressure on /var ${crypto.randomUUID()}`;
    expect((await device.sendLogs([line(first)])).status).toBeLessThan(300);
    const row = followed.locator("tbody tr").filter({ hasText: first });
    await waitForText(row, (t) => t.includes("warn") && t.includes("console-test") && t.includes(first));
    expect(await followed.locator("tbody tr").count()).toBe(before + 1);
    await expect(followed.locator("tbody tr").last().textContent()).resolves.toContain(first);

    await ui.page.getByRole("button", { name: "Pause" }).click();
    const held = `held while paused ${crypto.randomUUID()}`;
    expect((await device.sendLogs([line(held)])).status).toBeLessThan(300);
    await waitForText(ui.page.locator(".log-paused"), "Paused: 1 new line waiting.");
    expect(await followed.locator("tbody tr").filter({ hasText: held }).count()).toBe(0);
    await ui.audit();
    await ui.page.getByRole("button", { name: "Resume (1 new)" }).click();
    await followed.locator("tbody tr").filter({ hasText: held }).waitFor();
    await ui.page.getByRole("button", { name: "Pause" }).scrollIntoViewIfNeeded();
    await ui.screenshot("device-logs-follow");
  });
});
