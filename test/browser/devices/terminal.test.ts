// A device's terminal in real Chromium, against the service (its build, on this phase's
// database) and the real fleet agent on loopback (test/support/remote-agent.ts: enroll + run,
// shells as the unprivileged `nobody`). As an owner: Devices → the device → Terminal, a shell
// opened, a typed command's output on the page, the window made smaller and the device's pty
// told the new size (a WINCH trap on the device prints it), the session closed; the recording
// played back on the Sessions tab; a file downloaded by its path, its SHA-256 checked. A viewer sees no terminal control, only why. A stream's
// WebSocket opened from another Origin is refused, from node (403) and from a page of another
// site in Chromium. Last, revoking the device's certificate ends an open terminal and the page
// says so.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, wsUrl } from "../../http/remote-sessions/support.js";
import { consoleSuite, waitForText } from "../../support/browser.js";
import { peerAvailable } from "../../support/peers.js";
import { currentCertificateId, remoteOperator, startRemoteAgent, turnOnRemoteAccess, type RemoteAgent, type RemoteOperator } from "../../support/remote-agent.js";
import { eventually } from "../../support/server-process.js";

const DEVICE = "term-dev";

describe.skipIf(!peerAvailable("chromium"))("a device's terminal in the console", () => {
  // heartbeats every 5 s: the agent holds its long-poll from the heartbeat after remote access is turned on
  const suite = consoleSuite({ HEARTBEAT_INTERVAL_SECONDS: "5" });
  let agent: RemoteAgent | undefined;
  let owner: RemoteOperator;

  beforeAll(async () => {
    [agent, owner] = await Promise.all([startRemoteAgent(suite.service, DEVICE), remoteOperator(suite.service)]);
    await turnOnRemoteAccess(suite.service, owner, { recordShell: true });
  }, 120_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.remove();
  });

  it("an owner opens a shell from Devices → the device → Terminal, reads a typed command's output, resizes the window (the device sees it), closes it; the recording plays back", async () => {
    const service = suite.service;
    const deviceId = agent!.deviceId;
    const ui = await suite.open({ user: owner });
    await ui.goto("/devices");
    await ui.page.getByRole("table", { name: "Devices" }).getByRole("link", { name: DEVICE }).click();
    await ui.page.getByRole("tab", { name: "Terminal" }).click();
    await ui.page.getByRole("tab", { name: "Terminal", selected: true }).waitFor();
    const card = ui.page.getByRole("region", { name: "Terminal", exact: true });
    await card.getByRole("button", { name: "Open terminal" }).click();
    await waitForText(card.getByRole("status"), `Connected to ${DEVICE}.`);
    await ui.settled();
    await ui.audit();

    const screen = ui.page.getByRole("region", { name: `Terminal of ${DEVICE}` });
    await screen.click();
    await ui.page.keyboard.type("echo typed-$((6*7)) as $(id -un); stty size\n");
    const first = await waitForText(screen, /typed-42 as nobody\s*\d+ \d+/);
    const cols1 = Number(/typed-42 as nobody\s*\d+ (\d+)/.exec(first)![1]);
    await ui.screenshot("device-terminal");

    // a program on the device that prints the size it is told on SIGWINCH
    await ui.page.keyboard.type(`sh -c 'trap "echo SIZE-\\$(stty size)-END; exit 0" WINCH; echo WAIT""ING; while :; do sleep 1; done'\n`);
    await waitForText(screen, /WAITING/);
    await ui.page.setViewportSize({ width: 900, height: 640 });
    const told = await waitForText(screen, /SIZE-\d+ \d+-END/);
    const [rows2, cols2] = /SIZE-(\d+) (\d+)-END/.exec(told)!.slice(1).map(Number);
    expect(cols2).toBeLessThan(cols1);
    expect(rows2).toBeGreaterThan(0);
    await ui.screenshot("device-terminal-resized");

    await card.getByRole("button", { name: "Close session" }).click();
    await waitForText(card.getByRole("status"), /closed/i);
    const asOwner = { token: owner.token, key: null };
    const row = await eventually(async () => {
      const { items } = await service.call("GET", `/api/v1/remote-sessions?deviceId=${deviceId}&kind=shell`, asOwner);
      return items[0]?.state === "ended" && items[0];
    }, 20_000, "the shell ended");
    expect(row).toMatchObject({ kind: "shell", endReason: "closed-by-user", recorded: true, userId: owner.id });
    expect(row.bytesFromDevice).toBeGreaterThan(0);

    await ui.page.getByRole("tab", { name: "Sessions" }).click();
    const table = ui.page.getByRole("table", { name: "Remote sessions" });
    await waitForText(table, /shell/);
    await ui.settled();
    await ui.audit();
    await table.getByRole("button", { name: /Play the recording/ }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Recording of a shell session" });
    await dialog.getByRole("button", { name: "Show all" }).click();
    await waitForText(dialog.getByRole("status"), "Played to the end.");
    await waitForText(dialog.getByRole("region", { name: "Recording" }), /typed-42 as nobody/);
    await ui.screenshot("device-terminal-recording");
    await ui.audit();
  });

  it("Download a file: a file on the device saved by its path, its size and SHA-256 checked", async () => {
    const file = `/tmp/fleet-terminal-${randomBytes(4).toString("hex")}.bin`;
    const data = randomBytes(700_000);
    fs.writeFileSync(file, data, { mode: 0o644 });
    try {
      const ui = await suite.open({ user: owner });
      await ui.goto(`/devices/${agent!.deviceId}?tab=terminal`);
      const form = ui.page.getByRole("form", { name: "Download a file from the device" });
      await form.getByRole("textbox", { name: "Path on the device" }).fill(file);
      const [download] = await Promise.all([ui.page.waitForEvent("download"), form.getByRole("button", { name: "Download" }).click()]);
      expect(download.suggestedFilename()).toBe(path.basename(file));
      expect(createHash("sha256").update(fs.readFileSync(await download.path())).digest("hex")).toBe(createHash("sha256").update(data).digest("hex"));
    } finally {
      fs.rmSync(file, { force: true });
    }
  });

  it("a viewer sees no terminal control, only why", async () => {
    const viewer = await suite.service.createUser("viewer");
    const ui = await suite.open({ user: viewer });
    await ui.goto(`/devices/${agent!.deviceId}?tab=terminal`);
    await waitForText(ui.page.getByRole("note", { name: "Permission" }), /does not include remote:shell/);
    expect(await ui.page.getByRole("button", { name: /Open terminal|Open a new session/ }).count()).toBe(0);
    expect(await ui.page.getByRole("region", { name: `Terminal of ${DEVICE}` }).count()).toBe(0);
    await ui.screenshot("device-terminal-viewer");
  });

  it("a stream's WebSocket from another Origin is refused: 403 from node, and a page of another site in Chromium cannot open it", async () => {
    const service = suite.service;
    const asOwner = { token: owner.token, key: null };
    const open = () => service.call("POST", "/api/v1/remote-sessions", { ...asOwner, body: { deviceId: agent!.deviceId, kind: "shell" } });
    const fromNode = await open();
    await expect(connect(wsUrl(service.url, fromNode.streamUrl), { origin: "http://127.0.0.2:8080" })).rejects.toMatchObject({ status: 403 });

    const fromPage = await open();
    const other = http.createServer((_req, res) => res.end("<!doctype html><title>another site</title>"));
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", () => resolve()));
    const context = await suite.browser.newContext();
    try {
      const page = await context.newPage();
      await page.goto(`http://127.0.0.1:${(other.address() as net.AddressInfo).port}/`);
      const outcome = await page.evaluate((url) => new Promise<string>((resolve) => {
        const ws = new WebSocket(url);
        ws.onopen = () => resolve("open");
        ws.onclose = (e) => resolve(`closed ${e.code}`);
      }), wsUrl(service.url, fromPage.streamUrl));
      expect(outcome).toBe("closed 1006");
    } finally {
      await context.close();
      other.close();
      for (const opened of [fromNode, fromPage]) await service.call("POST", `/api/v1/remote-sessions/${opened.session.id}/close`, asOwner);
    }
  });

  // last: the device cannot come back after it
  it("revoking the device's certificate ends an open terminal at once, and the page says why", async () => {
    const ui = await suite.open({ user: owner });
    await ui.goto(`/devices/${agent!.deviceId}?tab=terminal`);
    const card = ui.page.getByRole("region", { name: "Terminal", exact: true });
    await card.getByRole("button", { name: /Open terminal/ }).click();
    await waitForText(card.getByRole("status"), `Connected to ${DEVICE}.`);
    const certificateId = await currentCertificateId(suite.service, agent!.deviceId);
    await suite.service.call("POST", `/api/v1/devices/${agent!.deviceId}/certificates/${certificateId}/revoke`, { body: { reason: "Key compromise" } });
    await waitForText(card.getByRole("status"), "The device's certificate was revoked.");
    await ui.screenshot("device-terminal-revoked");
  });
});
