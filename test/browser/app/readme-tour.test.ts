// The README's Quick start, as a newcomer follows it, in Chromium: `src/main.ts` started as
// `npm start` starts it on a fresh DATA_DIR, with no bootstrap password or key chosen
// (startConsoleService's asNewcomer), and nothing but what the README and the pages say:
// 1. the first-start block printed (e-mail, generated password, API key), kept in
//    DATA_DIR/first-start.txt with mode 0600;
// 2. the console's sign-in with that e-mail and password;
// 3. the empty overview sends to Enrollment, which makes the certificate authority with a
//    click; a token with labels, shown once with the `npm run simulate -- ...` command; that
//    command run (a few devices, a short heartbeat): the devices on the overview, and in
//    Devices filtered by a label selector;
// 4. one device's page: its facts, its telemetry once a snapshot came;
// 5. something to deploy without the internet: `npm run samples` serves the bundled sample
//    applications over Git smart HTTP on loopback, added in Registries with the URL it prints,
//    Sync now, the catalog, a staged (canary) deployment through the guided form, started,
//    and the rollout page following the simulated devices' installs to the end.
// At each step the page is checked against what the API (with the printed key) stores.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Locator, Page } from "playwright-core";
import { peerAvailable } from "../../support/peers.js";
import type { ConsoleService, FirstStart } from "../../support/console-service.js";
import { consoleSuite, submitSignInForm, waitForPath, waitForText, type ConsolePage } from "../../support/browser.js";
import { eventually, ROOT } from "../../support/server-process.js";

/** How long the simulated devices or a rollout may take on a loaded 2-core machine. */
const SLOW_MS = 120_000;
const TOUR_MS = 600_000;

let service: ConsoleService;
let first: FirstStart;
const children: { name: string; child: ChildProcess; output: string[]; exited: Promise<number | null> }[] = [];

/** A project command (`node --import tsx <script> ...args`, what its npm script runs), stopped after the file. */
function runScript(name: string, script: string, args: string[]) {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const output: string[] = [];
  child.stdout!.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const run = { name, child, output, exited };
  children.push(run);
  return run;
}

/** The table's device names, top to bottom. */
async function rowNames(page: Page): Promise<string[]> {
  const rows = page.getByRole("table", { name: "Devices" }).locator("tbody tr");
  return rows.evaluateAll((trs) => trs.map((tr) => (tr as unknown as { querySelector(s: string): { textContent: string } | null }).querySelector("a")?.textContent ?? ""));
}

/** A new browser page, signed in as the first-start admin (step 2 signs in through the form). */
async function signedIn(suite: ReturnType<typeof consoleSuite>): Promise<ConsolePage> {
  return suite.open({ user: { email: first.email, password: first.password } });
}

/** Clicks `link` as a person would, waits for the page it leads to (`pathname`) and audits it. */
async function follow(ui: ConsolePage, link: Locator, pathname: string): Promise<void> {
  await link.click();
  await waitForPath(ui.page, (url) => url.pathname === pathname, `the page at ${pathname}`);
  await ui.settled();
  await ui.audit();
}

/** The same from the sidebar. */
const nav = (ui: ConsolePage, link: string, pathname: string) =>
  follow(ui, ui.page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: link, exact: true }), pathname);

const TOKEN_LABELS = { site: "tour-lab", tier: "edge" };
const SELECTOR = "site=tour-lab,tier=edge";
const DEVICES = 4;
let simulatorCommand: string[];

describe.skipIf(!peerAvailable("chromium"))("the README's Quick start on a fresh data directory", () => {
  const suite = consoleSuite({}, { asNewcomer: true });

  beforeAll(() => {
    service = suite.service;
    first = service.firstStart!;
  });

  afterAll(async () => {
    for (const run of children) {
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill("SIGTERM");
      await run.exited;
    }
  }, 60_000);

  it("1. prints the first-start block and keeps it in DATA_DIR/first-start.txt, mode 0600", () => {
    expect(first.block[0]).toBe("First start: created organization 'default' and its Super Admin.");
    expect(first.block).toContain(`  web console:   ${service.url}/   (sign in with the e-mail and password below)`);
    expect(first.email).toBe("admin@example.com");
    expect(first.password.length).toBeGreaterThanOrEqual(12);
    expect(first.apiKey).toMatch(/^fm_/);
    // a pipe is no terminal: the block names the file and prints neither generated secret
    expect(first.block.join("\n")).not.toContain(first.password);
    expect(first.block.join("\n")).not.toContain(first.apiKey);
    expect(first.block).toContain(`  API docs:      ${service.url}/api/v1/docs`);
    const stat = fs.statSync(first.keptIn);
    expect(stat.mode & 0o777).toBe(0o600);
    expect(first.keptIn.endsWith("/first-start.txt")).toBe(true);
    const kept = fs.readFileSync(first.keptIn, "utf8");
    expect(kept).toContain(`  admin e-mail:  ${first.email}`);
    expect(kept).toContain(`  password:      ${first.password}`);
    expect(kept).toContain(`  API key:       ${first.apiKey}`);
  });

  it("2. signs in on the console with the printed e-mail and password", async () => {
    // the printed key works on the API, in the organization 'default'
    expect(service.defaultOrg.slug).toBe("default");
    const ui = await suite.open();
    await ui.page.goto("/");
    await waitForPath(ui.page, (url) => url.pathname === "/sign-in", "the sign-in page");
    await ui.page.getByRole("heading", { name: "Sign in to Fleet Manager" }).waitFor();
    await ui.audit();
    await submitSignInForm(ui.page, first.email, first.password);
    await waitForPath(ui.page, (url) => url.pathname === "/", "the overview");
    await ui.page.getByRole("heading", { level: 1, name: "Overview" }).waitFor();
    await ui.page.getByRole("button", { name: "Account: Administrator" }).waitFor();
    await ui.settled();
    await ui.audit();
    await ui.screenshot("readme-tour-1-overview-empty");
    const context = await ui.page.request.get("/api/v1/tenant/context");
    expect(await context.json()).toMatchObject({ email: first.email, organization: { slug: "default" } });
  });

  it("3. enrolls simulated devices from the console: CA, token, the shown command run; the devices on the overview and in Devices by selector", async () => {
    const ui = await signedIn(suite);
    await ui.goto("/");
    const status = ui.page.getByRole("region", { name: "Devices by status" });
    await status.getByText("No devices yet").waitFor();
    await follow(ui, status.getByRole("link", { name: "Enroll devices" }), "/enrollment-tokens");

    // No certificate authority: the page says so and makes one with a click.
    const notice = ui.page.getByRole("status").filter({ hasText: "Devices cannot enroll yet" });
    await notice.waitFor();
    expect((await service.call("GET", "/api/v1/ca-certificates")).total).toBe(0);
    await ui.screenshot("readme-tour-2-enrollment-no-ca");
    await notice.getByRole("button", { name: "Create a certificate authority" }).click();
    await ui.page.getByText(/^Certificate authority “.+” created: devices can enroll/).waitFor();
    await notice.waitFor({ state: "detached" });
    const cas = await service.call("GET", "/api/v1/ca-certificates");
    expect(cas.total).toBe(1);
    expect(cas.items[0]).toMatchObject({ isDefault: true, hasPrivateKey: true, retiredAt: null });

    // Create token: a name and the labels every device it enrolls gets.
    await ui.page.getByRole("button", { name: "Create token" }).first().click();
    const dialog = ui.page.getByRole("dialog", { name: "Create an enrollment token" });
    await dialog.getByLabel("Name").fill("Tour devices");
    for (const [i, [key, value]] of Object.entries(TOKEN_LABELS).entries()) {
      await dialog.getByRole("button", { name: "Add label" }).click();
      await dialog.getByLabel(`Label ${i + 1} key`).fill(key);
      await dialog.getByLabel(`Label ${i + 1} value`).fill(value);
    }
    await ui.audit();
    await dialog.getByRole("button", { name: "Create token" }).click();
    const card = ui.page.getByRole("region", { name: "Token “Tour devices” created" });
    await card.getByText("it is shown only this once").waitFor();
    const token = (await card.getByTestId("new-token").textContent())!.trim();
    service.rememberSecret(token);
    const [stored] = (await service.call("GET", "/api/v1/enrollment-tokens")).items;
    expect(stored).toMatchObject({ name: "Tour devices", labels: TOKEN_LABELS });
    expect(token.startsWith(stored.tokenPrefix)).toBe(true);
    const command = (await card.locator("pre").textContent())!.trim();
    expect(command).toBe(`npm run simulate -- --url ${service.url} --token ${token} --devices 10 --heartbeat 10s --telemetry 15s`);
    await ui.audit();
    await ui.screenshot("readme-tour-3-token-created");

    // The command as shown (npm run simulate is `node --import tsx scripts/simulate.ts`), with
    // fewer devices and a shorter heartbeat, no random health faults and immediate install steps
    // (the loaded test machine; the protocol is the same).
    const [npm, run, script, dashes, ...args] = command.split(/\s+/);
    expect([npm, run, script, dashes]).toEqual(["npm", "run", "simulate", "--"]);
    const set = (flag: string, value: string) => {
      const at = args.indexOf(flag);
      if (at >= 0) args[at + 1] = value;
      else args.push(flag, value);
    };
    set("--devices", String(DEVICES));
    set("--heartbeat", "2s");
    set("--telemetry", "5s");
    set("--failure-rate", "0");
    set("--prefix", "tour");
    args.push("--fast");
    simulatorCommand = args;
    await nav(ui, "Overview", "/");
    const simulator = runScript("simulator", "scripts/simulate.ts", args);
    await waitForText(status.locator(".donut__center"), `${DEVICES}devices`, SLOW_MS).catch((err: Error) => {
      throw new Error(`${err.message}\nsimulator output:\n${simulator.output.join("")}`);
    });
    const devices = await service.call<{ total: number; items: { name: string; labels: Record<string, string>; status: string }[] }>("GET", "/api/v1/devices?limit=50&sort=name&order=asc");
    expect(devices.total).toBe(DEVICES);
    for (const d of devices.items) expect(d.labels).toEqual(TOKEN_LABELS);
    await eventually(async () => (await service.call<{ total: number }>("GET", "/api/v1/devices?limit=1&status=online")).total === DEVICES, SLOW_MS, "every device online");
    await ui.page.getByRole("region", { name: "Labels" }).getByRole("link", { name: "tour-lab", exact: true }).waitFor();
    await ui.settled();
    await ui.audit();
    await ui.screenshot("readme-tour-4-overview-devices");

    // Devices, filtered by a label selector: the same rows as the API's.
    await nav(ui, "Devices", "/devices");
    await ui.page.getByLabel("Label selector").fill(SELECTOR);
    await waitForPath(ui.page, (url) => url.searchParams.get("labels") === SELECTOR, `labels=${SELECTOR} in the URL`);
    await waitForText(ui.page.getByRole("navigation", { name: "Device pages" }).locator("span").first(), `1–${DEVICES} of ${DEVICES}`);
    const filtered = await service.call<{ items: { name: string }[] }>("GET", `/api/v1/devices?limit=50&sort=name&order=asc&labels=${encodeURIComponent(SELECTOR)}`);
    await eventually(async () => JSON.stringify(await rowNames(ui.page)) === JSON.stringify(filtered.items.map((d) => d.name)), 20_000, "the API's rows");
    await ui.settled();
    await ui.audit();
    await ui.screenshot("readme-tour-5-devices-filtered");
  }, TOUR_MS);

  it("4. looks into one device: its facts and its telemetry once a snapshot came", async () => {
    expect(simulatorCommand, "step 3 enrolled the devices").toBeDefined();
    const [device] = (await service.call<{ items: { id: string; name: string }[] }>("GET", "/api/v1/devices?limit=1&sort=name&order=asc")).items;
    await eventually(async () => (await service.api("GET", `/api/v1/devices/${device.id}/telemetry/latest`)).status === 200, SLOW_MS, "a telemetry snapshot");
    const api = await service.call("GET", `/api/v1/devices/${device.id}`);

    const ui = await signedIn(suite);
    await ui.goto("/devices");
    await follow(ui, ui.page.getByRole("table", { name: "Devices" }).getByRole("link", { name: device.name, exact: true }), `/devices/${device.id}`);
    await ui.page.getByRole("heading", { level: 1, name: device.name }).waitFor();
    // the Facts card, term by term, is what the API reports
    const facts = Object.fromEntries(await ui.page.getByRole("region", { name: "Facts" }).locator("dt").evaluateAll((dts) =>
      dts.map((dt) => [(dt as unknown as { textContent: string }).textContent.trim(), ((dt as unknown as { nextElementSibling: { textContent: string } }).nextElementSibling.textContent ?? "").trim()])));
    expect(facts).toMatchObject({
      "Reported device id": api.reportedDeviceId, "Operating system": api.os, "Architecture": api.arch,
      "Agent version": api.agentVersion, "Hardware model": api.hardwareModel, "Device id": api.id,
    });
    await waitForText(ui.page.getByRole("region", { name: "Labels" }).locator(".chips"), "site=tour-labtier=edge");

    // The telemetry tab (the default): the latest snapshot's gauges are the API's latest.
    await ui.page.getByRole("tab", { name: "Telemetry", selected: true }).waitFor();
    const percent = new Intl.NumberFormat("en-US", { style: "percent", maximumFractionDigits: 0 });
    const cpu = ui.page.getByRole("meter", { name: "CPU" });
    await eventually(async () => {
      const shown = await cpu.getAttribute("aria-valuetext", { timeout: 1000 });
      const latest = await service.call<{ cpuUsagePercent: number }>("GET", `/api/v1/devices/${device.id}/telemetry/latest`);
      if (shown === percent.format(latest.cpuUsagePercent / 100)) return true;
      // a newer snapshot came after the page read it: read it again
      await ui.page.reload();
      await ui.settled();
      return false;
    }, SLOW_MS, "the CPU gauge showing the API's latest snapshot");
    await ui.audit();
    await ui.screenshot("readme-tour-6-device");
  }, TOUR_MS);

  it("5. ships an application offline: npm run samples, the Git registry added and synced, a staged deployment through the form, its rollout live to the end", async () => {
    expect(simulatorCommand, "step 3 enrolled the devices").toBeDefined();
    // `npm run samples` (any free port here: a test must not take 3999 from a person's run)
    const samples = runScript("samples", "scripts/samples.ts", ["--port", "0"]);
    const repoUrl = await eventually(async () => /as a Git repository at (http:\/\/127\.0\.0\.1:\d+\/demo-apps\.git)/.exec(samples.output.join(""))?.[1], SLOW_MS, "the samples' URL")
      .catch((err: Error) => {
        throw new Error(`${err.message}\nsamples output:\n${samples.output.join("")}`);
      });
    // the next line of its output may arrive a moment after the first
    await eventually(async () => samples.output.join("").includes(`add it as a Git registry: URL ${repoUrl}, branch main, path /apps`), SLOW_MS, "the samples' registry instructions");

    const ui = await signedIn(suite);
    await ui.goto("/");
    await nav(ui, "Registries", "/registries");
    const gitCard = ui.page.getByRole("region", { name: "Git registries" });
    await gitCard.getByText("No Git registries").waitFor();
    await gitCard.getByRole("button", { name: "Add Git registry" }).click();
    const dialog = ui.page.getByRole("dialog", { name: "Add a Git registry" });
    await dialog.getByLabel("Name").fill("sample apps");
    await dialog.getByLabel("URL").fill(repoUrl);
    expect(await dialog.getByLabel("Branch").inputValue()).toBe("main");
    await dialog.getByLabel("Path").fill("/apps");
    await ui.audit();
    await dialog.getByRole("button", { name: "Add Git registry" }).click();
    await ui.page.getByText("Git registry “sample apps” added").waitFor();
    const [registry] = (await service.call("GET", "/api/v1/registries/git")).items;
    expect(registry).toMatchObject({ name: "sample apps", url: repoUrl, branch: "main", path: "/apps", enabled: true });

    // Sync now: the result, as the API answers it.
    const row = gitCard.getByRole("row").filter({ hasText: "sample apps" });
    await row.getByRole("button", { name: "Sync now sample apps" }).click();
    const result = ui.page.getByRole("dialog", { name: "Sync of “sample apps”" });
    await result.getByText("The sync completed.").waitFor({ timeout: SLOW_MS });
    const facts = await result.getByRole("definition").allTextContents();
    // found, imported, updated, rejected, errors (then the duration and the commit)
    expect(facts.slice(0, 5)).toEqual(["5", "5", "0", "0", "0"]);
    await ui.audit();
    await ui.screenshot("readme-tour-7-sync-result");
    await result.getByRole("button", { name: "Close" }).click();
    const synced = await service.call("GET", `/api/v1/registries/git/${registry.id}`);
    expect(facts[6]).toBe(synced.lastSyncCommit.slice(0, 12));

    // The catalog: the four sample applications.
    await nav(ui, "Applications", "/applications");
    const apps = await service.call<{ total: number; items: { id: string; name: string }[] }>("GET", "/api/v1/applications?limit=50");
    expect(apps.items.map((a) => a.name).sort()).toEqual(["MQTT Broker", "PLC Connector", "Telemetry Forwarder", "Vision Gateway"]);
    const catalog = ui.page.getByRole("table", { name: "Applications" });
    await expect.poll(() => catalog.getByRole("row").count()).toBe(1 + apps.total);
    const forwarder = catalog.getByRole("row").filter({ hasText: "Telemetry Forwarder" });
    expect(await forwarder.getByRole("cell").nth(2).textContent()).toBe("0.9.0");
    await ui.screenshot("readme-tour-8-applications");

    // Deployments -> New deployment: the guided form, staged with a canary.
    await nav(ui, "Deployments", "/deployments");
    await follow(ui, ui.page.getByRole("link", { name: "New deployment" }), "/deployments/new");
    const page = ui.page;
    await page.getByLabel("Name", { exact: true }).fill("forwarder tour");
    await page.getByLabel("Application", { exact: true }).selectOption({ label: "Telemetry Forwarder (0.9.0)" });
    await page.getByRole("radio", { name: /compose-default/ }).check();
    await page.getByRole("button", { name: "Next: Target" }).click();
    await page.getByLabel("Devices whose labels match").fill(SELECTOR);
    await waitForText(page.locator(".selector-result"), (t) => t.includes(`${DEVICES} devices match now`));
    const fit = await service.call<{ matched: number; eligible: number; skipped: number }>("POST", "/api/v1/groups/eligibility", {
      // the sample manifests' profile runs on arm64 and amd64 (scripts/sample-apps.ts)
      body: { labelSelector: TOKEN_LABELS, architectures: ["arm64", "amd64"] },
    });
    expect(fit.matched).toBe(DEVICES);
    await ui.audit();
    await page.getByRole("button", { name: "Next: Parameters" }).click();
    await page.getByRole("button", { name: "Next: Strategy" }).click();
    await page.getByRole("button", { name: "Staged" }).click();
    expect(await page.getByLabel("Canary", { exact: true }).inputValue()).toBe("1");
    const preview = page.getByRole("list", { name: "Planned batches" });
    await waitForText(preview, (t) => t.includes("Batch 1"));
    const plural = (n: number) => `${n} device${n === 1 ? "" : "s"}`;
    expect(await preview.getByRole("listitem").allTextContents()).toEqual(["Canary: 1 device", `Batch 1: ${plural(fit.eligible - 1)}`]);
    await ui.audit();
    await ui.screenshot("readme-tour-9-deployment-strategy");
    await page.getByRole("button", { name: "Next: Review" }).click();
    const review = page.getByRole("region", { name: "Review" });
    await waitForText(review, (t) => t.includes("forwarder tour") && t.includes(`site=tour-lab, tier=edge · ${fit.matched} devices match: ${fit.eligible} can run this profile`));
    await ui.audit();
    await page.getByRole("button", { name: "Create deployment" }).click();
    const landed = await waitForPath(page, (url) => /^\/deployments\/[0-9a-f-]{36}$/.test(url.pathname), "the new deployment's page");
    const id = landed.pathname.split("/").pop()!;
    await ui.settled();
    await ui.audit();
    expect(await service.call("GET", `/api/v1/deployments/${id}`)).toMatchObject({
      name: "forwarder tour", version: "0.9.0", profileId: "compose-default", target: { labelSelector: TOKEN_LABELS },
      strategy: { type: "staged", canary: { count: 1 }, autoAdvance: false }, status: "draft",
    });

    // Start: the canary first; the simulated devices install it; the page follows live.
    const controls = page.getByRole("group", { name: "Rollout controls" });
    const confirm = async (label: string) => {
      await controls.getByRole("button", { name: label, exact: true }).click();
      const confirmation = page.getByRole("dialog", { name: `${label}?` });
      await confirmation.waitFor();
      await ui.audit();
      await confirmation.getByRole("button", { name: label, exact: true }).click();
      await confirmation.waitFor({ state: "hidden" });
    };
    const state = page.getByTestId("rollout-state");
    await confirm("Start");
    await waitForText(state, "Awaiting approval", SLOW_MS);
    let rollout = await service.call("GET", `/api/v1/deployments/${id}/rollout`);
    expect(rollout.state).toBe("awaiting_approval");
    expect(rollout.batches.map((b: { size: number }) => b.size)).toEqual([1, fit.eligible - 1]);
    expect(rollout.batches[0].counts.running).toBe(1);
    await waitForText(page.locator('[data-batch="0"] [data-count="running"] strong'), "1");
    await ui.screenshot("readme-tour-10-rollout-canary");

    await confirm("Promote canary");
    await waitForText(state, "Completed", SLOW_MS);
    rollout = await service.call("GET", `/api/v1/deployments/${id}/rollout`);
    expect(rollout.state).toBe("completed");
    expect(rollout.batches.map((b: { counts: { running: number } }) => b.counts.running)).toEqual([1, fit.eligible - 1]);
    await waitForText(page.locator('[data-batch="1"] [data-count="running"] strong'), String(fit.eligible - 1));
    const installed = await service.call<{ items: { state: string }[] }>("GET", `/api/v1/deployments/${id}/devices?limit=100&state=running`);
    expect(installed.items).toHaveLength(fit.eligible);
    await ui.settled();
    await ui.audit();
    await ui.screenshot("readme-tour-11-rollout-completed");
  }, TOUR_MS);

  it("kept the log quiet: no line per HTTP request at the default level", () => {
    // (README: a 5xx or a request slower than LOG_SLOW_REQUEST_MS, default 1000, is logged at warn:
    // on a loaded test machine some are)
    const requests = service.process.output.filter((line) => line.includes('"msg":"request"')).map((line) => JSON.parse(line) as { level: number; status: number; ms: number });
    expect(requests.filter((r) => !(r.level === 40 && (r.status >= 500 || r.ms >= 1000)))).toEqual([]);
    // the block is still there to find, in the file
    expect(fs.readFileSync(first.keptIn, "utf8")).toContain(first.apiKey);
  });
});
