// The rollout page's numbers agree with themselves, and a device that is offline is said to be.
// Three devices keep heartbeating; two stop, and the service's own offline detection (a 5 s
// heartbeat interval here, checked every second) marks them offline after three missed intervals.
// * The deployment form's preview says how many targeted devices are offline now.
// * A staged rollout draws its canary from the three that answer; one of them fails, waits to
//   retry, and the canary is promoted below its target meanwhile (the API's record of that
//   moment holds "0 failed" in its fields); the retry fails again. The page's canary then shows
//   one set of numbers: its legend (failed 1) and the device table agree, and neither its outcome
//   line nor the rollout's "Latest:" box (the stored reason), nor the API's reason and summary,
//   repeat a count of that moment. The failed device's attempt shows, under "Service note", not "Skip reason".
// * The batch after it holds the two offline devices: the legend counts them as offline (not
//   pending), a line says so, and the device table marks each. Aborted, they are cancelled, and
//   the legend says "cancelled 2", never "skipped".
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForText } from "../../support/browser.js";
import type { GitServer } from "../../support/git-server/index.js";
import { APP_NAME, heartbeat, importApplication } from "./support.js";

let service: ConsoleService;
let git: GitServer;
let applicationId: string;
let live: SimulatedFleet;
let gone: SimulatedFleet;
let keepAlive: ReturnType<typeof setInterval> | undefined;

interface Entry { deviceId: string; deviceName: string; deviceStatus: string; state: string; attempt: number; batchIndex: number | null }
interface Batch { index: number; size: number; state: string; counts: Record<string, number>; outcome: { summary: string; by: string | null; running: number; failed: number; at: string } | null }

/** A count of devices in words ("2 of 3 running", "0 failed"): what no stored text may say, since later reports change it. */
const DEVICE_COUNT = /\d+ of \d+ running|\d+ failed|\d+ devices? running/;

const entries = async (id: string, query = "") => (await service.call<{ items: Entry[] }>("GET", `/api/v1/deployments/${id}/devices?limit=100${query}`)).items;
const rolloutOf = (id: string) => service.call<{ state: string; reason: string | null; batches: Batch[] }>("GET", `/api/v1/deployments/${id}/rollout`);

/** A batch's legend on the page: its entries by key. */
async function legend(page: Page, batch: number): Promise<Record<string, number>> {
  const items = page.locator(`[data-batch="${batch}"] [data-count]`);
  const keys = await items.evaluateAll((els) => els.map((el) => [el.getAttribute("data-count"), Number(el.querySelector("strong")?.textContent)] as const));
  return Object.fromEntries(keys);
}

describe.skipIf(!peerAvailable("chromium"))("console rollout counts and offline devices", () => {
  const suite = consoleSuite({ HEARTBEAT_INTERVAL_SECONDS: "5", OFFLINE_CHECK_INTERVAL_SECONDS: "1" });

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0"]));
    live = await service.enrollFleet({ prefix: "live", devices: 3, labels: { line: "counts" } });
    gone = await service.enrollFleet({ prefix: "gone", devices: 2, labels: { line: "counts" } });
    // The three keep checking in (without a report); the two never again.
    keepAlive = setInterval(() => void Promise.all(live.devices.map((d) => heartbeat(live, d).catch(() => undefined))), 1500);
  }, 180_000);

  /** Until offline detection marked the two (three missed 5 s intervals). */
  const twoOffline = () => expect.poll(async () => (await service.call<{ byStatus: Record<string, number> }>("POST", "/api/v1/groups/query", { body: { labelSelector: { line: "counts" } } })).byStatus,
    { timeout: 60_000, interval: 500 }).toMatchObject({ online: 3, offline: 2 });

  afterAll(async () => {
    clearInterval(keepAlive);
    await git?.close();
  });

  it("says in the form's preview how many targeted devices are offline now", async () => {
    await twoOffline();
    const ui = await suite.open({ user: ADMIN });
    const page = ui.page;
    await ui.goto("/deployments/new");
    await page.getByLabel("Name", { exact: true }).fill("counts preview");
    await page.getByLabel("Application", { exact: true }).selectOption({ label: `${APP_NAME} (1.0.0)` });
    await page.getByRole("radio", { name: /compose-main/ }).waitFor();
    await page.getByRole("button", { name: "Next: Target" }).click();
    await page.getByLabel("Devices whose labels match").fill("line=counts");
    const fit = await service.call<{ eligible: number; offline: number }>("POST", "/api/v1/groups/eligibility", { body: { labelSelector: { line: "counts" } } });
    expect(fit).toMatchObject({ eligible: 5, offline: 2 });
    const sentence = "5 devices match: 5 can run this profile, 2 of them offline now";
    await waitForText(page.getByTestId("target-fit"), (t) => t.startsWith(sentence));
    await page.getByRole("button", { name: "Next: Parameters" }).click();
    await page.getByRole("button", { name: "Next: Strategy" }).click();
    await page.getByRole("button", { name: "Staged" }).click();
    await page.getByLabel("Canary", { exact: true }).fill("3");
    await waitForText(page.getByTestId("batch-fit"), (t) => t.startsWith(sentence));
    expect(await page.getByTestId("batch-offline").textContent()).toContain("The 2 offline devices come last: the canary is drawn from the devices seen recently");
    await ui.audit();
    await ui.screenshot("deployment-form-offline-preview");
  });

  it("shows one set of numbers per batch, and the offline members of a batch as offline", async () => {
    await twoOffline();
    const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
      body: {
        name: "counts rollout", applicationId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { line: "counts" } },
        retry: { maxAttempts: 2, initialDelaySeconds: 1, maxDelaySeconds: 1 },
        strategy: { type: "staged", canary: { count: 3 }, batches: [], successThreshold: 100, failureThreshold: 100, autoAdvance: false, batchTimeoutSeconds: 3600 },
      },
    });
    const id = created.id;
    await service.call("POST", `/api/v1/deployments/${id}/start`);
    // The canary is drawn from the three that answer.
    const canary = (await entries(id, "&batch=0")).map((e) => e.deviceId).sort();
    expect(canary).toEqual(live.devices.map((d) => d.deviceId!).sort());
    const [a, b, c] = live.devices;
    await heartbeat(live, a, [{ deploymentId: id, state: "running" }]);
    await heartbeat(live, c, [{ deploymentId: id, state: "running" }]);
    await heartbeat(live, b, [{ deploymentId: id, state: "failed", message: "image pull failed" }]);
    // Promoted below its target while b waits for its retry: the record of that moment says 0 failed, in its fields.
    await service.call("POST", `/api/v1/deployments/${id}/rollout/promote`, { body: {} });
    const promoted = await rolloutOf(id);
    expect(promoted.batches[0].outcome).toMatchObject({ running: 2, failed: 0, at: expect.any(String), by: expect.stringContaining(ADMIN.email) });
    const by = promoted.batches[0].outcome!.by!;
    expect(promoted.batches[0].outcome!.summary).toBe(`promoted below its success target (3 running needed) by ${by}`);
    // b's retry is handed out by its next heartbeat; the second attempt fails too (its last).
    await expect.poll(async () => (await entries(id, "&batch=0")).find((e) => e.deviceId === b.deviceId)?.attempt, { timeout: UI_TIMEOUT_MS }).toBe(2);
    await heartbeat(live, b, [{ deploymentId: id, state: "failed", message: "image pull failed again" }]);
    const after = await rolloutOf(id);
    expect(after.batches[0].counts).toMatchObject({ running: 2, failed: 1, waitingToRetry: 0 });
    expect(after.batches[1]).toMatchObject({ size: 2, state: "in_progress", counts: { offline: 2, pending: 0 } });
    // No text the API keeps says a count that is untrue now (it said "0 failed" beside failed 1).
    expect(after.reason).toBe(`canary promoted below its success target (3 running needed) by ${by}; batch 1 dispatched`);
    const deployment = await service.call<{ rolloutReason: string | null }>("GET", `/api/v1/deployments/${id}`);
    for (const text of [after.reason, deployment.rolloutReason, ...after.batches.map((x) => x.outcome?.summary ?? null)]) expect(text ?? "").not.toMatch(DEVICE_COUNT);

    const ui = await suite.open({ user: ADMIN });
    const page = ui.page;
    await ui.goto(`/deployments/${id}`);
    await waitForText(page.locator('[data-batch="0"] [data-count="failed"] strong'), "1");
    // The canary: its legend is its counts, every device in one entry; its outcome line adds no count of its own.
    const canaryLegend = await legend(page, 0);
    expect(canaryLegend).toMatchObject({ running: 2, failed: 1 });
    expect(Object.values(canaryLegend).reduce((s, n) => s + n, 0)).toBe(3);
    const outcome = (await page.getByTestId("batch-outcome-0").textContent()) ?? "";
    expect(outcome).toContain("promoted below its success target (3 running needed) by");
    expect(outcome).not.toMatch(DEVICE_COUNT);
    // The rollout's "Latest:" box says what happened, and no count of that moment beside the legend's.
    const latest = page.getByRole("region", { name: "Rollout", exact: true }).locator(".alert-box p").first();
    await waitForText(latest, `Latest: canary promoted below its success target (3 running needed) by ${by}; batch 1 dispatched`);
    expect((await page.getByRole("region", { name: "Rollout", exact: true }).textContent()) ?? "").not.toMatch(/\d+ of \d+ running|0 failed/);
    // The device table agrees with the legend, and says what the failed device's note is about.
    await page.getByLabel("State", { exact: true }).selectOption("failed");
    const table = page.getByRole("table", { name: "Devices of this deployment" });
    await waitForText(page.getByTestId("device-total"), "1 device");
    expect(await table.getByRole("columnheader", { name: "Service note" }).count()).toBe(1);
    expect(await table.getByRole("columnheader", { name: "Skip reason" }).count()).toBe(0);
    const failedRow = table.getByRole("row").filter({ hasText: "failed" }).last();
    expect(await failedRow.textContent()).toContain("attempt 2");

    // The batch after it: its two members are offline, counted and said so.
    expect(await legend(page, 1)).toMatchObject({ offline: 2, pending: 0 });
    expect(await page.getByTestId("batch-offline-1").textContent()).toContain("2 devices of this batch are offline now");
    await page.getByLabel("State", { exact: true }).selectOption("pending");
    await waitForText(page.getByTestId("device-total"), "2 devices");
    expect(await table.getByText("device offline").count()).toBe(2);
    await ui.audit();
    await ui.screenshot("rollout-counts-offline-batch");

    // Aborted: the batch's devices never started: cancelled, not skipped.
    await service.call("POST", `/api/v1/deployments/${id}/rollout/abort`, { body: {} });
    await waitForText(page.locator('[data-batch="1"] [data-count="cancelled"] strong'), "2");
    const cancelled = await legend(page, 1);
    expect(cancelled).not.toHaveProperty("skipped");
    expect(cancelled).toMatchObject({ cancelled: 2, offline: 0, pending: 0 });
    expect(await page.getByTestId("batch-offline-1").count()).toBe(0);
    await ui.screenshot("rollout-counts-cancelled-batch");
  });
});
