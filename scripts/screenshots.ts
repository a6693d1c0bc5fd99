// `npm run screenshots`: the console images the README shows (docs/images/overview.png,
// devices.png, device.png, device-telemetry.png), taken in Chromium (light theme, 1280x800) from a real service
// with 30 simulated devices in it: three sites with labels, two hours of telemetry history
// (one device with a gap in it), live heartbeats and telemetry, two failing devices, two
// that went offline and two never heard from.
//
// The service runs in this process on a throwaway embedded database (removed at the end),
// on a free loopback port; everything is set up through the public API and the agent
// protocol, as an operator and their devices would. Needs Chromium (CHROMIUM_PATH, or
// Debian's chromium-headless-shell or chromium).
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/lib/logger.js";
import { buildConsole, consoleBuildState } from "../src/lib/console-build.js";
import { startService, type RunningService } from "../src/server.js";
import { FleetSimulator } from "../src/simulator/engine.js";
import type { VirtualDevice } from "../src/simulator/virtual-device.js";
import { launchBrowser } from "../test/support/chromium.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const OUT = path.join(ROOT, "docs", "images");
const VIEWPORT = { width: 1280, height: 800 };
const HISTORY_MS = 2 * 3_600_000;
const say = (line: string) => process.stdout.write(`${line}\n`);

/** The fleet: [token name, labels, devices, what they do]. */
const FLEETS = [
  { name: "Berlin line 1", prefix: "berlin", labels: { site: "berlin", line: "1", tier: "edge" }, devices: 12, live: true },
  { name: "Munich", prefix: "munich", labels: { site: "munich", line: "2", tier: "edge" }, devices: 8, live: true },
  { name: "Paris gateways", prefix: "paris", labels: { site: "paris", tier: "gateway" }, devices: 6, live: true },
  { name: "Warehouse spares", prefix: "spare", labels: { site: "warehouse" }, devices: 4, live: false },
] as const;

/** A device that keeps failing (the simulator's devices otherwise recover at random). */
function keepFailing(device: VirtualDevice) {
  device.failing = true;
  device.updateHealth = () => undefined;
}

/** Waits until nothing on the page is loading. */
async function settled(page: Page) {
  await page.waitForLoadState("load");
  await page.locator('.spinner, .skeleton, [aria-busy="true"]').first().waitFor({ state: "detached", timeout: 30_000 });
}

async function main() {
  const state = consoleBuildState();
  if (state === "missing" || state === "stale") {
    say(`building the web console (its build is ${state})`);
    await buildConsole();
  }
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-screenshots-"));
  const password = crypto.randomBytes(12).toString("base64url");
  const adminKey = `fm_${crypto.randomBytes(30).toString("base64url").slice(0, 40)}`;
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: "",
    DATA_DIR: dataDir,
    HOST: "127.0.0.1",
    PORT: "0",
    BOOTSTRAP_ADMIN_EMAIL: "admin@example.com",
    BOOTSTRAP_ADMIN_PASSWORD: password,
    BOOTSTRAP_API_KEY: adminKey,
    HEARTBEAT_INTERVAL_SECONDS: "5",
    OFFLINE_CHECK_INTERVAL_SECONDS: "2",
  });
  const simulators: FleetSimulator[] = [];
  let service: RunningService | null = null;
  try {
    say(`starting the service on a throwaway embedded database (${dataDir})`);
    service = await startService(config, createLogger("warn", fs.createWriteStream(path.join(dataDir, "service.log"))));
    const base = service.url.replace("localhost", "127.0.0.1");
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(base + p, {
        method,
        headers: { "x-api-key": adminKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
      return text ? JSON.parse(text) : undefined;
    };

    await call("POST", "/api/v1/ca-certificates/generate", { name: "Fleet Root CA", commonName: "Fleet Root CA", validityDays: 3650 });
    const now = Date.now();
    for (const fleet of FLEETS) {
      const token = await call("POST", "/api/v1/enrollment-tokens", { name: fleet.name, labels: fleet.labels, maxUses: fleet.devices });
      const simulator = new FleetSimulator({
        url: base, enrollmentToken: token.token, devices: fleet.devices, heartbeatMs: 4_000, telemetryMs: 15_000,
        failureRate: 0, idPrefix: fleet.prefix, enrollConcurrency: 4,
      });
      simulators.push(simulator);
      await simulator.enrollAll();
      if (simulator.stats().enrolled !== fleet.devices) throw new Error(`${fleet.name}: ${simulator.stats().lastError}`);
      if (fleet.live) {
        for (const [i, device] of simulator.devices.entries()) {
          if (fleet.prefix === "munich" && i < 2) keepFailing(device);
          // Two hours of history, a minute apart; the first Berlin device was unreachable for twenty minutes.
          const gap = fleet.prefix === "berlin" && i === 0;
          const sent = gap
            ? [await device.sendTelemetryHistory(now - HISTORY_MS, 60_000, now - 70 * 60_000), await device.sendTelemetryHistory(now - 50 * 60_000, 60_000, now)]
            : [await device.sendTelemetryHistory(now - HISTORY_MS, 60_000, now)];
          for (const res of sent) if (res.status >= 300) throw new Error(`telemetry history of ${device.reportedDeviceId}: ${res.status} ${JSON.stringify(res.body)}`);
        }
        simulator.startTraffic();
      } else {
        // Two heard from once, then silent (they go offline); two never heard from (provisioned).
        for (const device of simulator.devices.slice(0, 2)) await device.heartbeat(true);
      }
      say(`${fleet.name}: ${fleet.devices} devices enrolled (${Object.entries(fleet.labels).map(([k, v]) => `${k}=${v}`).join(", ")})`);
    }

    // The silent two go offline after three missed heartbeat intervals.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const stats = await call("GET", "/api/v1/groups/stats");
      if (stats.byStatus.offline >= 2 && stats.byStatus.error >= 2) {
        say(`fleet: ${JSON.stringify(stats.byStatus)}`);
        break;
      }
      if (Date.now() > deadline) throw new Error(`the fleet did not settle: ${JSON.stringify(stats.byStatus)}`);
      await new Promise((r) => setTimeout(r, 1000));
    }

    const browser = await launchBrowser();
    try {
      const context = await browser.newContext({ viewport: VIEWPORT, colorScheme: "light", locale: "en-US", baseURL: base });
      const signIn = await context.request.post(`${base}/api/v1/auth/session`, { data: { email: "admin@example.com", password }, headers: { origin: base } });
      if (signIn.status() !== 200) throw new Error(`sign-in: ${signIn.status()} ${await signIn.text()}`);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (err) => errors.push(err.message));
      page.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") && errors.push(m.text()));
      fs.mkdirSync(OUT, { recursive: true });
      const shoot = async (file: string, url: string, ready: (page: Page) => Promise<unknown>, scrollTo?: (page: Page) => Promise<unknown>) => {
        await page.goto(url);
        await ready(page);
        await settled(page);
        await page.getByRole("status").filter({ hasText: "Live" }).waitFor();
        await scrollTo?.(page);
        await page.screenshot({ path: path.join(OUT, file), animations: "disabled", caret: "hide" });
        say(`docs/images/${file}: ${url}`);
      };

      await shoot("overview.png", "/", (p) => p.getByRole("region", { name: "Latest status changes" }).getByRole("listitem").first().waitFor());
      await shoot("devices.png", "/devices", (p) => p.getByRole("link", { name: "berlin-000001", exact: true }).waitFor());
      const [device] = (await call("GET", "/api/v1/devices?search=berlin-000001&limit=1")).items;
      await shoot("device.png", `/devices/${device.id}?tab=telemetry`, (p) => p.getByRole("heading", { level: 1, name: "berlin-000001" }).waitFor());
      // The same page scrolled to its telemetry: the latest snapshot's gauges and the charts.
      await shoot(
        "device-telemetry.png",
        `/devices/${device.id}?tab=telemetry`,
        (p) => p.getByRole("figure", { name: "CPU, memory and disk use over the chosen range" }).locator("canvas").first().waitFor(),
        (p) => p.getByRole("tablist", { name: "Device details" }).evaluate((el) => {
          // (Browser globals typed by hand: scripts are compiled without the DOM library.) Below the sticky header.
          const tabs = el as unknown as { scrollIntoView(o: object): void; ownerDocument: { defaultView: { scrollBy(x: number, y: number): void } } };
          tabs.scrollIntoView({ block: "start" });
          tabs.ownerDocument.defaultView.scrollBy(0, -72);
        }),
      );
      if (errors.length) throw new Error(`the console reported errors:\n${errors.join("\n")}`);
    } finally {
      await browser.close();
    }
  } finally {
    await Promise.all(simulators.map((s) => s.stop()));
    await service?.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(`screenshots failed: ${err.message}`);
    process.exit(1);
  },
);
