// A job's own page in Chromium, controls found by accessible name: a reboot job over simulated
// devices speaking the agent protocol, opened from the Jobs list; its progress batch by batch
// (the canary's devices by state, from the API's counts) follows the devices' reports without
// a reload, and each device's result is listed: succeeded, failed with the device's message,
// deferred by a lease (by whom, until when), queued in a batch not dispatched yet, cancelled.
// Pause, Resume and Cancel are buttons named with the job's action.
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForText } from "../../support/browser.js";
import type { VirtualDevice } from "../../../src/simulator/virtual-device.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

interface Action { id: string; state: string; deviceId: string; deviceName: string; batchIndex: number | null }

/** The device takes what it is handed and reports each action as `report` says (two heartbeats). */
async function runAs(device: VirtualDevice, report: (id: string) => Record<string, unknown>) {
  let reports: Array<Record<string, unknown>> = [];
  const exchange = {
    pendingReports: () => reports,
    acknowledge: () => { reports = []; },
    apply: (entries: never[]) => {
      for (const a of entries as Array<{ id: string }>) reports.push({ id: a.id, ...report(a.id) });
    },
  };
  for (let i = 0; i < 2; i++) {
    const { response } = await device.exchangeHeartbeat(device.deployments, { status: "online" }, exchange);
    expect(response.status).toBe(200);
  }
}

describe.skipIf(!peerAvailable("chromium"))("console: a job's page", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "mixer", devices: 4, labels: { line: "mixer" } });
  }, 180_000);

  it("shows the job's batches and each device's result live, and pauses, resumes and cancels it", async () => {
    const job = await service.call<{ id: string }>("POST", "/api/v1/jobs", {
      body: { kind: "reboot", reason: "kernel 6.6.30", target: { labelSelector: { line: "mixer" } }, strategy: { canary: { count: 3 }, failureThreshold: 50 } },
    });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/jobs");
    await ui.page.getByRole("table", { name: "Jobs" }).getByRole("link", { name: "Reboot" }).click();
    await ui.page.getByRole("heading", { name: "Reboot job" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(new URL(ui.page.url()).pathname).toBe(`/jobs/${job.id}`);
    const canary = ui.page.getByRole("listitem", { name: "Canary" });
    await waitForText(canary.getByRole("list", { name: "Canary devices by state" }), /in flight\s*3/);
    const devices = ui.page.getByRole("table", { name: "Devices of the job" });
    await devices.getByRole("row").nth(4).waitFor({ timeout: UI_TIMEOUT_MS });

    // the canary's three devices: one reboots, one fails with its message, one is held by a lease
    const actions = (await service.call<{ items: Action[] }>("GET", `/api/v1/device-actions?jobId=${job.id}&limit=10`)).items;
    const inCanary = actions.filter((a) => a.batchIndex === 0);
    const queued = actions.find((a) => a.batchIndex === 1)!;
    const deviceOf = (a: Action) => fleet.devices.find((d) => d.deviceId === a.deviceId)!;
    const until = new Date(Date.now() + 3_600_000).toISOString();
    await runAs(deviceOf(inCanary[0]), () => ({ state: "succeeded", message: "back with a new boot id" }));
    await runAs(deviceOf(inCanary[1]), () => ({ state: "failed", message: "systemctl reboot: interactive authentication required" }));
    await runAs(deviceOf(inCanary[2]), () => ({ state: "deferred", deferredBy: "forklift", deferredUntil: until, message: "carrying a load" }));

    // the page follows without a reload
    const progress = ui.page.getByRole("progressbar", { name: /^Progress of the reboot job/ });
    await expect.poll(async () => (await progress.getAttribute("aria-label")) ?? "", { timeout: UI_TIMEOUT_MS })
      .toContain("1 of 4 succeeded, 1 failed or expired, 1 in flight, 1 queued");
    await waitForText(canary.getByRole("list", { name: "Canary devices by state" }), /succeeded\s*1/);
    const resultOf = (a: Action) => devices.getByTestId(`result-${a.deviceName}`);
    await waitForText(resultOf(inCanary[1]), "systemctl reboot: interactive authentication required");
    await waitForText(resultOf(inCanary[2]), /^deferred by a lease of forklift until .+: carrying a load$/);
    await waitForText(resultOf(inCanary[0]), "back with a new boot id");
    await waitForText(resultOf(queued), "queued: its batch is not dispatched yet");
    await ui.screenshot("job-page-progress");
    await ui.audit();
    await devices.scrollIntoViewIfNeeded();
    await ui.screenshot("job-page-devices");

    await ui.page.getByRole("button", { name: "Pause the reboot job" }).click();
    await ui.page.getByRole("button", { name: "Resume the reboot job" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect((await service.call<{ state: string }>("GET", `/api/v1/jobs/${job.id}`)).state).toBe("paused");
    await ui.page.getByRole("button", { name: "Resume the reboot job" }).click();
    await ui.page.getByRole("button", { name: "Pause the reboot job" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.page.getByRole("button", { name: "Cancel the reboot job" }).click();
    await ui.page.getByTestId("job-state-reason").filter({ hasText: /^cancelled by / }).waitFor({ timeout: UI_TIMEOUT_MS });
    // the deferred and the queued devices never run it; the list says so
    await waitForText(resultOf(queued), "the job was cancelled");
    await waitForText(resultOf(inCanary[2]), "the job was cancelled");
    await ui.screenshot("job-page-cancelled");
    await ui.audit();
    expect(await ui.page.getByRole("button", { name: /the reboot job$/ }).count()).toBe(0);
    const cancelled = await service.call<{ state: string; counts: Record<string, number> }>("GET", `/api/v1/jobs/${job.id}`);
    expect(cancelled).toMatchObject({ state: "cancelled", counts: { succeeded: 1, failed: 1, cancelled: 2 } });
  });
});
