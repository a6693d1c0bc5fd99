// Stop, remove and roll back from the browser, with simulated devices answering over the
// agent protocol:
// * a running deployment deleted: the removal card counts the devices' confirmations live
//   until the last one, and the page then says it is gone (the API answers 404);
// * a stop whose removal one device never confirms, finished with force after its warning;
// * a group rollback by label selector: the dry run's report first (per device: from which
//   version to which, or why not), equal to the API's dry run and changing nothing, then the
//   real run after confirmation, whose rollback deployments the API lists;
// * one device rolled back from its page's Deployments tab;
// * a group rolled back from the Groups page, the application chosen in the dialog;
// * a role without deployments:read reaching a deployment's page by a link: the forbidden
//   state, and no deployment asked for.
//
// The paint cell (Line Monitor 1.0.0, then 1.1.0 on every device):
//   row a: a0, a1, a2 ran 1.0.0, a3 failed it  -> a0..a2 back to 1.0.0, a3 has nothing to go back to
//   row b: b0, b1 ran 1.0.0                    -> b0 rolled back from its device page
// The pack cell (3 devices) carries the deployments that are deleted and stopped.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, USER_PASSWORD, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import type { GitServer } from "../../support/git-server/index.js";
import type { VirtualDevice } from "../../../src/simulator/virtual-device.js";
import { heartbeat, importApplication, reportAll } from "./support.js";

let service: ConsoleService;
let git: GitServer;
let applicationId: string;
let rowA: SimulatedFleet;
let rowB: SimulatedFleet;
let pack: SimulatedFleet;

async function deploy(name: string, version: string, labelSelector: Record<string, string>): Promise<string> {
  const created = await service.call<{ id: string }>("POST", "/api/v1/deployments", {
    body: { name, applicationId, version, profileId: "compose-main", target: { labelSelector } },
  });
  await service.call("POST", `/api/v1/deployments/${created.id}/start`);
  return created.id;
}

/** The devices take the install and report it running (or failed). */
async function install(fleet: SimulatedFleet, devices: VirtualDevice[], id: string, state: "running" | "failed" = "running"): Promise<void> {
  for (const device of devices) {
    expect((await heartbeat(fleet, device)).some((d) => d.deploymentId === id && d.action === "install")).toBe(true);
  }
  await reportAll(fleet, devices, id, state, state === "failed" ? "install failed: not enough disk space (simulated)" : undefined);
}

describe.skipIf(!peerAvailable("chromium"))("console removal and rollback", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    ({ applicationId, git } = await importApplication(service, ["1.0.0", "1.1.0"]));
    rowA = await service.enrollFleet({ prefix: "paint-a", devices: 4, labels: { cell: "paint", row: "a" } });
    rowB = await service.enrollFleet({ prefix: "paint-b", devices: 2, labels: { cell: "paint", row: "b" } });
    pack = await service.enrollFleet({ prefix: "pack", devices: 3, labels: { cell: "pack" } });

    const v1 = await deploy("paint 1.0.0", "1.0.0", { cell: "paint" });
    await install(rowA, rowA.devices.slice(0, 3), v1);
    await install(rowA, rowA.devices.slice(3), v1, "failed");
    await install(rowB, rowB.devices, v1);
    const v2 = await deploy("paint 1.1.0", "1.1.0", { cell: "paint" });
    await install(rowA, rowA.devices, v2);
    await install(rowB, rowB.devices, v2);
  }, 120_000);

  afterAll(async () => {
    await git?.close();
  });

  it("follows a deletion until every device confirmed the removal", async () => {
    const id = await deploy("pack 1.1.0", "1.1.0", { cell: "pack" });
    await install(pack, pack.devices, id);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await waitForText(ui.page.getByTestId("all-at-once-counts"), /^3 running/);

    await ui.page.getByRole("button", { name: "Delete", exact: true }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Delete pack 1.1.0?" });
    await waitForText(dialog.locator(".dialog__body"), /It runs on 3 devices now: each will be told to remove Line Monitor/);
    await ui.audit();
    await dialog.getByRole("button", { name: "Delete deployment" }).click();
    const summary = ui.page.getByTestId("removal-summary");
    await waitForText(summary, /^0 of 3 devices confirmed the removal; 3 awaited/);
    expect(await service.call("GET", `/api/v1/deployments/${id}/removal-status`)).toMatchObject({ status: "deleting", total: 3, confirmed: 0, awaiting: 3, complete: false });
    await ui.audit();

    // Each device is told to remove it, and confirms; the card counts along without a reload.
    for (const [n, device] of pack.devices.entries()) {
      expect((await heartbeat(pack, device)).filter((d) => d.deploymentId === id).map((d) => d.action)).toEqual(["remove"]);
      await heartbeat(pack, device, [{ deploymentId: id, state: "removing" }]);
      await heartbeat(pack, device, [{ deploymentId: id, state: "removed" }]);
      if (n < 2) {
        await waitForText(summary, new RegExp(`^${n + 1} of 3 devices confirmed the removal; ${2 - n} awaited`));
        expect(await service.call("GET", `/api/v1/deployments/${id}/removal-status`)).toMatchObject({ confirmed: n + 1, awaiting: 2 - n });
      }
    }
    await waitForText(ui.page.getByRole("heading", { level: 1 }), "Deployment deleted");
    await ui.audit();
    expect((await service.api("GET", `/api/v1/deployments/${id}`)).status).toBe(404);
  });

  it("forces a stop that a device never confirms, after its warning", async () => {
    const id = await deploy("pack 1.1.0 again", "1.1.0", { cell: "pack" });
    await install(pack, pack.devices, id);
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${id}`);
    await ui.page.getByRole("button", { name: "Stop", exact: true }).click();
    const stop = ui.page.getByRole("dialog", { name: "Stop?" });
    await waitForText(stop.locator(".dialog__body"), /Every device of the deployment is told to remove the application/);
    await stop.getByRole("button", { name: "Stop", exact: true }).click();
    const summary = ui.page.getByTestId("removal-summary");
    await waitForText(summary, /^0 of 3 devices confirmed the removal/);

    for (const device of pack.devices.slice(0, 2)) {
      await heartbeat(pack, device);
      await heartbeat(pack, device, [{ deploymentId: id, state: "removed" }]);
    }
    await waitForText(summary, /^2 of 3 devices confirmed the removal; 1 awaited/);
    const awaited = ui.page.getByRole("table", { name: /awaited first/ }).locator("tbody tr").first();
    await waitForText(awaited, (t) => t.includes("awaited") && t.includes(pack.devices[2].reportedDeviceId));

    await ui.page.getByRole("button", { name: "Force stop" }).click();
    const force = ui.page.getByRole("dialog", { name: "Stop pack 1.1.0 again without waiting?" });
    await waitForText(force.locator(".alert-box"), /1 device has not confirmed the removal\. .* may keep running it without the service knowing/);
    await ui.audit();
    await force.getByRole("button", { name: "Force stop" }).click();
    await waitForText(ui.page.getByRole("heading", { level: 1 }), /stopped$/);
    const removal = await service.call<{ status: string; confirmed: number; total: number; awaiting: number }>("GET", `/api/v1/deployments/${id}/removal-status`);
    expect(removal).toMatchObject({ status: "stopped", confirmed: 2, awaiting: 0 });
    await waitForText(summary, `Removal complete: ${removal.confirmed} of ${removal.total} devices confirmed it; the deployment is stopped.`);
    await ui.audit();
    // The device that never confirmed is no longer told to remove it.
    expect((await heartbeat(pack, pack.devices[2])).filter((d) => d.deploymentId === id)).toEqual([]);
  });

  it("rolls back a group after showing its dry run", async () => {
    const deployments = await service.call<{ items: { id: string; name: string }[] }>("GET", "/api/v1/deployments?limit=100");
    const v2 = deployments.items.find((d) => d.name === "paint 1.1.0")!;
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/deployments/${v2.id}`);
    await ui.page.getByRole("button", { name: "Roll back devices" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Roll back Line Monitor" });
    const selector = dialog.getByLabel("Devices (label selector)");
    expect(await selector.inputValue()).toBe("cell=paint");
    await selector.fill("cell=paint,row=a");
    await dialog.getByRole("button", { name: "Dry run" }).click();
    await waitForText(dialog.getByTestId("rollback-summary"), "Dry run: 4 devices ran it; 3 would be rolled back, 1 without a version to go back to.");
    await ui.audit();
    await ui.screenshot("deployments-group-rollback-dry-run");

    // The page's report is the API's dry run, and nothing changed.
    const before = await service.call<{ total: number }>("GET", "/api/v1/deployments?limit=1");
    const api = await service.call<{ devices: Array<{ deviceName: string; status: string; fromVersion: string | null; toVersion: string | null; reason: string | null }> }>(
      "POST", "/api/v1/groups/rollback", { body: { labelSelector: { cell: "paint", row: "a" }, applicationId, dryRun: true } },
    );
    const rows = await dialog.getByRole("table", { name: "Dry run of the rollback, per device" }).locator("tbody tr").allTextContents();
    expect(rows.map((r) => r.replace(/\s+/g, " ").trim()).sort()).toEqual(api.devices.map((d) => (d.status === "rolled_back"
      ? `${d.deviceName}from ${d.fromVersion} to ${d.toVersion}will roll back`
      : `${d.deviceName}stays on ${d.fromVersion ?? "none"}no target ${d.reason}`)).sort());
    expect(api.devices.filter((d) => d.status === "rolled_back").map((d) => [d.fromVersion, d.toVersion])).toEqual([["1.1.0", "1.0.0"], ["1.1.0", "1.0.0"], ["1.1.0", "1.0.0"]]);
    expect(api.devices.find((d) => d.status === "no_target")!.deviceName).toBe(rowA.devices[3].reportedDeviceId);
    expect((await service.call<{ total: number }>("GET", "/api/v1/deployments?limit=1")).total).toBe(before.total);

    await dialog.getByRole("button", { name: "Roll back 3 devices" }).click();
    await waitForText(dialog.getByTestId("rollback-summary"), "Done: 4 devices ran it; 3 were rolled back, 1 without a version to go back to.");
    await ui.audit();
    await dialog.getByRole("button", { name: "Close" }).click();
    // Each rolled-back device is told to install 1.0.0 again; the one without a target keeps 1.1.0.
    for (const device of rowA.devices.slice(0, 3)) {
      const installs = (await heartbeat(rowA, device)).filter((d) => d.action === "install");
      expect(installs.map((d) => d.version)).toEqual(["1.0.0"]);
    }
    expect((await heartbeat(rowA, rowA.devices[3])).filter((d) => d.action === "install").map((d) => d.version)).toEqual(["1.1.0"]);
  });

  it("rolls one device back from its page", async () => {
    const device = rowB.devices[0];
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/devices/${device.deviceId}?tab=deployments`);
    const rollback = ui.page.getByRole("listitem", { name: "Roll back Line Monitor" });
    await waitForText(rollback.getByTestId("rollback-target"), "runs 1.1.0; last good version 1.0.0");
    await rollback.getByRole("button", { name: "Roll back to 1.0.0" }).click();
    const dialog = ui.page.getByRole("dialog", { name: `Roll back Line Monitor on ${device.reportedDeviceId}?` });
    await waitForText(dialog.locator(".dialog__body p").first(), /goes from 1\.1\.0 back to 1\.0\.0, the last version that ran successfully on it/);
    await ui.audit();
    await dialog.getByRole("button", { name: "Roll back to 1.0.0" }).click();
    await dialog.waitFor({ state: "hidden" });
    // The device's desired state now carries the rollback deployment of 1.0.0, first in the tab.
    const desired = ui.page.getByRole("table", { name: "Deployments of this device" }).locator("tbody tr").first();
    await waitForText(desired, (t) => t.includes("1.0.0") && t.includes("install"));
    await ui.audit();
    await ui.screenshot("devices-deployments-rollback");
    const installs = (await heartbeat(rowB, device)).filter((d) => d.action === "install");
    expect(installs.map((d) => d.version)).toEqual(["1.0.0"]);
    // Its neighbour was not touched.
    expect((await heartbeat(rowB, rowB.devices[1])).filter((d) => d.action === "install").map((d) => d.version)).toEqual(["1.1.0"]);
  });
  it("rolls back a group from the Groups page, the application chosen there", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/groups?key=row");
    await ui.page.getByRole("button", { name: "Roll back devices with row=b" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Roll back an application" });
    expect(await dialog.getByLabel("Devices (label selector)").inputValue()).toBe("row=b");
    // Nothing can run before an application is chosen.
    expect(await dialog.getByRole("button", { name: "Dry run" }).isDisabled()).toBe(true);
    await dialog.getByLabel("Application").selectOption({ label: "Line Monitor" });
    await dialog.getByRole("button", { name: "Dry run" }).click();
    type DryRun = { matched: number; rolledBack: number; withoutTarget: number; devices: Array<{ deviceId: string; deviceName: string; status: string; fromVersion: string | null; toVersion: string | null; reason: string | null }> };
    const before = await service.call<{ total: number }>("GET", "/api/v1/deployments?limit=1");
    const api = await service.call<DryRun>("POST", "/api/v1/groups/rollback", { body: { labelSelector: { row: "b" }, applicationId, dryRun: true } });
    expect(api.matched).toBe(2);
    await waitForText(dialog.getByTestId("rollback-summary"),
      `Dry run: 2 devices ran it; ${api.rolledBack} would be rolled back, ${api.withoutTarget} without a version to go back to.`);
    // The dry run lists each device with its from and to versions, as the API's dry run does, and changes nothing.
    const dryRows = dialog.getByRole("table", { name: "Dry run of the rollback, per device" }).locator("tbody tr");
    await expect.poll(() => dryRows.count()).toBe(api.devices.length);
    expect((await dryRows.allTextContents()).map((r) => r.replace(/\s+/g, " ").trim()).sort()).toEqual(api.devices.map((d) => (d.status === "rolled_back"
      ? `${d.deviceName}from ${d.fromVersion} to ${d.toVersion}will roll back`
      : `${d.deviceName}stays on ${d.fromVersion ?? "none"}no target ${d.reason}`)).sort());
    // The device the previous test left on 1.1.0 would go back to 1.0.0.
    expect(api.devices.find((d) => d.deviceId === rowB.devices[1].deviceId)).toMatchObject({ status: "rolled_back", fromVersion: "1.1.0", toVersion: "1.0.0" });
    expect((await service.call<{ total: number }>("GET", "/api/v1/deployments?limit=1")).total).toBe(before.total);
    await ui.audit();
    await ui.screenshot("groups-rollback-dry-run");
    await dialog.getByRole("button", { name: `Roll back ${api.rolledBack} device${api.rolledBack === 1 ? "" : "s"}` }).click();
    await waitForText(dialog.getByTestId("rollback-summary"), `Done: 2 devices ran it; ${api.rolledBack} were rolled back, ${api.withoutTarget} without a version to go back to.`);
    await ui.audit();
    await ui.screenshot("groups-rollback-done");
    // The API shows the rollback dispatched: each rolled-back device is told to install its target version by a new deployment.
    expect((await service.call<{ total: number }>("GET", "/api/v1/deployments?limit=1")).total).toBeGreaterThan(before.total);
    for (const d of api.devices.filter((x) => x.status === "rolled_back")) {
      const desired = await service.call<{ items: Array<{ version: string; desiredAction: string | null; deploymentStatus: string }> }>("GET", `/api/v1/devices/${d.deviceId}/deployments?desired=true`);
      expect(desired.items.filter((e) => e.desiredAction === "install").map((e) => [e.version, e.deploymentStatus]), d.deviceName).toEqual([[d.toVersion, "running"]]);
    }
    expect((await heartbeat(rowB, rowB.devices[1])).filter((d) => d.action === "install").map((d) => d.version)).toEqual(["1.0.0"]);
  });

  it("shows a role without deployments:read the forbidden state, asking for nothing", async () => {
    const deployments = await service.call<{ items: { id: string }[] }>("GET", "/api/v1/deployments?limit=1");
    const role = await service.call<{ id: string }>("POST", "/api/v1/roles", { body: { name: "Device watcher", permissions: ["devices:read", "telemetry:read"] } });
    const email = `watcher-${crypto.randomBytes(4).toString("hex")}@console.test`;
    const user = await service.call<{ id: string }>("POST", "/api/v1/users", { body: { email, name: "Device Watcher", password: USER_PASSWORD } });
    await service.call("POST", `/api/v1/users/${user.id}/organizations`, { body: { organizationId: service.defaultOrg.id, roleId: role.id } });
    const token = await service.bearer({ email, password: USER_PASSWORD });
    expect((await service.api("GET", `/api/v1/deployments/${deployments.items[0].id}`, { key: null, token })).status).toBe(403);

    const ui = await suite.open({ user: { email, password: USER_PASSWORD } });
    const asked: string[] = [];
    ui.page.on("request", (req) => {
      if (/\/trpc\/[^?]*(deployments|rollback)\./.test(req.url())) asked.push(req.url());
    });
    await ui.goto(`/deployments/${deployments.items[0].id}?state=failed`);
    await ui.page.getByRole("heading", { name: "You cannot see deployments" }).waitFor();
    expect(await ui.page.getByRole("group", { name: "Rollout controls" }).count()).toBe(0);
    expect(asked).toEqual([]);
    // Groups: the rollback is a deployments:write action, absent for this role.
    await ui.goto("/groups?key=row");
    await ui.page.getByRole("table", { name: "Values of row" }).waitFor();
    expect(await ui.page.getByRole("button", { name: /Roll back/ }).count()).toBe(0);
  });
});
