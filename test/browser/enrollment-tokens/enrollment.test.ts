// Enrollment in Chromium, the way a newcomer meets it: the empty overview leads to the
// enrollment page, which first makes the organization's certificate authority; a token created there is shown once, with a copy button and the exact
// simulator command; after a reload only its prefix remains; the command, run as shown,
// enrolls devices that appear on the overview without a reload, with the token's labels;
// a revoked token enrolls nothing more.
import { spawn } from "node:child_process";
import { beforeAll, describe, expect, it } from "vitest";
import { peerAvailable } from "../../support/peers.js";
import { ADMIN, type ConsoleService } from "../../support/console-service.js";
import { consoleSuite, waitForPath, waitForText } from "../../support/browser.js";
import { ROOT } from "../../support/server-process.js";
import { createCsr, generateDeviceKeys } from "../../../agent/src/core/identity.js";

let service: ConsoleService;

/** Runs a shown `npm run simulate -- ...` command as a person would paste it; stopped when the test ends. */
function runCommand(command: string) {
  const [program, ...args] = command.split(/\s+/);
  expect(program).toBe("npm");
  const child = spawn(program, args, { cwd: ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  child.stdout.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  return {
    output,
    stop: async () => {
      // npm and the simulator it started: the process group this test created.
      if (child.exitCode === null) process.kill(-child.pid!, "SIGTERM");
      await exited;
    },
  };
}

describe.skipIf(!peerAvailable("chromium"))("console enrollment", () => {
  const suite = consoleSuite();

  beforeAll(async () => {
    service = suite.service;
  });


  it("creates a token shown once with a copy button and the simulator command; the command enrolls devices that appear on the overview", async () => {
    const ui = await suite.open({ user: ADMIN });
    await ui.context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: service.url });

    // An empty fleet: the overview says what to do next.
    await ui.goto("/");
    const status = ui.page.getByRole("region", { name: "Devices by status" });
    await status.getByText("No devices yet").waitFor();
    await status.getByRole("link", { name: "Enroll devices" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/enrollment-tokens", "the enrollment page");
    await ui.settled();
    await ui.audit();

    // A new organization has no CA to sign device certificates: the page says so and makes one.
    const notice = ui.page.getByRole("status").filter({ hasText: "Devices cannot enroll yet" });
    await notice.waitFor();
    await ui.audit();
    await ui.screenshot("enrollment-no-ca");
    await notice.getByRole("button", { name: "Create a certificate authority" }).click();
    await ui.page.getByText("Certificate authority “Default Root CA” created: devices can enroll").waitFor();
    await notice.waitFor({ state: "detached" });
    const [ca] = (await service.call("GET", "/api/v1/ca-certificates")).items;
    expect(ca).toMatchObject({ name: "Default Root CA", isDefault: true, hasPrivateKey: true, retiredAt: null });

    await ui.page.getByRole("button", { name: "Create token" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Create an enrollment token" });
    await dialog.getByLabel("Name").fill("Lab bench");
    await dialog.getByRole("button", { name: "Add label" }).click();
    await dialog.getByLabel("Label 1 key").fill("site");
    await dialog.getByLabel("Label 1 value").fill("lab");
    await dialog.getByLabel("Maximum uses").fill("12");
    await ui.audit();
    await dialog.getByRole("button", { name: "Create token" }).click();

    const card = ui.page.getByRole("region", { name: "Token “Lab bench” created" });
    await card.waitFor();
    await card.getByText("it is shown only this once").waitFor();
    const token = (await card.getByTestId("new-token").textContent())!.trim();
    expect(token).toMatch(/^fme_/);
    service.rememberSecret(token);
    const [listed] = (await service.call<{ items: { id: string; tokenPrefix: string; name: string; labels: Record<string, string>; maxUses: number }[] }>("GET", "/api/v1/enrollment-tokens")).items;
    expect(listed).toMatchObject({ name: "Lab bench", labels: { site: "lab" }, maxUses: 12 });
    expect(token.startsWith(listed.tokenPrefix)).toBe(true);

    await card.getByRole("button", { name: "Copy token" }).click();
    await card.getByRole("button", { name: "Copied" }).waitFor();
    expect(await ui.page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(token);

    const command = (await card.locator("pre").textContent())!.trim();
    expect(command).toBe(`npm run simulate -- --url ${service.url} --token ${token} --devices 10 --heartbeat 10s --telemetry 15s`);
    await card.getByRole("button", { name: "Copy command" }).click();
    expect(await ui.page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText())).toBe(command);
    await ui.audit();
    await ui.screenshot("enrollment-token-created");

    // Shown once: after a reload the page (and the API) has the prefix only.
    await ui.page.reload();
    await ui.settled();
    const row = ui.page.getByRole("table", { name: "Enrollment tokens" }).getByRole("row").filter({ hasText: "Lab bench" });
    await waitForText(row.getByRole("cell").nth(1), `${listed.tokenPrefix}…`);
    expect(await ui.page.content()).not.toContain(token);
    expect(JSON.stringify(await service.call("GET", "/api/v1/enrollment-tokens"))).not.toContain(token);
    await ui.audit();

    // The command, run as shown: ten devices enroll and show on the overview, live.
    await ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Overview" }).click();
    await waitForPath(ui.page, (url) => url.pathname === "/", "the overview");
    const simulator = runCommand(command);
    try {
      await waitForText(status.locator(".donut__center"), "10devices", 90_000).catch((err: Error) => {
        throw new Error(`${err.message}\nsimulator output:\n${simulator.output.join("")}`);
      });
      await ui.settled();
      await ui.audit();
      const devices = await service.call<{ total: number; items: { labels: Record<string, string> }[] }>("GET", "/api/v1/devices?limit=50");
      expect(devices.total).toBe(10);
      for (const d of devices.items) expect(d.labels).toEqual({ site: "lab" });
      await ui.page.getByRole("region", { name: "Labels" }).getByRole("link", { name: "lab", exact: true }).waitFor();
    } finally {
      await simulator.stop();
    }
  });

  it("revokes a token after a confirmation; it enrolls nothing more", async () => {
    const created = await service.call<{ id: string; token: string }>("POST", "/api/v1/enrollment-tokens", { body: { name: "Old batch" } });
    const ui = await suite.open({ user: ADMIN });
    await ui.goto("/enrollment-tokens");
    await ui.page.getByRole("button", { name: "Revoke Old batch" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Revoke “Old batch”?" });
    await dialog.getByText("Devices can no longer enroll with this token").waitFor();
    await ui.audit();
    await dialog.getByRole("button", { name: "Revoke token" }).click();
    const row = ui.page.getByRole("table", { name: "Enrollment tokens" }).getByRole("row").filter({ hasText: "Old batch" });
    await waitForText(row.getByRole("cell").nth(2), "revoked");
    expect(await ui.page.getByRole("button", { name: "Revoke Old batch" }).count()).toBe(0);

    const keys = await generateDeviceKeys("ES256");
    const res = await service.api("POST", "/api/v1/agent/enroll", {
      key: null,
      body: { enrollmentToken: created.token, reportedDeviceId: "late-device", csr: await createCsr(keys, "late-device") },
    });
    expect(res.status).toBe(401);
    await ui.audit();
  });
});
