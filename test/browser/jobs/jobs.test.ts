// Device actions and jobs in Chromium, controls found by accessible name: a device's Actions
// menu runs a health check at once and asks before a reboot in a confirmation naming the
// device (the API then holds the reboot, pending); the Jobs page previews a job over a label
// selector (how many devices match and its batches), starts it, shows its progress moving as
// simulated devices run it through the agent protocol, pauses, resumes and cancels it; a job
// made with maintenance windows and a disruption budget stores both (a 400 about the budget is
// said next to its field).
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForText } from "../../support/browser.js";
import { runHandedActions } from "../../support/device-actions.js";
import { LABEL_KEY_RULE } from "../../../src/modules/devices/selector.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

interface Action { id: string; kind: string; state: string; deviceId: string }

describe.skipIf(!peerAvailable("chromium"))("console device actions and jobs", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "press", devices: 5, labels: { line: "press" } });
  }, 180_000);

  it("a device's Actions menu: a health check at once, a reboot after a confirmation naming the device", async () => {
    const device = fleet.devices[0];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}`);
    const name = (await service.call<{ name: string }>("GET", `/api/v1/devices/${device.deviceId}`)).name;
    await ui.page.getByRole("button", { name: "Actions" }).click();
    const menu = ui.page.getByRole("menu", { name: `Actions on ${name}` });
    await ui.screenshot("device-actions-menu");
    await menu.getByRole("menuitem", { name: "Check health" }).click();
    await ui.page.getByText(`Check health: sent to ${name}`).waitFor({ timeout: UI_TIMEOUT_MS });

    await ui.page.getByRole("button", { name: "Actions" }).click();
    await menu.getByRole("menuitem", { name: "Reboot…" }).click();
    const dialog = ui.page.getByRole("dialog", { name: `Reboot ${name}?` });
    await dialog.waitFor();
    await ui.screenshot("device-actions-reboot-confirm");
    await dialog.getByRole("button", { name: `Reboot ${name}`, exact: true }).click();
    await dialog.waitFor({ state: "hidden" });
    const actions = (await service.call<{ items: Action[] }>("GET", `/api/v1/device-actions?deviceId=${device.deviceId}`)).items;
    expect(actions.map((a) => [a.kind, a.state]).sort()).toEqual([["check-health", "pending"], ["reboot", "pending"]]);
    await service.call("POST", `/api/v1/device-actions/${actions.find((a) => a.kind === "reboot")!.id}/cancel`);
    await service.call("POST", `/api/v1/device-actions/${actions.find((a) => a.kind === "check-health")!.id}/cancel`);
  });

  it("the Jobs page previews a job over a selector, starts it, shows its progress, pauses, resumes and cancels it", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/jobs");
    await ui.page.getByText("No jobs yet").waitFor();
    await ui.page.getByRole("button", { name: "New job" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "New job" });
    await dialog.getByLabel("Action").selectOption({ label: "Collect diagnostics" });
    await dialog.getByLabel("Devices (label selector)").fill("line=press");
    await dialog.getByLabel("Canary devices").fill("2");
    await dialog.getByLabel("Reason").fill("slow presses");
    const preview = dialog.getByRole("status", { name: "Job preview" });
    await waitForText(preview, "5 devices match: 5 would run it, 0 skipped, 0 offline (drawn last). Batches: 2 + 2 + 1.");
    await ui.screenshot("jobs-new-preview");
    await dialog.getByRole("button", { name: "Start job over 5 devices" }).click();
    await dialog.waitFor({ state: "hidden" });

    const [job] = (await service.call<{ items: Array<{ id: string; state: string; eligible: number; reason: string }> }>("GET", "/api/v1/jobs")).items;
    expect(job).toMatchObject({ state: "in_progress", eligible: 5, reason: "slow presses" });
    const table = ui.page.getByRole("table", { name: "Jobs" });
    const progress = table.getByRole("progressbar", { name: /^Progress of the collect diagnostics job/ });
    await waitForText(progress.locator("xpath=.."), /0 of 5 succeeded, 0 failed or expired, 2 in flight, 3 queued · canary/);

    // the canary's devices run it: the next batch is dispatched, and the page follows without a reload
    const canary = (await service.call<{ items: Action[] }>("GET", `/api/v1/device-actions?jobId=${job.id}&state=pending`)).items.map((a) => a.deviceId);
    expect(canary).toHaveLength(2);
    await runHandedActions(fleet.devices.filter((d) => canary.includes(d.deviceId ?? "")));
    await expect.poll(async () => (await progress.getAttribute("aria-label")) ?? "", { timeout: UI_TIMEOUT_MS }).toContain("2 of 5 succeeded, 0 failed or expired, 2 in flight, 1 queued");
    await ui.screenshot("jobs-progress");

    await table.getByRole("button", { name: "Pause the collect diagnostics job" }).click();
    await table.getByRole("button", { name: "Resume the collect diagnostics job" }).waitFor({ timeout: UI_TIMEOUT_MS });
    expect((await service.call<{ state: string }>("GET", `/api/v1/jobs/${job.id}`)).state).toBe("paused");
    await table.getByRole("button", { name: "Resume the collect diagnostics job" }).click();
    await table.getByRole("button", { name: "Pause the collect diagnostics job" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await table.getByRole("button", { name: "Cancel the collect diagnostics job" }).click();
    await table.getByText("cancelled", { exact: true }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.screenshot("jobs-cancelled");
    const cancelled = await service.call<{ state: string; counts: { cancelled: number; succeeded: number } }>("GET", `/api/v1/jobs/${job.id}`);
    expect(cancelled).toMatchObject({ state: "cancelled", counts: { succeeded: 2, cancelled: 3 } });
  });

  it("a new job with a maintenance window and a disruption budget per label value stores both; a refused budget is named at its field", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/jobs");
    await ui.page.getByRole("button", { name: "New job" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "New job" });
    await dialog.getByLabel("Action").selectOption({ label: "Reboot" });
    await dialog.getByLabel("Devices (label selector)").fill("line=press");
    await dialog.getByRole("checkbox", { name: "Run it only in maintenance windows" }).check();
    await dialog.getByLabel("Time zone", { exact: true }).fill("Europe/Berlin");
    await dialog.getByRole("checkbox", { name: "Sat" }).check();
    await dialog.getByLabel("Window 1 opens at").fill("01:30");
    await dialog.getByLabel("Window 1 closes at").fill("05:00");
    expect(await dialog.getByRole("checkbox", { name: /Download only in windows/ }).count()).toBe(0);
    await dialog.getByRole("checkbox", { name: "Limit disruption: how many devices of a group may run it at once" }).check();
    const groupBy = dialog.getByLabel("Group by label keys (comma-separated)");
    await groupBy.fill("line, -bad");
    await dialog.getByLabel("At most unavailable", { exact: true }).fill("2");
    const start = dialog.getByRole("button", { name: "Start job over 5 devices" });
    await waitForText(dialog.getByRole("status", { name: "Job preview" }), /^5 devices match/);

    ui.expectStatus(400, "jobs.create");
    await start.click();
    await dialog.getByText(LABEL_KEY_RULE).waitFor({ timeout: UI_TIMEOUT_MS });
    expect(await groupBy.getAttribute("aria-invalid")).toBe("true");
    await ui.screenshot("jobs-new-budget-refused");
    const reboots = async () => (await service.call<{ items: Array<{ id: string; kind: string }> }>("GET", "/api/v1/jobs")).items.filter((j) => j.kind === "reboot");
    expect(await reboots()).toHaveLength(0);

    await groupBy.fill("line");
    expect(await groupBy.getAttribute("aria-invalid")).toBeNull();
    await ui.screenshot("jobs-new-window-budget");
    await start.click();
    await dialog.waitFor({ state: "hidden" });
    const [created] = await reboots();
    const job = await service.call<{ kind: string; maintenanceWindows: unknown; disruptionBudget: unknown }>("GET", `/api/v1/jobs/${created.id}`);
    expect(job).toMatchObject({
      kind: "reboot",
      maintenanceWindows: { timeZone: "Europe/Berlin", windows: [{ days: ["mon", "tue", "wed", "thu", "fri", "sat"], start: "01:30", end: "05:00" }] },
      disruptionBudget: { groupBy: ["line"], maxUnavailable: { count: 2 } },
    });
    expect(job.maintenanceWindows).not.toHaveProperty("downloadWindows");
    await service.call("POST", `/api/v1/jobs/${created.id}/cancel`);
  });
});
