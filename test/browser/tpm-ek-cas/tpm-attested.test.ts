// TPM-held keys in the console (issue 50, docs/admission.md "TPM-held keys"): an administrator
// trusts a TPM manufacturer CA on the Enrollment page (pasting its PEM), a machine enrolls with
// `fleet-agent enroll --tpm` against Debian's swtpm whose EK that CA signed, and the device list,
// the device's page and (for a lobby token) the Lobby show it "TPM attested"; the CA can be
// removed again.
import { execFile } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { peersAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite } from "../../support/browser.js";
import { AGENT_BIN } from "../../support/agent-lab.js";
import { makeTestCa, startSoftwareTpm, type SoftwareTpm, type TestCa } from "../../support/swtpm.js";

const runFile = promisify(execFile);
const WORK = "/dev/shm/fleet-tests";

describe.skipIf(!peersAvailable("chromium", "swtpm"))("console: TPM manufacturer CAs and attested devices", () => {
  const suite = consoleSuite();
  let service: ConsoleService;
  let vendor: TestCa;
  let swtpm: SoftwareTpm;
  let stateDir: string;

  beforeAll(async () => {
    service = suite.service;
    vendor = await makeTestCa("Console TPM Vendor CA");
    swtpm = await startSoftwareTpm(vendor);
    await service.call("POST", "/api/v1/ca-certificates/generate", { body: { name: "TPM CA", commonName: "TPM CA" } });
    fs.mkdirSync(WORK, { recursive: true });
    stateDir = fs.mkdtempSync(path.join(WORK, "tpm-console-"));
  }, 120_000);
  afterAll(async () => {
    await swtpm?.stop();
    if (stateDir) fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it("trust a CA on the Enrollment page, enroll with --tpm, see the device TPM attested; remove the CA", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/enrollment-tokens");
    const card = ui.page.getByRole("region", { name: "Trusted TPM manufacturer CAs" });
    await card.getByText("No TPM manufacturer CA trusted").waitFor();
    await card.getByRole("button", { name: "Trust a CA" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Trust a TPM manufacturer CA" });
    await dialog.getByLabel("Name").fill("Acme TPMs");
    await dialog.getByLabel("CA certificate (PEM)").fill(vendor.certificatePem);
    await dialog.getByRole("button", { name: "Trust CA" }).click();
    const row = card.getByRole("table", { name: "Trusted TPM manufacturer CAs" }).getByRole("row").filter({ hasText: "Acme TPMs" });
    await row.getByText(`CN=${vendor.name}`).waitFor();
    await ui.settled();
    await ui.screenshot("tpm-ek-cas-trusted");

    const token = await service.call("POST", "/api/v1/enrollment-tokens", { body: { name: "tpm line" } });
    service.rememberSecret(token.token);
    const deviceId = `tpm-${crypto.randomBytes(3).toString("hex")}`;
    await runFile(process.execPath, [AGENT_BIN, "enroll", "--url", service.url, "--token", token.token, "--tpm", "--name", "tpm-gateway", "--device-id", deviceId, "--state-dir", stateDir], {
      env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti }, timeout: 120_000,
    });

    await ui.goto("/devices");
    const deviceRow = ui.page.getByRole("row").filter({ hasText: "tpm-gateway" });
    await deviceRow.getByText("TPM attested").waitFor();
    await deviceRow.getByRole("link", { name: "tpm-gateway" }).click();
    await ui.page.getByRole("heading", { name: /tpm-gateway/ }).getByText("TPM attested").waitFor();
    await ui.settled();
    await ui.audit();
    await ui.screenshot("tpm-attested-device");

    // a lobby token: the request shows the TPM the service verified, with its manufacturer
    const lobby = await service.call("POST", "/api/v1/enrollment-tokens", { body: { name: "tpm lobby", mode: "approval" } });
    service.rememberSecret(lobby.token);
    const pendingDir = fs.mkdtempSync(path.join(WORK, "tpm-console-"));
    try {
      await runFile(process.execPath, [AGENT_BIN, "enroll", "--url", service.url, "--token", lobby.token, "--tpm", "--name", "tpm-waiting", "--device-id", `${deviceId}-2`, "--state-dir", pendingDir], {
        env: { ...process.env, TPM2TOOLS_TCTI: swtpm.tcti }, timeout: 120_000,
      });
    } finally {
      fs.rmSync(pendingDir, { recursive: true, force: true });
    }
    await ui.goto("/enrollment-requests");
    await ui.page.getByRole("table", { name: "Enrollment requests" }).getByRole("row").filter({ hasText: "tpm-waiting" }).getByText("TPM attested (id:00001014)").waitFor();

    await ui.goto("/enrollment-tokens");
    await row.getByRole("button", { name: "Remove Acme TPMs" }).click();
    await ui.page.getByRole("dialog", { name: "Stop trusting “Acme TPMs”?" }).getByRole("button", { name: "Stop trusting" }).click();
    await card.getByText("No TPM manufacturer CA trusted").waitFor();
    const list = await service.call("GET", "/api/v1/tpm-ek-cas");
    expect(list.items).toEqual([]);
  }, 240_000);
});
