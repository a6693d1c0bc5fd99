// The demo's rollout as a newcomer met it, in Chromium: a canary of 3 simulated devices, one of
// which fails, pauses by itself. The page then speaks one vocabulary (the deployment is
// "active", the rollout "Paused" with its canary "on hold": nothing says "running", "in flight"
// or "in progress" of it) and offers the moves that make progress: retry the failed devices,
// promote anyway (its confirmation names the shortfall), abort. Promote anyway: the canary
// card says it was promoted below target by that person with its counts, and once the last
// batch runs the completion reason says which batch reached the threshold and which did not.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import type { GitServer } from "../../support/git-server/index.js";
import { devicesOfBatch as devicesOfBatchOf, importApplication, reportAll } from "./support.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let git: GitServer;
let applicationId: string;

const controls = (page: Page) => page.getByRole("group", { name: "Rollout controls" });

const devicesOfBatch = (id: string, batch: number) => devicesOfBatchOf(service, fleet, id, batch);

describe.skipIf(!peerAvailable("chromium"))("console rollout page: an automatic pause, and promote anyway", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0"]));
    fleet = await service.enrollFleet({ prefix: "press", devices: 4, labels: { line: "press-7" } });
  }, 120_000);

  afterAll(async () => {
    await git?.close();
  });

  it("says what happened, offers retry / promote anyway / abort, and records the promotion truthfully", async () => {
    const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
      body: {
        name: "press monitor", applicationId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { line: "press-7" } },
        strategy: { type: "staged", canary: { count: 3 }, batches: [], successThreshold: 90, failureThreshold: 20, autoAdvance: false, batchTimeoutSeconds: 3600 },
      },
    });
    const id = created.id;
    await service.call("POST", `/api/v1/deployments/${id}/start`);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await waitForText(ui.page.getByTestId("rollout-state"), "Canary");
    await waitForText(ui.page.getByTestId("rollout-position"), "canary in flight");

    // Two of the canary run, one fails: 33 % failed crosses the 20 % line, the service pauses.
    const canary = await devicesOfBatch(id, 0);
    expect(canary).toHaveLength(3);
    await reportAll(fleet, canary.slice(0, 2), id, "running");
    await reportAll(fleet, canary.slice(2), id, "failed", "install failed: component exited with code 1 during start (simulated)");
    await waitForText(ui.page.getByTestId("rollout-state"), "Paused");

    // One vocabulary: the deployment is paused (its one state), the rollout paused, its canary on hold.
    await waitForText(ui.page.getByTestId("deployment-state"), "paused");
    await waitForText(ui.page.getByTestId("rollout-position"), "canary on hold");
    await waitForText(ui.page.getByTestId("batch-state-0"), "on hold");
    const card = ui.page.getByRole("region", { name: "Rollout", exact: true });
    await waitForText(card.locator(".alert-box p").first(), "Paused: canary paused: its failed devices reached the failure threshold (20%)");
    const cardText = (await card.textContent()) ?? "";
    expect(cardText).not.toMatch(/in flight|in progress/i);
    expect(await ui.page.locator("header .badge, .page-header .badge").allTextContents()).not.toContain("running");
    await waitForText(ui.page.getByTestId("paused-moves"), /Retry failed devices.*Promote anyway.*Resume.*Abort/);

    // The moves that make progress are offered.
    for (const name of ["Retry failed devices", "Promote anyway", "Abort", "Resume"]) {
      await expect.poll(() => controls(ui.page).getByRole("button", { name, exact: true }).isEnabled(), { message: name }).toBe(true);
    }
    expect(await controls(ui.page).getByRole("button", { name: "Approve next batch", exact: true }).isDisabled()).toBe(true);
    await ui.audit();
    await ui.screenshot("deployments-rollout-paused-canary");

    // Promote anyway: the confirmation names the shortfall.
    await controls(ui.page).getByRole("button", { name: "Promote anyway", exact: true }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Promote anyway?" });
    await waitForText(dialog, /The canary has not reached its success target: 2 of 3 running, 3 needed \(1 failed\)\. It is recorded as promoted below its target by you, and batch 1 is dispatched/);
    await ui.screenshot("deployments-rollout-promote-anyway");
    await dialog.getByRole("button", { name: "Promote anyway", exact: true }).click();
    await dialog.waitFor({ state: "hidden" });

    await waitForText(ui.page.getByTestId("rollout-state"), "In progress");
    await waitForText(ui.page.getByTestId("batch-state-0"), `promoted below target by ${ADMIN.email}`);
    // the outcome line says how it ended, in the API's summary's words; its numbers are the legend's (the record's fields keep those of the moment)
    await waitForText(ui.page.getByTestId("batch-outcome-0"), new RegExp(`^Canary: promoted below its success target \\(3 running needed\\) by ${ADMIN.email.replace(".", "\\.")} · `));

    // The last batch runs: completed, and the reason says what each batch was.
    const [last] = await devicesOfBatch(id, 1);
    await reportAll(fleet, [last], id, "running");
    await waitForText(ui.page.getByTestId("rollout-state"), "Completed");
    const reason = `all 2 batches done: 1 reached the success threshold; the canary was promoted below its success target (3 running needed) by ${ADMIN.email}`;
    await waitForText(card.locator(".alert-box p").first(), `Completed: ${reason}`);
    await waitForText(ui.page.getByTestId("batch-state-1"), "succeeded");
    // the strategy's facts stay; "Next batch: waits for approval" would say something untrue now
    expect(await card.getByText("Success threshold", { exact: true }).isVisible()).toBe(true);
    expect(await card.getByText("Next batch", { exact: true }).count()).toBe(0);
    const api = await service.call<{ reason: string; batches: Array<{ state: string; outcome: { kind: string; by: string | null } | null }> }>("GET", `/api/v1/deployments/${id}/rollout`);
    expect(api.reason).toBe(reason);
    expect(api.batches.map((b) => [b.state, b.outcome?.kind, b.outcome?.by])).toEqual([["promoted", "promoted", ADMIN.email], ["succeeded", "succeeded", null]]);
    await ui.audit();
    await ui.screenshot("deployments-rollout-promoted-completed");
  }, 240_000);
});
