// The enrollment lobby in Chromium (issue 50): a token made in the form with the lobby mode,
// devices enrolled with it wait under Fleet > Lobby with what they said and what the service
// saw; one is approved with a label, the others approved by selector or rejected, and the
// device list says which device still awaits approval. The factory's list of pre-authorized
// devices is imported on the same page.
import crypto from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { createCsr, generateDeviceKeys } from "../../../agent/src/core/identity.js";

let service: ConsoleService;

async function enroll(token: string, name: string, labels: Record<string, string>) {
  const keys = await generateDeviceKeys("ES256");
  const id = `hw-${crypto.randomBytes(4).toString("hex")}`;
  const res = await service.api("POST", "/api/v1/agent/enroll", {
    key: null,
    body: { enrollmentToken: token, reportedDeviceId: id, name, csr: await createCsr(keys, id), labels, facts: { os: "linux", arch: "arm64" } },
  });
  expect(res.status, res.text).toBe(201);
  expect(res.body.admission).toBe("pending");
  return res.body.deviceId as string;
}

describe.skipIf(!peerAvailable("chromium"))("console enrollment lobby", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
    await service.call("POST", "/api/v1/ca-certificates/generate", { body: { name: "Lobby CA", commonName: "Lobby CA" } });
  });

  it("a lobby token's devices wait in the Lobby until approved (one with a label, others by selector) or rejected", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/enrollment-tokens");
    await ui.page.getByRole("button", { name: "Create token" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Create an enrollment token" });
    await dialog.getByLabel("Name").fill("Line 3 gate");
    await dialog.getByLabel("Admission").selectOption({ label: "Lobby: each new device awaits approval" });
    await dialog.getByText("Devices wait in the Lobby").waitFor();
    await dialog.getByRole("button", { name: "Create token" }).click();
    const card = ui.page.getByRole("region", { name: "Token “Line 3 gate” created" });
    const token = (await card.getByTestId("new-token").textContent())!.trim();
    service.rememberSecret(token);
    const row = ui.page.getByRole("table", { name: "Enrollment tokens" }).getByRole("row").filter({ hasText: "Line 3 gate" });
    await row.getByText("lobby: awaits approval").waitFor();

    const cam1 = await enroll(token, "cam-1", { site: "lab" });
    const cam2 = await enroll(token, "cam-2", { site: "lab" });
    const rogue = await enroll(token, "rogue", { site: "elsewhere" });

    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Lobby" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/enrollment-requests", "the lobby");
    const table = ui.page.getByRole("table", { name: "Enrollment requests" });
    const cam1Row = table.getByRole("row").filter({ hasText: "cam-1" });
    await cam1Row.getByText("awaiting approval").waitFor();
    await cam1Row.getByText("token “Line 3 gate”").waitFor();
    await cam1Row.getByText("os: linux, arch: arm64").waitFor();
    await ui.settled();
    await ui.audit();
    await ui.screenshot("enrollment-lobby");

    // one, with a label
    await ui.page.getByRole("button", { name: "Approve cam-1" }).click();
    const approve = ui.page.getByRole("dialog", { name: "Approve “cam-1”?" });
    await approve.getByRole("button", { name: "Add label" }).click();
    await approve.getByLabel("Label 1 key").fill("zone");
    await approve.getByLabel("Label 1 value").fill("z1");
    await ui.audit();
    await approve.getByRole("button", { name: "Approve device" }).click();
    await ui.page.getByText("“cam-1” approved: it is admitted").waitFor();
    await cam1Row.waitFor({ state: "detached" });
    expect(await service.call("GET", `/api/v1/devices/${cam1}`)).toMatchObject({ admission: "admitted", labels: { site: "lab", zone: "z1" } });

    // the device list says which one still waits
    await ui.goto("/devices");
    const rogueRow = ui.page.getByRole("table").getByRole("row").filter({ hasText: "rogue" });
    await rogueRow.getByRole("link", { name: "awaiting approval" }).waitFor();
    await ui.goto("/enrollment-requests");

    // every request asking for site=lab
    await ui.page.getByRole("button", { name: "Approve matching…" }).click();
    const matching = ui.page.getByRole("dialog", { name: "Approve every matching request" });
    await matching.getByLabel("Requests whose asked-for labels match").fill("site=lab");
    await matching.getByRole("button", { name: "Approve matching" }).click();
    await ui.page.getByText("1 device approved").waitFor();
    expect((await service.call<{ admission: string }>("GET", `/api/v1/devices/${cam2}`)).admission).toBe("admitted");

    // reject the rogue one
    await ui.page.getByRole("button", { name: "Reject rogue" }).click();
    const reject = ui.page.getByRole("dialog", { name: "Reject “rogue”?" });
    await reject.getByLabel("Reason").fill("not ours");
    await reject.getByRole("button", { name: "Reject device" }).click();
    await ui.page.getByText("No device awaits approval").waitFor();
    expect((await service.api("GET", `/api/v1/devices/${rogue}`)).status).toBe(404);

    await ui.page.getByLabel("Show requests").selectOption("decided");
    await waitForText(table.getByRole("row").filter({ hasText: "rogue" }).getByRole("cell").nth(4), "rejectednot ours");
    await ui.settled();
    await ui.audit();
    await ui.screenshot("enrollment-lobby-decided");
  });

  it("the factory's list is imported on the Lobby page; a listed device is admitted with its labels, an entry removed", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/enrollment-requests");
    const card = ui.page.getByRole("region", { name: "Pre-authorized devices" });
    await card.getByText("No device is pre-authorized").waitFor();
    await card.getByRole("button", { name: "Import list…" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Import pre-authorized devices" });
    // the file the factory sent, chosen as a person does
    const csv = 'deviceId,labels\nfactory-001,"site=plant-7,line=3"\nfactory-002,site=plant-7\n';
    await dialog.getByLabel("File").setInputFiles({ name: "factory.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await expect.poll(() => dialog.getByLabel("List").inputValue()).toBe(csv);
    await ui.audit();
    await dialog.getByRole("button", { name: "Import" }).click();
    await ui.page.getByText("Imported: 2 added, 0 replaced").waitFor();
    const table = ui.page.getByRole("table", { name: "Pre-authorized devices" });
    await table.getByRole("row").filter({ hasText: "factory-001" }).getByText("not yet").waitFor();

    // a listed device enrolls with an ordinary token: admitted at once, with the entry's labels
    const { token } = await service.call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { body: { name: "factory line" } });
    service.rememberSecret(token);
    const keys = await generateDeviceKeys("ES256");
    const enrolled = await service.api("POST", "/api/v1/agent/enroll", {
      key: null, body: { enrollmentToken: token, reportedDeviceId: "factory-001", name: "press-7-3", csr: await createCsr(keys, "factory-001") },
    });
    expect(enrolled.status, enrolled.text).toBe(201);
    expect(await service.call("GET", `/api/v1/devices/${enrolled.body.deviceId}`)).toMatchObject({ admission: "admitted", labels: { site: "plant-7", line: "3" } });
    await ui.page.reload();
    await table.getByRole("row").filter({ hasText: "factory-001" }).getByRole("link", { name: "the device" }).waitFor();

    // a bad list is named and changes nothing
    ui.expectStatus(400, "preauthorizedDevices.import");
    await card.getByRole("button", { name: "Import list…" }).click();
    await dialog.getByLabel("List").fill("deviceId,labels\nfactory-003,site\n");
    await dialog.getByRole("button", { name: "Import" }).click();
    await dialog.getByText(/labels/).first().waitFor();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    expect(await table.getByRole("row").filter({ hasText: "factory-003" }).count()).toBe(0);

    await table.getByRole("button", { name: "Remove factory-002" }).click();
    await ui.page.getByRole("dialog", { name: "Remove factory-002?" }).getByRole("button", { name: "Remove entry" }).click();
    await ui.page.getByText("factory-002 is no longer pre-authorized").waitFor();
    await table.getByRole("row").filter({ hasText: "factory-002" }).waitFor({ state: "detached" });
    expect((await service.call<{ items: Array<{ deviceId: string }> }>("GET", "/api/v1/preauthorized-devices")).items.map((e) => e.deviceId)).toEqual(["factory-001"]);
    await ui.settled();
    await ui.screenshot("enrollment-preauthorized");
  });
});
