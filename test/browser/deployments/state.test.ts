// A deployment's one state (src/modules/deployments/deployment-state.ts) in Chromium: the same
// words on the deployments list, the deployment page and the overview for an aborted, a
// completed, a rolling-out and a stopped deployment; the overview's "Deployments in progress"
// lists only the one in progress; a stopped deployment's progress counts its removals (never
// "not started").
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { importApplication, reportAll } from "./support.js";
import type { GitServer } from "../../support/git-server/index.js";

let service: ConsoleService;
let git: GitServer;
let applicationId: string;
const fleets: Record<string, SimulatedFleet> = {};
const ids: Record<string, string> = {};

interface Listed { id: string; name: string; status: string; rolloutState: string; state: string }

async function deploy(name: string, site: string, strategy: Record<string, unknown>): Promise<string> {
  const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
    body: { name, applicationId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { site } }, strategy },
  });
  await service.call("POST", `/api/v1/deployments/${created.id}/start`);
  return created.id;
}

const get = (id: string) => service.call<Listed & { progress: Record<string, number> }>("GET", `/api/v1/deployments/${id}`);

describe.skipIf(!peerAvailable("chromium"))("console: a deployment's one state", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0"]));
    for (const site of ["aborted", "completed", "rolling", "stopped"]) {
      fleets[site] = await service.enrollFleet({ prefix: `st-${site}`, devices: 2, labels: { site: `st-${site}` }, deployments: { timeScale: 0 } });
    }
    const staged = { type: "staged", canary: { count: 1 }, batches: [{ percent: 100 }] };
    ids.aborted = await deploy("state-aborted", "st-aborted", staged);
    await service.call("POST", `/api/v1/deployments/${ids.aborted}/rollout/abort`, { body: {} });
    ids.rolling = await deploy("state-rolling", "st-rolling", staged);
    ids.completed = await deploy("state-completed", "st-completed", { type: "all-at-once" });
    await reportAll(fleets.completed, fleets.completed.devices, ids.completed, "running");
    ids.stopped = await deploy("state-stopped", "st-stopped", { type: "all-at-once" });
    await reportAll(fleets.stopped, fleets.stopped.devices, ids.stopped, "running");
    await service.call("POST", `/api/v1/deployments/${ids.stopped}/stop`, { body: {} });
    await reportAll(fleets.stopped, fleets.stopped.devices, ids.stopped, "removed");
  }, 180_000);

  afterAll(async () => {
    await git?.close();
  });

  const WORDS = { aborted: "aborted", completed: "completed", rolling: "rolling out", stopped: "stopped" } as const;

  it("the API answers the state beside the spec's status", async () => {
    expect(await get(ids.aborted)).toMatchObject({ status: "running", rolloutState: "aborted", state: "aborted" });
    expect(await get(ids.completed)).toMatchObject({ status: "running", rolloutState: "completed", state: "completed" });
    expect(await get(ids.rolling)).toMatchObject({ status: "running", rolloutState: "canary", state: "rolling_out" });
    expect(await get(ids.stopped)).toMatchObject({ status: "stopped", state: "stopped", progress: expect.objectContaining({ removed: 2 }) });
  });

  it("reads the same words on the list, the deployment page and the overview", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/deployments");
    const table = ui.page.getByRole("table", { name: "Deployments" });
    const row = (name: string): Locator => table.getByRole("row").filter({ has: ui.page.getByRole("link", { name, exact: true }) });
    for (const [key, word] of Object.entries(WORDS)) {
      const r = row(`state-${key}`);
      await waitForText(r.getByTestId("deployment-state"), word);
      // one state per row: no second badge beside it (the status "running" beside "aborted" before)
      expect(await r.locator(".badge").allTextContents()).toEqual([word]);
    }
    await waitForText(row("state-stopped"), (t) => t.includes("removed from 2 of 2 devices") && !t.includes("not started"));
    await waitForText(row("state-completed"), (t) => t.includes("2/2 running"));
    await ui.screenshot("deployment-states-list");

    // the filter offers the same words
    await ui.page.getByLabel("State", { exact: true }).selectOption({ label: "aborted" });
    await expect.poll(() => table.locator("tbody tr .deployment-name a").allTextContents(), { timeout: 20_000 }).toEqual(["state-aborted"]);

    for (const [key, word] of Object.entries(WORDS)) {
      await ui.goto(`/deployments/${ids[key]}`);
      await waitForText(ui.page.getByRole("heading", { level: 1 }).getByTestId("deployment-state"), word);
    }
    // the aborted rollout's page: the heading and the rollout agree
    await ui.goto(`/deployments/${ids.aborted}`);
    await waitForText(ui.page.getByTestId("rollout-state"), "Aborted");
    expect(await ui.page.getByRole("heading", { level: 1 }).textContent()).not.toMatch(/active|running/);
    await ui.screenshot("deployment-state-aborted-page");

    await ui.goto("/");
    const card = ui.page.getByRole("region", { name: "Deployments in progress" });
    await waitForText(card, (t) => t.includes("state-rolling"));
    expect(await card.getByTestId("deployment-state").allTextContents()).toEqual(["rolling out"]);
    const text = await card.textContent();
    for (const other of ["state-aborted", "state-completed", "state-stopped"]) expect(text).not.toContain(other);
    await card.scrollIntoViewIfNeeded();
    await ui.screenshot("deployment-state-overview");
  }, 120_000);

  it("the overview lets go of a deployment once its rollout ends", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor();
    const card = ui.page.getByRole("region", { name: "Deployments in progress" });
    await waitForText(card, (t) => t.includes("state-rolling"));
    await service.call("POST", `/api/v1/deployments/${ids.rolling}/rollout/abort`, { body: {} });
    await waitForText(card, (t) => t.includes("Nothing is rolling out"));
    expect((await get(ids.rolling)).state).toBe("aborted");
  }, 60_000);
});
