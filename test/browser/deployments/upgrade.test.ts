// Upgrading a running deployment from its page, in Chromium (docs/deployments.md, "Upgrading a
// running deployment"): a staged deployment of Line Monitor 1.0.0 has completed on simulated
// devices; Upgrade opens a dialog that chooses a version and says what will happen (canary
// first, the others keep 1.0.0 until reached); confirming starts the update rollout: the page
// shows the canary in flight, the API holds 1.1.0, only the canary is told 1.1.0.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import type { GitServer } from "../../support/git-server/index.js";
import { devicesOfBatch, heartbeat, importApplication, reportAll } from "./support.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let git: GitServer;
let applicationId: string;

describe.skipIf(!peerAvailable("chromium"))("console: upgrade a running deployment", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0", "1.1.0"]));
    fleet = await service.enrollFleet({ prefix: "weld", devices: 3, labels: { line: "weld-2" } });
  }, 120_000);

  afterAll(async () => {
    await git?.close();
  });

  it("Upgrade chooses 1.1.0, says what happens, and starts the update rollout: canary first", async () => {
    const { id } = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
      body: {
        name: "weld monitor", applicationId, version: "1.0.0", profileId: "compose-main", target: { labelSelector: { line: "weld-2" } },
        strategy: { type: "staged", canary: { count: 1 }, batches: [], successThreshold: 100, autoAdvance: true },
      },
    });
    await service.call("POST", `/api/v1/deployments/${id}/start`);
    await reportAll(fleet, await devicesOfBatch(service, fleet, id, 0), id, "running");
    await reportAll(fleet, await devicesOfBatch(service, fleet, id, 1), id, "running");

    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await waitForText(ui.page.getByTestId("rollout-state"), "Completed");
    await ui.page.getByRole("button", { name: "Upgrade", exact: true }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Upgrade weld monitor" });
    await waitForText(dialog, /It runs Line Monitor 1\.0\.0 now\./);
    const version = dialog.getByRole("combobox", { name: "Version" });
    await expect.poll(() => version.inputValue()).toBe("1.1.0");
    await waitForText(dialog, /the canary \(1 device\) gets 1\.1\.0 first, then the batches follow as each succeeds\. Until its batch is reached, a device keeps running 1\.0\.0/);
    await ui.audit();
    await ui.screenshot("deployments-upgrade-dialog");
    await dialog.getByRole("button", { name: "Upgrade to 1.1.0", exact: true }).click();
    await dialog.waitFor({ state: "hidden" });

    await waitForText(ui.page.getByTestId("rollout-state"), "Canary");
    const stored = await service.call<{ version: string; status: string; rolloutState: string }>("GET", `/api/v1/deployments/${id}`);
    expect(stored).toMatchObject({ version: "1.1.0", status: "running", rolloutState: "canary" });
    const [canary] = await devicesOfBatch(service, fleet, id, 0);
    const others = await devicesOfBatch(service, fleet, id, 1);
    expect((await heartbeat(fleet, canary)).map((d) => [d.deploymentId, d.action, d.version])).toEqual([[id, "install", "1.1.0"]]);
    for (const device of others) expect((await heartbeat(fleet, device)).map((d) => [d.action, d.version])).toEqual([["install", "1.0.0"]]);
    await ui.audit();
    await ui.screenshot("deployments-upgrade-canary");
  }, 240_000);
});
