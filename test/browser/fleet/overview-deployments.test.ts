// The overview's "Deployments in progress" card in Chromium with a real rollout: an application
// imported from a Git registry served over smart HTTP on loopback, deployed to four simulated
// devices. The card shows the deployment as soon as it starts and its progress bar follows the
// devices' reports without a reload (the realtime channel's deployment events), with the
// numbers the API gives; once its rollout completed it leaves the card (in progress only).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { startGitServer, type GitServer } from "../../support/git-server/index.js";
import { appYaml } from "../../http/registries-git/support.js";

let service: ConsoleService;
let fleet: SimulatedFleet;
let git: GitServer;

interface Progress { total: number; running: number; failed: number }
interface Deployment { id: string; name: string; status: string; progress: Progress }

describe.skipIf(!peerAvailable("chromium"))("console overview: deployments in progress", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    git = await startGitServer();
    // Immediate steps: each heartbeat moves a device one state (downloading, installing, running).
    fleet = await service.enrollFleet({ prefix: "bergen", devices: 4, labels: { site: "bergen" }, deployments: { timeScale: 0 } });
    const { url } = await git.createRepo("catalog", { "apps/counter/app.yaml": appYaml("counter", "1.2.0", { name: "Counter" }) });
    const registry = await service.call<{ id: string }>("POST", "/api/v1/registries/git", { body: { name: "catalog", url } });
    const synced = await service.call<{ success: boolean; applicationsImported: number }>("POST", `/api/v1/registries/git/${registry.id}/sync`);
    expect(synced).toMatchObject({ success: true, applicationsImported: 1 });
  });

  afterAll(async () => {
    await git?.close();
  });

  it("shows a started deployment and moves its progress bar as devices report, without a reload", async () => {
    const apps = await service.call<{ items: { id: string; name: string }[] }>("GET", "/api/v1/applications?limit=10");
    const counter = apps.items.find((a) => a.name === "Counter");
    expect(counter).toBeDefined();

    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("status").filter({ hasText: /^Live$/ }).waitFor();
    const card = ui.page.getByRole("region", { name: "Deployments in progress" });
    await waitForText(card, (t) => t.includes("Nothing is rolling out"));

    const created = await service.call<Deployment>("POST", "/api/v1/deployments", {
      body: { name: "counter-bergen", applicationId: counter!.id, version: "1.2.0", profileId: "compose", target: { labelSelector: { site: "bergen" } } },
    });
    await service.call("POST", `/api/v1/deployments/${created.id}/start`);
    const progress = ui.page.getByRole("progressbar", { name: /^counter-bergen:/ });
    // Appears live, nothing running yet.
    await waitForText(card, (t) => t.includes("counter-bergen") && t.includes("Counter 1.2.0") && t.includes("0 of 4 running"));
    expect(await progress.getAttribute("aria-valuenow")).toBe("0");

    // Two devices go through downloading, installing, running (one state per heartbeat).
    const firstTwo = fleet.devices.slice(0, 2);
    await untilRunning(created.id, 2, firstTwo);
    await waitForText(card, (t) => t.includes("2 of 4 running"));
    expect(await progress.getAttribute("aria-valuenow")).toBe("2");
    expect(await progress.getAttribute("aria-valuemax")).toBe("4");
    await card.scrollIntoViewIfNeeded();
    await ui.screenshot("overview-deployment-progress");

    // Every device runs it: the rollout completed, and the card lists only deployments in progress.
    await untilRunning(created.id, 4, fleet.devices);
    expect(await service.call<Deployment & { state: string }>("GET", `/api/v1/deployments/${created.id}`)).toMatchObject({ state: "completed" });
    await waitForText(card, (t) => t.includes("Nothing is rolling out") && !t.includes("counter-bergen"));
    await ui.audit();
  });
});

/** Heartbeats `devices` until the API counts `running` devices running the deployment; answers its progress. */
async function untilRunning(id: string, running: number, devices: SimulatedFleet["devices"]): Promise<Progress> {
  for (let round = 0; round < 20; round++) {
    await fleet.heartbeat(devices);
    const deployment = await service.call<Deployment>("GET", `/api/v1/deployments/${id}`);
    if (deployment.progress.running === running) return deployment.progress;
  }
  throw new Error(`deployment ${id} did not reach ${running} running devices in 20 heartbeats`);
}
