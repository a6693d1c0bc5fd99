// A staged rollout over 24 simulated devices, driven from the browser: start (the canary is
// dispatched), the canary's devices reporting downloading, installing and running while the
// page's counts move without a reload, promote, approve, the failure threshold crossed in the
// last batch by its failure rate (4 of 11 devices fail) pausing the rollout by itself with its
// reason, a pause that someone else made first (409 shown, page refreshed), resume, abort. At
// every step the controls the page enables are those the service's state machine allows (and
// each disabled move is refused 409 by the API), and the state and per-batch counts the page
// shows equal the API's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForText, type ConsolePage } from "../../support/browser.js";
import { EDITABLE_STATUSES, moveRefusal, type RolloutState } from "../../../src/modules/deployments/rollout-moves.js";
import type { GitServer } from "../../support/git-server/index.js";
import { devicesOfBatch as devicesOfBatchOf, heartbeat, importApplication, reportAll } from "./support.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let git: GitServer;
let applicationId: string;

const STATE_LABELS: Record<RolloutState, string> = {
  draft: "Draft", initialized: "Planned", canary: "Canary", awaiting_approval: "Awaiting approval", in_progress: "In progress",
  paused: "Paused", completed: "Completed", aborted: "Aborted", failed: "Failed",
};
const ROLLOUT_MOVES = [["promote", "Promote canary"], ["approve", "Approve next batch"], ["pause", "Pause"], ["resume", "Resume"], ["retry", "Retry failed devices"], ["abort", "Abort"]] as const;
// each state under its own name (an aborted batch's devices are cancelled, not skipped); the legend
// leaves out the states no device of the batch is in, beside the agent's states, offline and failed
const COUNTED = ["pending", "downloading", "installing", "running", "offline", "cancelled", "superseded", "removed", "skipped", "failed"] as const;

interface RolloutStatus {
  state: RolloutState;
  currentBatch: number | null;
  reason: string | null;
  batches: Array<{ index: number; size: number; state: string; successTarget: number; counts: Record<string, number> }>;
}

const rolloutOf = (id: string) => service.call<RolloutStatus>("GET", `/api/v1/deployments/${id}/rollout`);
const deploymentOf = (id: string) => service.call<{ status: string; rolloutState: RolloutState }>("GET", `/api/v1/deployments/${id}`);

const controls = (page: Page) => page.getByRole("group", { name: "Rollout controls" });

/** Waits until the page shows the API's rollout state, then checks every control against the state machine. */
async function expectPageMatchesApi(ui: ConsolePage, id: string, expected: RolloutState): Promise<RolloutStatus> {
  await waitForText(ui.page.getByTestId("rollout-state"), STATE_LABELS[expected]);
  const [rollout, deployment] = await Promise.all([rolloutOf(id), deploymentOf(id)]);
  expect(rollout.state).toBe(expected);
  expect(deployment.rolloutState).toBe(expected);
  const position = { state: rollout.state, currentBatch: rollout.currentBatch };
  const inFlight = rollout.batches.find((b) => b.index === rollout.currentBatch && b.state === "in_progress");
  // The state shown above is the deployment's read; the controls also follow the rollout's own
  // read (its current batch), refreshed beside it, which may land a moment later.
  const start = controls(ui.page).getByRole("button", { name: "Start", exact: true });
  await expect.poll(() => start.isDisabled(), { timeout: UI_TIMEOUT_MS, message: "Start" }).toBe(!EDITABLE_STATUSES.includes(deployment.status));
  for (const [move, name] of ROLLOUT_MOVES) {
    const refusal = moveRefusal(move, position);
    // promoting a batch in flight below its success target, where allowed, is "Promote anyway"
    const label = move === "promote" && !refusal && inFlight && inFlight.counts.running < inFlight.successTarget ? "Promote anyway" : name;
    // a retry also needs a failed device in the batch in flight (the service's 409 says so)
    const nothingToRetry = move === "retry" && !refusal && (inFlight ? inFlight.counts.failed + inFlight.counts.waitingToRetry : 0) === 0;
    const button = controls(ui.page).getByRole("button", { name: label, exact: true });
    await expect.poll(() => button.isDisabled(), { timeout: UI_TIMEOUT_MS, message: `${label} in ${expected} (batch ${rollout.currentBatch})` }).toBe(refusal !== null || nothingToRetry);
    if (refusal || nothingToRetry) {
      // The service agrees: the move the page does not offer is refused, naming the state.
      const res = await service.api("POST", `/api/v1/deployments/${id}/rollout/${move === "retry" ? "retry-failed" : move}`, { body: {} });
      expect(res.status, `${move} from ${expected}`).toBe(409);
      if (refusal) expect(res.body.message).toBe(refusal);
    }
  }
  await expectCountsMatchApi(ui, id);
  return rollout;
}

/** The page's per-batch counts, read from the timeline. */
async function pageCounts(page: Page): Promise<Record<number, Record<string, number>>> {
  return page.locator("[data-batch]").evaluateAll((items) => Object.fromEntries(items.map((item) => {
    const el = item as unknown as { getAttribute(n: string): string; querySelectorAll(s: string): Array<{ getAttribute(n: string): string; querySelector(s: string): { textContent: string } }> };
    const counts = Object.fromEntries(Array.from(el.querySelectorAll("[data-count]")).map((c) => [c.getAttribute("data-count"), Number(c.querySelector("strong").textContent)]));
    return [Number(el.getAttribute("data-batch")), counts];
  })));
}

/** Waits until every batch's counts on the page equal the API's (the page follows the realtime events). */
async function expectCountsMatchApi(ui: ConsolePage, id: string): Promise<void> {
  const deadline = Date.now() + UI_TIMEOUT_MS;
  let shown: Record<number, Record<string, number>> = {};
  let api: Record<number, Record<string, number>> = {};
  for (;;) {
    const rollout = await rolloutOf(id);
    api = Object.fromEntries(rollout.batches.map((b) => [b.index, Object.fromEntries(COUNTED.map((k) => [k, b.counts[k]]))]));
    shown = await pageCounts(ui.page);
    const shownCounted = Object.fromEntries(Object.entries(shown).map(([i, c]) => [i, Object.fromEntries(COUNTED.map((k) => [k, c[k] ?? 0]))]));
    if (JSON.stringify(shownCounted) === JSON.stringify(api)) return;
    if (Date.now() > deadline) expect(shownCounted).toEqual(api);
    await new Promise((r) => setTimeout(r, 150));
  }
}

/** Waits for one count of one batch on the page (no reload: the realtime events bring it). */
async function waitForCount(page: Page, batch: number, key: string, value: number): Promise<void> {
  await waitForText(page.locator(`[data-batch="${batch}"] [data-count="${key}"] strong`), String(value));
}

async function confirmControl(ui: ConsolePage, label: string, consequence: RegExp): Promise<void> {
  await controls(ui.page).getByRole("button", { name: label, exact: true }).click();
  const dialog = ui.page.getByRole("dialog", { name: `${label}?` });
  await expect.poll(() => dialog.textContent()).toMatch(consequence);
  await ui.audit();
  await dialog.getByRole("button", { name: label, exact: true }).click();
  await dialog.waitFor({ state: "hidden" });
}

const devicesOfBatch = (id: string, batch: number) => devicesOfBatchOf(service, fleet, id, batch);

describe.skipIf(!peerAvailable("chromium"))("console rollout page, live", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0"]));
    fleet = await service.enrollFleet({ prefix: "line", devices: 24, labels: { line: "assembly-3" } });
  }, 120_000);

  afterAll(async () => {
    await git?.close();
  });

  it("watches canary, promotion, approval, the automatic pause on failures, resume and abort live", async () => {
    const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
      body: {
        name: "line-monitor rollout", applicationId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { line: "assembly-3" } },
        strategy: { type: "staged", canary: { count: 2 }, batches: [{ percent: 50 }, { percent: 100 }], successThreshold: 80, failureThreshold: 30, autoAdvance: false, batchTimeoutSeconds: 3600 },
      },
    });
    const id = created.id;
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await expectPageMatchesApi(ui, id, "draft");
    await ui.page.evaluate(() => void ((globalThis as { loadedOnce?: boolean }).loadedOnce = true));

    // Start: the device set is frozen and planned, and the canary dispatched.
    await confirmControl(ui, "Start", /canary batch is dispatched/);
    let rollout = await expectPageMatchesApi(ui, id, "canary");
    expect(rollout.batches.map((b) => [b.index, b.size, b.state])).toEqual([[0, 2, "in_progress"], [1, 11, "planned"], [2, 11, "planned"]]);
    expect(rollout.batches[0].counts.pending).toBe(2);
    // The canary's clock: within its hour, and counting down.
    const clock = ui.page.getByTestId("timeout-0");
    const first = await waitForText(clock, /^(1 h 0 min|[1-5]?\d min \d+ s) left$/);
    await waitForText(clock, (t) => t !== first && /^(1 h 0 min|[1-5]?\d min \d+ s) left$/.test(t));

    // The canary's devices take the install and report each step; the counts move live.
    const canary = await devicesOfBatch(id, 0);
    for (const device of canary) expect((await heartbeat(fleet, device)).map((d) => [d.deploymentId, d.action])).toEqual([[id, "install"]]);
    await reportAll(fleet, canary, id, "downloading");
    await waitForCount(ui.page, 0, "downloading", 2);
    await expectCountsMatchApi(ui, id);
    await reportAll(fleet, canary.slice(0, 1), id, "installing");
    await waitForCount(ui.page, 0, "installing", 1);
    await waitForCount(ui.page, 0, "downloading", 1);
    await expectCountsMatchApi(ui, id);
    await reportAll(fleet, canary, id, "running");
    await waitForCount(ui.page, 0, "running", 2);
    // The canary reached its success threshold: the rollout waits for the operator.
    rollout = await expectPageMatchesApi(ui, id, "awaiting_approval");
    expect(rollout.currentBatch).toBe(0);

    await confirmControl(ui, "Promote canary", /canary is accepted as it is and batch 1 is dispatched/);
    rollout = await expectPageMatchesApi(ui, id, "in_progress");
    expect(rollout.currentBatch).toBe(1);
    const batch1 = await devicesOfBatch(id, 1);
    expect(batch1).toHaveLength(11);
    await reportAll(fleet, batch1, id, "installing");
    await waitForCount(ui.page, 1, "installing", 11);
    await reportAll(fleet, batch1, id, "running");
    rollout = await expectPageMatchesApi(ui, id, "awaiting_approval");
    expect(rollout.currentBatch).toBe(1);
    // Past the canary's gate, the page offers approval only (promote is the canary's).
    expect(await controls(ui.page).getByRole("button", { name: "Promote canary" }).getAttribute("title")).toContain("approve it instead");

    await confirmControl(ui, "Approve next batch", /Batch 1 is accepted and the rollout completes|Batch 1 is accepted and batch 2 is dispatched/);
    rollout = await expectPageMatchesApi(ui, id, "in_progress");
    expect(rollout.currentBatch).toBe(2);

    // The last batch: its failure rate is 4 in 11; 3 failures stay under the 30% line.
    const batch2 = await devicesOfBatch(id, 2);
    const [failing, healthy] = [batch2.slice(0, 4), batch2.slice(4)];
    await reportAll(fleet, healthy.slice(0, 4), id, "running");
    await reportAll(fleet, healthy.slice(4), id, "downloading");
    await reportAll(fleet, failing.slice(0, 3), id, "failed", "install failed: component exited with code 1 during start (simulated)");
    await waitForCount(ui.page, 2, "failed", 3);
    await expectPageMatchesApi(ui, id, "in_progress");
    // Mid-rollout, as the README shows it (docs/images/rollout.png is a copy of this picture): taller
    // than the test's window, so that the whole timeline is in it, and without the last action's notice.
    await ui.page.setViewportSize({ width: 1280, height: 1160 });
    // One at a time: a dismissed notice leaves the list, so the next is always the first.
    const dismiss = ui.page.getByRole("button", { name: "Dismiss" });
    while (await dismiss.count()) await dismiss.first().click({ timeout: 5_000 }).catch(() => undefined); // or it went by itself
    await ui.screenshot("deployments-rollout-live");
    await ui.page.setViewportSize({ width: 1280, height: 800 });

    // The fourth failure crosses the failure threshold: the service pauses by itself.
    await reportAll(fleet, failing.slice(3), id, "failed", "download failed: digest mismatch of layer 3 (simulated)");
    rollout = await expectPageMatchesApi(ui, id, "paused");
    expect(rollout.reason).toBe("batch 2 paused: its failed devices reached the failure threshold (30%)");
    await waitForText(ui.page.locator(".alert-box").filter({ hasText: "Paused:" }).locator("p").first(), `Paused: ${rollout.reason}`);
    // The per-device table filtered by state (in the URL) shows the failed devices with the agent's message.
    await ui.page.getByLabel("State", { exact: true }).selectOption("failed");
    await expect.poll(() => new URL(ui.page.url()).searchParams.get("state")).toBe("failed");
    const failedRows = ui.page.getByRole("table", { name: "Devices of this deployment" }).locator("tbody tr");
    await expect.poll(() => failedRows.count()).toBe(4);
    await waitForText(ui.page.getByTestId("device-total"), "4 devices");
    expect(await failedRows.filter({ hasText: "digest mismatch of layer 3" }).count()).toBe(1);
    await ui.audit();
    await ui.screenshot("deployments-rollout-paused");

    await confirmControl(ui, "Resume", /returns to the state it paused from/);
    await expectPageMatchesApi(ui, id, "in_progress");

    // Someone else pauses while the page's confirmation is open: the page says so and shows where it is now.
    ui.expectStatus(409, "deployments.rollout.pause");
    await controls(ui.page).getByRole("button", { name: "Pause", exact: true }).click();
    const pauseDialog = ui.page.getByRole("dialog", { name: "Pause?" });
    await pauseDialog.waitFor();
    await service.call("POST", `/api/v1/deployments/${id}/rollout/pause`, { body: { reason: "paused from the command line" } });
    await pauseDialog.getByRole("button", { name: "Pause", exact: true }).click();
    await waitForText(ui.page.getByTestId("rollout-conflict"), /Cannot pause the rollout: it is paused/);
    await expectPageMatchesApi(ui, id, "paused");
    await waitForText(ui.page.locator(".alert-box").filter({ hasText: "Paused:" }).locator("p").first(), "Paused: paused from the command line");
    await ui.audit();

    await confirmControl(ui, "Resume", /returns to the state it paused from/);
    await expectPageMatchesApi(ui, id, "in_progress");
    await confirmControl(ui, "Abort", /Nothing new is dispatched and devices that have not started are cancelled/);
    rollout = await expectPageMatchesApi(ui, id, "aborted");
    await waitForText(ui.page.locator(".alert-box").filter({ hasText: "Aborted:" }).locator("p").first(), `Aborted: ${rollout.reason}`);
    await ui.audit();

    // One page load for the whole rollout: every change came over the realtime channel.
    expect(await ui.page.evaluate(() => (globalThis as { loadedOnce?: boolean }).loadedOnce)).toBe(true);

    // The dark theme passes axe too; a viewer sees the rollout without a control that could only fail.
    const dark = await suite.open({ user: ADMIN, colorScheme: "dark" });
    await dark.goto(`/deployments/${id}`);
    await waitForText(dark.page.getByTestId("rollout-state"), "Aborted");
    await expectCountsMatchApi(dark, id);
    await dark.settled();
    await dark.audit();
    await dark.screenshot("deployments-rollout-dark");
    const viewer = await suite.open({ user: await service.createUser("viewer") });
    await viewer.goto(`/deployments/${id}`);
    await waitForText(viewer.page.getByTestId("rollout-state"), "Aborted");
    await expectCountsMatchApi(viewer, id);
    await viewer.settled();
    await viewer.audit();
    for (const name of ["Rollout controls", "Stop", "Delete", "Roll back devices"]) {
      expect(await viewer.page.getByRole(name === "Rollout controls" ? "group" : "button", { name, exact: true }).count(), name).toBe(0);
    }
  }, 300_000);
});
