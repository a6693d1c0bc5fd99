// A device's Telemetry and Logs tabs in Chromium, beyond telemetry-logs.test.ts: the preset
// ranges "Last 24 hours" and "Last 7 days" ask the API for exactly that span ending now (and
// keep the range in the URL), and the log history's source filter and text search narrow the
// lines to what the API answers for the same filters.
import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

const HOUR = 3_600_000;

/** The input of the next telemetry.series request the page sends (tRPC batch: {"0": input}). */
function nextSeriesInput(page: Page): Promise<{ from: string; to: string; interval: string }> {
  return page.waitForRequest((req) => req.url().includes("telemetry.series")).then((req) => {
    const raw = new URL(req.url()).searchParams.get("input");
    const input = JSON.parse(raw ?? "{}")["0"];
    return input.json ?? input;
  });
}

describe.skipIf(!peerAvailable("chromium"))("console telemetry ranges and log filters", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "bergen", devices: 1, labels: { site: "bergen" } });
    await fleet.sendTelemetry(2);
  });

  it("the preset ranges ask for the last 24 hours and the last 7 days, ending now", async () => {
    const device = fleet.devices[0];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=telemetry`);
    const ranges = ui.page.getByRole("group", { name: "Range" });
    await ranges.getByRole("button", { name: "Last hour", pressed: true }).waitFor();

    for (const [name, param, span] of [["Last 24 hours", "24h", 24 * HOUR], ["Last 7 days", "7d", 7 * 24 * HOUR]] as const) {
      const requested = nextSeriesInput(ui.page);
      const clickedAt = Date.now();
      await ranges.getByRole("button", { name }).click();
      const input = await requested;
      await waitForPath(ui.page, (url) => url.searchParams.get("range") === param, `range=${param} in the URL`);
      expect(Date.parse(input.to) - Date.parse(input.from)).toBe(span);
      // Ends now: the minute after the click, rounded up.
      expect(Date.parse(input.to)).toBeGreaterThanOrEqual(clickedAt - 60_000);
      expect(Date.parse(input.to)).toBeLessThanOrEqual(Date.now() + 60_000);
      await ranges.getByRole("button", { name, pressed: true }).waitFor();
      // The interval shown (automatic: the range's default) is the one asked for, and the API
      // accepts the same question.
      const interval = ui.page.getByLabel("Interval");
      expect(await interval.inputValue()).toBe("");
      const intervalName = (await interval.locator(`option[value="${input.interval}"]`).textContent())?.trim();
      expect(intervalName).toBeTruthy();
      expect((await interval.locator('option[value=""]').textContent())?.trim()).toBe(`Automatic (${intervalName})`);
      const api = await service.api("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${encodeURIComponent(input.from)}&to=${encodeURIComponent(input.to)}&interval=${input.interval}`);
      expect(api.status).toBe(200);
      await ui.settled();
      await ui.audit();
    }
    await ui.screenshot("telemetry-last-7-days");
  });

  it("the source filter and the search narrow the log lines to the API's answer", async () => {
    const device = fleet.devices[0];
    const tag = crypto.randomBytes(3).toString("hex");
    const at = (s: number) => new Date(Date.now() - s * 1000).toISOString();
    const lines = [
      { timestamp: at(50), level: "info" as const, source: "agent", message: `agent started ${tag}` },
      { timestamp: at(40), level: "warn" as const, source: "docker", message: `container restarted ${tag}` },
      { timestamp: at(30), level: "info" as const, source: "docker", message: `image pulled ${tag}` },
      { timestamp: at(20), level: "error" as const, source: "docker", message: `container restarted again ${tag}` },
      { timestamp: at(10), level: "info" as const, source: "agent", message: `heartbeat sent ${tag}` },
    ];
    expect((await device.sendLogs(lines)).status).toBeLessThan(300);
    const apiMessages = async (query: string) =>
      ((await service.call<{ items: { message: string }[] }>("GET", `/api/v1/devices/${device.deviceId}/logs?limit=100&${query}`)).items).map((l) => l.message);

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=logs`);
    const history = ui.page.getByRole("table", { name: "Log lines, newest first" });
    const shown = async () => (await history.locator("tbody tr").allTextContents()).map((t) => t.replace(/\s+/g, " "));
    await history.locator("tbody tr").filter({ hasText: `heartbeat sent ${tag}` }).waitFor();

    await ui.page.getByLabel("Source").selectOption("docker");
    await waitForPath(ui.page, (url) => url.searchParams.get("source") === "docker", "source=docker in the URL");
    const docker = await apiMessages("source=docker");
    expect(docker).toEqual([`container restarted again ${tag}`, `image pulled ${tag}`, `container restarted ${tag}`]);
    await waitForText(history.locator("tbody"), (t) => !t.includes("heartbeat sent") && t.includes(`image pulled ${tag}`));
    const dockerRows = await shown();
    expect(dockerRows).toHaveLength(docker.length);
    docker.forEach((message, i) => expect(dockerRows[i]).toContain(message));

    await ui.page.getByLabel("Search").fill("restarted");
    await waitForPath(ui.page, (url) => url.searchParams.get("search") === "restarted", "search=restarted in the URL");
    const restarted = await apiMessages("source=docker&q=restarted");
    expect(restarted).toEqual([`container restarted again ${tag}`, `container restarted ${tag}`]);
    await waitForText(history.locator("tbody"), (t) => !t.includes("image pulled") && t.includes(`container restarted again ${tag}`));
    const restartedRows = await shown();
    expect(restartedRows).toHaveLength(restarted.length);
    restarted.forEach((message, i) => expect(restartedRows[i]).toContain(message));
    await ui.audit();
    await ui.screenshot("logs-source-and-search");
  });
});
