// Certificates in Chromium, against the real service and simulated devices speaking the agent
// protocol. A CA generated and made the default in the browser signs the next enrollment (the
// device's certificate names it as issuer and verifies against its key); its certificate and
// revocation list download as files that parse; a CA inside 30 days of its end is flagged, then
// renewed and retired from the page; an invalid PEM upload shows the service's own message next
// to its field and creates nothing; device certificates that expire soon (the service issues
// 20-day ones here) are listed as the API lists them and link to their devices. An operator gets
// only the write controls of certificates:write, a viewer none.
import fs from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import type { Locator } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService, type SimulatedFleet } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText, UI_TIMEOUT_MS } from "../../support/browser.js";
import { makeCa, x509 } from "../../http/pki/support.js";

interface Ca { id: string; name: string; subject: string; certificate: string; isDefault: boolean; retiredAt: string | null; renewedFromId: string | null; notAfter: string }

const DEVICE_CERT_DAYS = 20;
let service: ConsoleService;
let fleet: SimulatedFleet;

const cas = async () => (await service.call<{ items: Ca[]; total: number }>("GET", "/api/v1/ca-certificates?limit=200")).items;
const caNamed = async (name: string) => {
  const found = (await cas()).find((ca) => ca.name === name);
  if (!found) throw new Error(`no CA named ${name}`);
  return found;
};
/** The row of a table whose first cell starts with `name` (names that are prefixes of others stay apart). */
const rowOf = (table: Locator, name: string) => table.getByRole("row").filter({ has: table.page().locator("td:first-child strong", { hasText: new RegExp(`^${name.replace(/[()]/g, "\\$&")}$`) }) });
/** The names of the buttons and links in `scope`, as a person hears them. */
const controlNames = (scope: Locator) => scope.locator("button, a").evaluateAll((els) => els.map((el) => (el as unknown as { getAttribute(n: string): string | null; textContent: string | null }).getAttribute("aria-label") ?? (el.textContent ?? "").trim()));

describe.skipIf(!peerAvailable("chromium"))("console certificates", () => {
  const suite = consoleSuite({ DEVICE_CERT_VALIDITY_DAYS: String(DEVICE_CERT_DAYS) });

  beforeAll(async () => {
    service = suite.service;
    fleet = await service.enrollFleet({ prefix: "press", devices: 2 });
  });

  it("generates a CA, makes it the default, and the next enrollment gets its certificate from it; the certificate and CRL download", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/certificates");
    const table = ui.page.getByRole("table", { name: "Certificate authorities" });
    const [first] = await cas();
    await waitForText(rowOf(table, first.name).getByRole("cell").nth(1), "default");

    await ui.page.getByRole("button", { name: "Generate CA" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Generate a certificate authority" });
    await dialog.getByLabel("Name", { exact: true }).fill("Line 3 root");
    await dialog.getByLabel("Common name (CN)").fill("Line 3 Root CA");
    expect(await dialog.getByLabel("Validity (days)").inputValue()).toBe("3650");
    await ui.audit();
    await ui.screenshot("certificates-generate");
    await dialog.getByRole("button", { name: "Generate CA" }).click();
    await dialog.waitFor({ state: "hidden" });
    const row = rowOf(table, "Line 3 root");
    await waitForText(row.getByRole("cell").nth(1), "in service");
    const generated = await caNamed("Line 3 root");
    expect(generated).toMatchObject({ subject: "CN=Line 3 Root CA", isDefault: false, retiredAt: null });
    expect(await row.getByRole("cell").nth(4).textContent()).toMatch(/^(9|10) years left$/);

    // Make it the default (certificates:admin), confirmed first.
    await row.getByRole("button", { name: "Make default: Line 3 root" }).click();
    const confirm = ui.page.getByRole("dialog", { name: "Make “Line 3 root” the default CA?" });
    await ui.audit();
    await confirm.getByRole("button", { name: "Make default" }).click();
    await confirm.waitFor({ state: "hidden" });
    await waitForText(row.getByRole("cell").nth(1), "default");
    await waitForText(rowOf(table, first.name).getByRole("cell").nth(1), "in service");
    expect((await cas()).filter((ca) => ca.isDefault).map((ca) => ca.id)).toEqual([generated.id]);
    await ui.audit();
    await ui.screenshot("certificates-default");

    // The next device to enroll (the agent protocol, through the simulator) gets its certificate from it.
    const next = await service.enrollFleet({ prefix: "line3", devices: 1 });
    const deviceId = next.devices[0].deviceId!;
    const [issued] = (await service.call<{ items: { issuer: string; caId: string; certificate: string }[] }>("GET", `/api/v1/devices/${deviceId}/certificates`)).items;
    expect(issued.issuer).toBe(generated.subject);
    expect(issued.caId).toBe(generated.id);
    const caCert = new x509.X509Certificate(generated.certificate);
    const deviceCert = new x509.X509Certificate(issued.certificate);
    expect(deviceCert.issuer).toBe(caCert.subject);
    expect(await deviceCert.verify({ publicKey: caCert.publicKey, signatureOnly: true })).toBe(true);
    // ... and the devices enrolled before keep the certificate of the CA they had.
    const [older] = (await service.call<{ items: { caId: string }[] }>("GET", `/api/v1/devices/${fleet.devices[0].deviceId}/certificates`)).items;
    expect(older.caId).toBe(first.id);

    // Downloads: the browser saves the API's PEM and the signed revocation list.
    const [pemDownload] = await Promise.all([ui.page.waitForEvent("download"), row.getByRole("link", { name: "Download the certificate of Line 3 root as PEM" }).click()]);
    expect(pemDownload.suggestedFilename()).toBe("Line-3-root.pem");
    const pem = fs.readFileSync((await pemDownload.path())!, "utf8");
    expect(pem).toBe(generated.certificate);
    expect(new x509.X509Certificate(pem).subject).toBe("CN=Line 3 Root CA");
    const [crlDownload] = await Promise.all([ui.page.waitForEvent("download"), row.getByRole("link", { name: "Download the CRL of Line 3 root" }).click()]);
    expect(crlDownload.suggestedFilename()).toBe("Line-3-root.crl");
    const crl = new x509.X509Crl(fs.readFileSync((await crlDownload.path())!));
    expect(crl.issuer).toBe(caCert.subject);
    expect(await crl.verify({ publicKey: caCert.publicKey })).toBe(true);
    expect(crl.entries).toEqual([]);
  });

  it("flags a CA inside 30 days of its end, renews it and retires the old one from the page", async () => {
    await service.call("POST", "/api/v1/ca-certificates/generate", { body: { name: "Short-lived", commonName: "Short-lived CA", validityDays: 20 } });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/certificates");
    const table = ui.page.getByRole("table", { name: "Certificate authorities" });
    const row = rowOf(table, "Short-lived");
    const expiry = row.getByRole("cell").nth(4);
    await waitForText(expiry, "19 days left");
    expect(await expiry.locator(".expiry").getAttribute("class")).toContain("expiry--warning");
    // The default is years from its end: no notice about it.
    expect(await ui.page.getByText("expires soon").count()).toBe(0);
    await ui.screenshot("certificates-expiring-ca");

    await row.getByRole("button", { name: "Renew Short-lived" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Renew “Short-lived”" });
    await dialog.getByLabel(/^Name of the renewed CA/).fill("Short-lived 2");
    await dialog.getByLabel(/^Validity \(days\)/).fill("400");
    await ui.audit();
    await dialog.getByRole("button", { name: "Renew CA" }).click();
    await dialog.waitFor({ state: "hidden" });
    const renewedRow = rowOf(table, "Short-lived 2");
    await waitForText(renewedRow.getByRole("cell").nth(4), "13 months left");
    expect(await renewedRow.locator(".expiry--warning").count()).toBe(0);
    const old = await caNamed("Short-lived");
    const renewed = await caNamed("Short-lived 2");
    expect(renewed).toMatchObject({ renewedFromId: old.id, subject: old.subject, isDefault: false });

    await row.getByRole("button", { name: "Retire Short-lived" }).click();
    const confirm = ui.page.getByRole("dialog", { name: "Retire “Short-lived”?" });
    await confirm.getByRole("button", { name: "Retire CA" }).click();
    await confirm.waitFor({ state: "hidden" });
    await waitForText(row.getByRole("cell").nth(1), "retired");
    expect((await caNamed("Short-lived")).retiredAt).not.toBeNull();
    // Its end concerns no one any more: the time left stays, the warning goes.
    await waitForText(expiry, "19 days left");
    expect(await row.locator(".expiry--warning").count()).toBe(0);
    // A retired CA is neither renewed nor made the default: those controls are gone.
    expect((await controlNames(row)).filter((n) => /^(Renew|Make|Retire)/.test(n))).toEqual([]);
    await ui.audit();
  });

  it("shows the service's refusal of an invalid PEM next to its field and creates nothing", async () => {
    const before = await cas();
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/certificates");
    ui.expectStatus(400, "caCertificates.upload");
    await ui.page.getByRole("button", { name: "Upload CA" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Upload a certificate authority" });
    const certificate = dialog.getByRole("textbox", { name: "Certificate (PEM)" });
    await dialog.getByLabel("Name", { exact: true }).fill("Broken");
    await certificate.fill("this is not a certificate");
    await dialog.getByRole("button", { name: "Upload CA" }).click();

    // The same words the API answers for the same body.
    const refused = await service.api("POST", "/api/v1/ca-certificates", { body: { name: "Broken", certificatePem: "this is not a certificate" } });
    expect(refused.status).toBe(400);
    const error = dialog.locator("#upload-certificate-error");
    await waitForText(error, refused.body.message);
    expect(await certificate.getAttribute("aria-invalid")).toBe("true");
    expect(await certificate.getAttribute("aria-describedby")).toBe("upload-certificate-error");
    await ui.audit();
    await ui.screenshot("certificates-upload-refused");

    // A real CA with someone else's key: the refusal is about the key, shown next to it.
    const ca = await makeCa({ subject: "CN=Corporate Issuing CA" });
    const stranger = await makeCa({ subject: "CN=Stranger" });
    await certificate.fill(ca.certificatePem);
    await dialog.getByRole("textbox", { name: /^Private key \(PEM\)/ }).fill(stranger.privateKeyPem);
    await dialog.getByRole("button", { name: "Upload CA" }).click();
    const keyRefusal = await service.api("POST", "/api/v1/ca-certificates", { body: { name: "Broken", certificatePem: ca.certificatePem, privateKeyPem: stranger.privateKeyPem } });
    expect(keyRefusal.status).toBe(400);
    await waitForText(dialog.locator("#upload-private-key-error"), keyRefusal.body.message);
    expect(await dialog.locator("#upload-certificate-error").count()).toBe(0);
    await ui.audit();

    // Nothing was created, and the dialog is still open with what was typed.
    expect((await cas()).map((c) => c.id)).toEqual(before.map((c) => c.id));
    expect(await dialog.getByLabel("Name", { exact: true }).inputValue()).toBe("Broken");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
  });

  it("lists the device certificates that expire soon as the API does, each linking to its device", async () => {
    const expiring = await service.call<{ items: { id: string; deviceId: string; deviceName: string }[]; total: number }>("GET", "/api/v1/certificates/expiring?days=30");
    expect(expiring.total).toBe(3); // every device's 20-day certificate: two enrolled first, one after the default changed
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/certificates");
    const table = ui.page.getByRole("table", { name: "Device certificates expiring within 30 days" });
    await expect.poll(async () => (await table.locator("tbody tr td:first-child").allTextContents()), { timeout: UI_TIMEOUT_MS })
      .toEqual(expiring.items.map((c) => c.deviceName));
    const stats = await service.call<{ valid: number; expiringSoon: number }>("GET", "/api/v1/certificates/stats");
    await waitForText(ui.page.getByRole("region", { name: "Device certificates", exact: true }).locator(".stat").nth(1), `${stats.expiringSoon}Expiring within 30 days`);
    for (const cell of await table.locator("tbody tr td:nth-child(2)").all()) expect(await cell.textContent()).toMatch(/^1[89] days left$/);

    // A narrower window, in the URL: none expires within 7 days.
    await ui.page.getByLabel("Expiring within").selectOption("7");
    await waitForPath(ui.page, (url) => url.searchParams.get("days") === "7", "the window in the URL");
    await ui.page.getByText("No device certificate expires within 7 days").waitFor();
    await ui.audit();
    await ui.page.getByLabel("Expiring within").selectOption("30");
    await waitForPath(ui.page, (url) => !url.searchParams.has("days"), "the default window");
    await ui.settled();
    await table.scrollIntoViewIfNeeded();
    await ui.screenshot("certificates-expiring-devices");

    const target = expiring.items[0];
    await table.getByRole("link", { name: target.deviceName }).click();
    await waitForPath(ui.page, (url) => url.pathname === `/devices/${target.deviceId}`, "the device's page");
    await ui.settled();
    await ui.page.getByRole("heading", { level: 1, name: target.deviceName }).waitFor();
    await ui.audit();
  });

  it("gives an operator only the writes of certificates:write, and a viewer no write control", async () => {
    const operator = await service.createUser("operator");
    const op = await suite.open({ user: operator });
    await op.goto("/certificates");
    const table = op.page.getByRole("table", { name: "Certificate authorities" });
    await rowOf(table, "Line 3 root").waitFor();
    const operatorControls = await controlNames(op.page.getByRole("main"));
    expect(operatorControls).toEqual(expect.arrayContaining(["Generate CA", "Upload CA", "Renew Line 3 root"]));
    expect(operatorControls.filter((n) => /^(Make|Retire|Delete)/.test(n))).toEqual([]);

    const viewer = await service.createUser("viewer");
    const ui = await suite.open({ user: viewer });
    await ui.goto("/certificates");
    const viewerTable = ui.page.getByRole("table", { name: "Certificate authorities" });
    await rowOf(viewerTable, "Line 3 root").waitFor();
    const controls = await controlNames(ui.page.getByRole("main"));
    // Reading stays: the downloads and the links to devices.
    expect(controls).toEqual(expect.arrayContaining(["Download the certificate of Line 3 root as PEM", "Download the CRL of Line 3 root"]));
    expect(controls.filter((n) => /^(Generate|Upload|Make|Renew|Retire|Delete)/.test(n))).toEqual([]);
    expect(await viewerTable.getByRole("columnheader", { name: "Actions" }).count()).toBe(0);
    await ui.screenshot("certificates-viewer");
  });
});
