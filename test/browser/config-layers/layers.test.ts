// Device configuration in Chromium (docs/configuration.md), controls found by accessible name:
// a layer refused for a bad name (the 400 at its field, nothing stored), the organization's
// default and a selector layer created, their content saved as revisions with a comment (a
// variable, a file, a write-only secret), a rollback to an earlier revision; then the device
// page's Configuration tab over simulated devices: each value with the layer@revision it came
// from and what it overrode (the selector layer's MQTT_URL over the default's), the secret
// named and never shown, in sync once the device applied it, drift with Restore; and the
// preview of a device from the layers page. Every stored effect is checked through the API.
import { createHash } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, UI_TIMEOUT_MS, waitForPath, waitForText } from "../../support/browser.js";

let service: ConsoleService;
let fleet: SimulatedFleet;

const SECRET = "s3cret-Berlin-broker-pass-42";

interface Layer {
  id: string; name: string; revision: number; secretNames: string[];
  content: { variables: Record<string, string>; files: { path: string; content: string | null; mode: string; owner: string | null }[]; restoredFrom: number | null; comment: string | null };
}

async function layerNamed(name: string): Promise<Layer> {
  const list = await service.call<{ items: { id: string; name: string }[] }>("GET", "/api/v1/config-layers?limit=200");
  const found = list.items.find((l) => l.name === name);
  if (!found) throw new Error(`no layer ${name}`);
  return service.call<Layer>("GET", `/api/v1/config-layers/${found.id}`);
}

describe.skipIf(!peerAvailable("chromium"))("console: device configuration layers", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "berlin-gw", devices: 2, labels: { site: "berlin" } });
  }, 180_000);

  it("creates layers, saves revisions, rolls back, and shows a device's values with their provenance", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/");
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Device configuration" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/config-layers", "the layers page");
    await ui.page.getByRole("heading", { name: "No configuration layers yet" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.settled();
    await ui.audit();

    // A bad name: the API's 400 is shown at the Name field, and nothing is stored.
    await ui.page.getByRole("button", { name: "New layer" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "New configuration layer" });
    await dialog.getByLabel("Name").fill("Org Defaults");
    await dialog.getByLabel("Kind").selectOption("organization");
    ui.expectStatus(400, "configLayers.create");
    await dialog.getByRole("button", { name: "Create layer" }).click();
    const name = dialog.getByLabel("Name");
    await expect.poll(() => name.getAttribute("aria-invalid"), { timeout: UI_TIMEOUT_MS }).toBe("true");
    const nameError = dialog.locator(`#${await name.getAttribute("aria-describedby")}`);
    expect(await waitForText(nameError, /lower-case letters/)).toMatch(/lower-case letters/);
    await ui.screenshot("config-layers-create-refused");
    expect((await service.call<{ total: number }>("GET", "/api/v1/config-layers")).total).toBe(0);

    // The organization's default layer, then its first values as revision 2.
    await name.fill("defaults");
    await dialog.getByRole("button", { name: "Create layer" }).click();
    await ui.page.getByRole("heading", { name: "defaults", level: 1 }).waitFor({ timeout: UI_TIMEOUT_MS });
    await addVariable(0, "MQTT_URL", "mqtt://default.example:1883");
    await addVariable(1, "LOG_LEVEL", "info");
    await save("first values", 2);
    await ui.audit();
    let defaults = await layerNamed("defaults");
    expect(defaults).toMatchObject({ revision: 2, content: { variables: { MQTT_URL: "mqtt://default.example:1883", LOG_LEVEL: "info" }, comment: "first values" } });

    // A selector layer for site=berlin at order 10: a variable overriding the default's, a
    // templated file and a secret.
    await ui.page.getByRole("link", { name: "Configuration layers" }).first().click();
    await ui.page.getByRole("table", { name: "Layers by precedence" }).getByRole("link", { name: "defaults" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.page.getByRole("button", { name: "New layer" }).click();
    const second = ui.page.getByRole("dialog", { name: "New configuration layer" });
    await second.getByLabel("Name").fill("site-berlin");
    await second.getByLabel("Kind").selectOption("selector");
    await second.getByLabel(/^Devices \(label selector/).fill("site=berlin");
    await second.getByLabel(/^Order/).fill("10");
    // the selector's suggestions (the fleet's label keys) have arrived before the dialog closes
    await ui.settled();
    await second.getByRole("button", { name: "Create layer" }).click();
    await ui.page.getByRole("heading", { name: "site-berlin", level: 1 }).waitFor({ timeout: UI_TIMEOUT_MS });
    await addVariable(0, "MQTT_URL", "mqtt://berlin.example:1883");
    await ui.page.getByRole("button", { name: "Add file" }).click();
    const file = ui.page.getByRole("group", { name: "File file 1" });
    await file.getByLabel("Path").fill("/etc/fleet/site.conf");
    await ui.page.getByLabel("Content of /etc/fleet/site.conf").fill("site={{ device.labels.site }}\nbroker={{ vars.MQTT_URL }}\n");
    await ui.page.getByLabel("Owner").fill("root:root");
    await ui.page.getByRole("button", { name: "Add secret" }).click();
    await ui.page.getByLabel("Name", { exact: true }).last().fill("DB_PASSWORD");
    await ui.page.getByRole("group", { name: "Secret DB_PASSWORD" }).getByLabel("Value").fill(SECRET);
    await ui.page.getByLabel(/^Activation command/).fill("systemctl reload mosquitto");
    await save("Berlin's own broker", 2);
    const berlin = await layerNamed("site-berlin");
    expect(berlin).toMatchObject({
      revision: 2, secretNames: ["DB_PASSWORD"],
      content: { variables: { MQTT_URL: "mqtt://berlin.example:1883" }, files: [{ path: "/etc/fleet/site.conf", owner: "root:root", mode: "0644" }] },
    });
    // write-only: the editor shows that it is set, never its value (the API never gave it one)
    const secretRow = ui.page.getByRole("group", { name: "Secret DB_PASSWORD" });
    await waitForText(secretRow, /set/);
    expect(await secretRow.getByLabel("Replace DB_PASSWORD").inputValue()).toBe("");
    expect(await ui.page.content()).not.toContain(SECRET);
    await ui.screenshot("config-layer-page");
    await ui.audit();

    // A file path the API refuses (not absolute): its 400 is shown at that row's Path, nothing stored.
    await ui.page.getByRole("button", { name: "Add file" }).click();
    await ui.page.getByRole("group", { name: "File file 2" }).getByLabel("Path").fill("etc/fleet/relative.conf");
    await ui.page.getByRole("button", { name: "Save as a new revision" }).click();
    const refused = ui.page.getByRole("dialog", { name: "Save site-berlin as revision 3" });
    ui.expectStatus(400, "configLayers.update");
    await refused.getByRole("button", { name: "Save revision 3" }).click();
    await waitForText(refused.getByRole("alert"), /etc\/fleet\/relative\.conf" must be absolute/);
    await refused.getByRole("button", { name: "Cancel" }).click();
    const badPath = ui.page.getByRole("group", { name: "File etc/fleet/relative.conf" }).getByLabel("Path");
    expect(await badPath.getAttribute("aria-invalid")).toBe("true");
    expect(await ui.page.locator(`#${await badPath.getAttribute("aria-describedby")}`).innerText()).toMatch(/must be absolute/);
    await ui.screenshot("config-layer-refused-path");
    expect((await layerNamed("site-berlin")).revision).toBe(2);
    await ui.page.getByRole("button", { name: "Remove file etc/fleet/relative.conf" }).click();

    // The list in order of precedence: the default first, then the selector layer.
    await ui.page.getByRole("link", { name: "Configuration layers" }).first().click();
    const table = ui.page.getByRole("table", { name: "Layers by precedence" });
    await table.getByRole("link", { name: "site-berlin" }).waitFor({ timeout: UI_TIMEOUT_MS });
    const rows = await table.getByRole("row").allInnerTexts();
    expect(rows[1]).toMatch(/^defaults[\s\S]*Organization default[\s\S]*every device/);
    expect(rows[2]).toMatch(/^site-berlin[\s\S]*order 10[\s\S]*site=berlin/);
    await ui.screenshot("config-layers-list");

    // A change to the default (revision 3), then rolled back to revision 2 (as revision 4).
    await table.getByRole("link", { name: "defaults" }).click();
    await ui.page.getByRole("heading", { name: "defaults", level: 1 }).waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.page.locator("#var-1-value").fill("debug");
    await save("more logging while we look", 3);
    expect((await layerNamed("defaults")).content.variables.LOG_LEVEL).toBe("debug");
    const history = ui.page.getByRole("table", { name: "Revisions of the layer" });
    await waitForText(history, /more logging while we look/);
    await history.getByRole("button", { name: "Roll back to revision 2" }).click();
    const confirm = ui.page.getByRole("dialog", { name: "Roll defaults back to revision 2?" });
    await confirm.getByRole("button", { name: "Roll back to revision 2" }).click();
    await ui.page.getByRole("heading", { name: "Content (revision 4)" }).waitFor({ timeout: UI_TIMEOUT_MS });
    await waitForText(history, /rollback to 2/);
    defaults = await layerNamed("defaults");
    expect(defaults).toMatchObject({ revision: 4, content: { variables: { LOG_LEVEL: "info", MQTT_URL: "mqtt://default.example:1883" }, restoredFrom: 2 } });
    const who = await history.getByRole("row").nth(1).innerText();
    expect(who).toContain(ADMIN.name);
    await ui.screenshot("config-layer-revisions");

    // The device's effective configuration: the selector layer's value over the default's.
    const device = fleet.devices[0];
    expect(device.deviceId).not.toBeNull();
    await ui.goto(`/devices/${device.deviceId}?tab=configuration`);
    const variables = ui.page.getByRole("table", { name: "Effective variables" });
    const mqtt = variables.getByRole("row").filter({ hasText: "MQTT_URL" });
    await waitForText(mqtt, /mqtt:\/\/berlin\.example:1883\s*site-berlin@2\s*defaults@4/);
    await waitForText(variables.getByRole("row").filter({ hasText: "LOG_LEVEL" }), /info\s*defaults@4\s*nothing/);
    await waitForText(variables.getByRole("row").filter({ hasText: "DB_PASSWORD" }), /secret, set\s*site-berlin@2/);
    const files = ui.page.getByRole("table", { name: "Effective files" });
    await waitForText(files.getByRole("row").filter({ hasText: "/etc/fleet/site.conf" }), /site=berlin\s*broker=mqtt:\/\/berlin\.example:1883/);
    const effective = await service.call<{ revision: string; inSync: boolean; variables: { name: string; layer: string; revision: number; overrode: { layer: string; revision: number }[] }[] }>(
      "GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`);
    expect(effective.variables.find((v) => v.name === "MQTT_URL")).toMatchObject({ layer: "site-berlin", revision: 2, overrode: [{ layer: "defaults", revision: 4 }] });
    expect(await ui.page.content()).not.toContain(SECRET);

    // The device takes it (two heartbeats: the full answer, then its report): in sync.
    await fleet.heartbeat([device]);
    await fleet.heartbeat([device]);
    const state = ui.page.getByRole("status", { name: "Applied on the device" });
    await waitForText(state, /In sync/);
    expect((await service.call<{ inSync: boolean }>("GET", `/api/v1/config-layers/effective?deviceId=${device.deviceId}`)).inSync).toBe(true);
    await ui.screenshot("device-configuration-tab");
    await ui.audit();

    // A file changed by hand on the device: drifted, and Restore asks the device to rewrite it.
    const drift = { revision: effective.revision, state: "applied", appliedRevision: effective.revision, drift: [{ path: "/etc/fleet/site.conf", sha256: "a".repeat(64) }] };
    const reported = await device.exchangeHeartbeat(device.deployments, { status: "online" }, undefined, { pendingReport: () => drift, acknowledge: () => undefined, apply: () => undefined });
    expect(reported.response.status).toBe(200);
    await ui.page.reload();
    await waitForText(ui.page.getByRole("list", { name: "Drifted files" }), "/etc/fleet/site.conf");
    await ui.screenshot("device-configuration-drifted");
    await ui.page.getByRole("button", { name: "Restore the drifted files" }).click();
    await ui.page.getByText(/The device rewrites 1 file with its next heartbeat/).waitFor({ timeout: UI_TIMEOUT_MS });
    let answer: unknown;
    await device.exchangeHeartbeat(device.deployments, { status: "online" }, undefined, {
      pendingReport: () => undefined, acknowledge: () => undefined, apply: (a) => { answer = a; },
    });
    expect(answer).toMatchObject({ revision: effective.revision, full: true, restore: true });

    // Changed by hand again, and this time kept: the device's content goes into its override layer.
    const own = "site=berlin\nbroker=mqtt://bench-broker.local:1883\n";
    const kept = { ...drift, drift: [{ path: "/etc/fleet/site.conf", sha256: createHash("sha256").update(own).digest("hex"), contentBase64: Buffer.from(own).toString("base64") }] };
    expect((await device.exchangeHeartbeat(device.deployments, { status: "online" }, undefined, { pendingReport: () => kept, acknowledge: () => undefined, apply: () => undefined })).response.status).toBe(200);
    await ui.page.reload();
    await ui.page.getByRole("button", { name: "Keep the device's files as its override" }).click();
    await ui.page.getByText(/^Kept the device's 1 file in layer /).waitFor({ timeout: UI_TIMEOUT_MS });
    const overrides = await service.call<{ items: { id: string; kind: string }[] }>("GET", `/api/v1/config-layers?kind=device&deviceId=${device.deviceId}`);
    expect(overrides.items).toHaveLength(1);
    const override = await service.call<Layer>("GET", `/api/v1/config-layers/${overrides.items[0].id}`);
    expect(override.content.files).toMatchObject([{ path: "/etc/fleet/site.conf" }]);
    const keptFile = override.content.files[0] as { content: string | null; contentBase64?: string | null };
    expect(keptFile.content ?? Buffer.from(keptFile.contentBase64 ?? "", "base64").toString("utf8")).toBe(own);
    // the override wins: the device's file now comes from it
    await waitForText(ui.page.getByRole("table", { name: "Effective files" }).getByRole("row").filter({ hasText: "/etc/fleet/site.conf" }), new RegExp(`${override.name}@${override.revision}`));
    await ui.screenshot("device-configuration-kept");

    // The preview from the layers page: the other device, before it ever applied anything.
    await ui.goto("/config-layers");
    await ui.page.getByRole("button", { name: "Preview a device" }).click();
    const preview = ui.page.getByRole("dialog", { name: "Preview a device's configuration" });
    const other = await service.call<{ name: string }>("GET", `/api/v1/devices/${fleet.devices[1].deviceId}`);
    await preview.getByLabel("Device to preview").selectOption({ label: other.name });
    await waitForText(preview.getByRole("table", { name: "Effective variables" }).getByRole("row").filter({ hasText: "MQTT_URL" }), /mqtt:\/\/berlin\.example:1883\s*site-berlin@2/);
    expect(await ui.page.content()).not.toContain(SECRET);
    await ui.screenshot("config-layers-preview");
    await ui.audit();

    async function addVariable(index: number, varName: string, value: string) {
      await ui.page.getByRole("button", { name: "Add variable" }).click();
      await ui.page.locator(`#var-${index}-name`).fill(varName);
      await ui.page.locator(`#var-${index}-value`).fill(value);
    }

    async function save(comment: string, revision: number) {
      await ui.page.getByRole("button", { name: "Save as a new revision" }).click();
      const saveDialog = ui.page.getByRole("dialog", { name: /^Save .+ as revision/ });
      await saveDialog.getByLabel(/^Comment/).fill(comment);
      await saveDialog.getByRole("button", { name: `Save revision ${revision}` }).click();
      await ui.page.getByRole("heading", { name: `Content (revision ${revision})` }).waitFor({ timeout: UI_TIMEOUT_MS });
    }
  }, 300_000);

  it("saves a revision rolled out in stages: an apply-configuration job, linked from the layer", async () => {
    const layer = await service.call<{ id: string }>("POST", "/api/v1/config-layers", {
      body: { name: "staged-berlin", kind: "selector", selector: { site: "berlin" }, order: 20, variables: { FEATURE_X: "off" } },
    });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto(`/config-layers/${layer.id}`);
    await ui.page.locator("#var-0-value").fill("on");
    await ui.page.getByRole("button", { name: "Save as a new revision" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Save staged-berlin as revision 2" });
    await dialog.getByLabel(/^Comment/).fill("feature X for Berlin, canary first");
    await dialog.getByLabel("Roll out in stages").check();
    await dialog.getByLabel("Canary devices").fill("1");
    await ui.screenshot("config-layer-rollout-dialog");
    await ui.audit();
    await dialog.getByRole("button", { name: "Save revision 2 and roll it out" }).click();
    const banner = ui.page.getByRole("status", { name: "Rollout" });
    await waitForText(banner, /revision 2/);
    const stored = await service.call<{ revision: number; releasedRevision: number; rollout: { jobId: string; revision: number } | null }>("GET", `/api/v1/config-layers/${layer.id}`);
    expect(stored).toMatchObject({ revision: 2, releasedRevision: 1, rollout: { revision: 2 } });
    const job = await service.call<{ kind: string; strategy: { canary: { count: number } } }>("GET", `/api/v1/jobs/${stored.rollout!.jobId}`);
    expect(job).toMatchObject({ kind: "apply-configuration", strategy: { canary: { count: 1 } } });
    await ui.screenshot("config-layer-rolling-out");
    await ui.audit();
    await banner.getByRole("link", { name: "Open the rollout job" }).click();
    await waitForPath(ui.page, (url) => url.pathname === `/jobs/${stored.rollout!.jobId}`, "the rollout's job page");
    await ui.settled();
    await ui.page.getByRole("heading", { level: 1 }).first().waitFor({ timeout: UI_TIMEOUT_MS });
    await ui.audit();
  }, 180_000);

  it("marks a layer managed as code in the list and on its page, and offers no edit, save or delete for it", async () => {
    const doc = "apiVersion: fleet.app/v1\nkind: ConfigLayer\nmetadata: { name: gitops-defaults }\nspec:\n  kind: selector\n  selector: { site: hamburg }\n  order: 30\n  variables: { NTP_SERVER: ntp.example.test }\n";
    await service.call("POST", `/api/v1/organizations/${service.defaultOrg.id}/config/apply`, { body: { files: [{ path: "fleet/layers.yaml", content: doc }], commit: "3f2a9c1d" } });
    const stored = await layerNamed("gitops-defaults");
    expect(stored).toMatchObject({ managedBy: expect.stringMatching(/^apply:/), managedCommit: "3f2a9c1d" });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/config-layers");
    const row = ui.page.getByRole("row").filter({ hasText: "gitops-defaults" });
    await waitForText(row.getByTestId("managed-mark"), (t) => t.includes("3f2a9c1"));
    await row.getByRole("link", { name: "gitops-defaults" }).click();
    await waitForPath(ui.page, (url) => url.pathname === `/config-layers/${stored.id}`, "the managed layer's page");
    await ui.settled();
    await waitForText(ui.page.locator("main"), (t) => t.includes("Change it in its documents"));
    // nothing to change here: the documents own it
    for (const name of ["Delete layer", "Save as a new revision", /^Roll back to revision/]) {
      expect(await ui.page.getByRole("button", { name }).count()).toBe(0);
    }
    expect(await ui.page.locator("#var-0-value").isDisabled()).toBe(true);
    await ui.screenshot("config-layer-managed");
    await ui.audit();
  }, 120_000);
});
