// `npm run demo`: the whole service in one process on the embedded database, with content.
//
// Starts the service on a fresh PGlite data directory (./data-demo, DEMO_DIR), then, through
// the public REST API only: a demo organization with its operator (role operator) and an API
// key with the operator's permissions, a CA, enrollment tokens, a Git registry with the sample
// applications (scripts/sample-apps.ts: a bare repository served over smart HTTP on loopback
// by this process), a first sync, 50 simulated devices enrolling and heartbeating over the
// agent protocol, and a continuous deployment. Then prints where to look (the web console
// first, with whom to sign in) and only then, in the background, enrolls 3 more devices that
// join the continuous deployment late (53 devices in all). The simulated devices follow a
// fixed plan (scripts/demo-plan.ts): nothing fails by chance, one device reports errors and one
// application version fails to install, on purpose, so the README's tour ends the same way
// at every run.
// Ctrl-C (or SIGTERM) stops the simulators, the service and the Git server, in that order.
//
// PORT (default 3000), DEMO_DIR (default ./data-demo), DEMO_DEVICES (default 50).
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/lib/logger.js";
import { startService, type RunningService } from "../src/server.js";
import { FleetSimulator, type SimulatorOptions } from "../src/simulator/engine.js";
import { formatProgress } from "../src/simulator/cli.js";
import { onStopSignals } from "../src/lib/stop-signals.js";
import { demoBanner } from "./demo-banner.js";
import { DEMO_SIMULATION, OPERATOR, setUpDemoOrganization } from "./demo-plan.js";
import { addSampleRegistry, apiCaller, serveSampleApps, syncSummary, type SampleAppsServer } from "./sample-apps.js";

const DEMO_DIR = path.resolve(process.env.DEMO_DIR ?? "./data-demo");
const MARKER = ".fleet-demo";
const PORT = Number(process.env.PORT ?? 3000);
/** A path as the reader can type it: relative below the current directory, absolute elsewhere. */
const shown = (p: string) => {
  const relative = path.relative(process.cwd(), p);
  return relative === "" ? "." : relative.startsWith("..") ? p : relative;
};
const DEVICES = Number(process.env.DEMO_DEVICES ?? 50);
/** devices that enroll after the continuous deployment started, and join it */
const LATE_DEVICES = 3;
/** The time zones the demo devices sit in (label tz), in turn. */
const DEMO_TIME_ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo"];

function prepareDataDir() {
  if (fs.existsSync(DEMO_DIR)) {
    const entries = fs.readdirSync(DEMO_DIR);
    if (entries.length > 0 && !entries.includes(MARKER)) {
      throw new Error(`${DEMO_DIR} exists and was not made by the demo; set DEMO_DIR to another directory`);
    }
    fs.rmSync(DEMO_DIR, { recursive: true, force: true }); // every run starts fresh
  }
  fs.mkdirSync(DEMO_DIR, { recursive: true });
  fs.writeFileSync(path.join(DEMO_DIR, MARKER), "created by npm run demo; deleted and re-created at its next run\n");
}

async function main() {
  if (!Number.isInteger(DEVICES) || DEVICES < 1 || DEVICES > 10_000) throw new Error("DEMO_DEVICES: a whole number from 1 to 10,000");
  if (!Number.isInteger(PORT) || PORT < 0 || PORT > 65_535) throw new Error("PORT: a port number");
  prepareDataDir();
  const logFile = path.join(DEMO_DIR, "service.log");
  const config = loadConfig({
    ...process.env,
    DATA_DIR: path.join(DEMO_DIR, "db"),
    DATABASE_URL: "",
    PORT: String(PORT),
    HOST: process.env.HOST ?? "127.0.0.1",
    BOOTSTRAP_ADMIN_EMAIL: "admin@example.com",
    HEARTBEAT_INTERVAL_SECONDS: "10",
  });
  const logger = createLogger(config.LOG_LEVEL, fs.createWriteStream(logFile, { flags: "a" }));

  const tty = process.stdout.isTTY;
  // On a terminal the progress line rewrites itself: a line said meanwhile clears it first.
  const say = (line = "") => process.stdout.write((tty ? "\r\x1b[2K" : "") + line + "\n");
  const startedAt = Date.now();
  say(`starting the service on the embedded database in ${shown(DEMO_DIR)} (log: ${shown(logFile)})`);
  let service: RunningService | null = null;
  let samples: SampleAppsServer | null = null;
  let simulator: FleetSimulator | null = null;
  let lateSimulator: FleetSimulator | null = null;
  let ticker: NodeJS.Timeout | null = null;
  let stopping = false;

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    if (ticker) clearInterval(ticker);
    say("\nstopping: simulator, service, git server ...");
    await simulator?.stop().catch(() => undefined);
    await lateSimulator?.stop().catch(() => undefined);
    await service?.stop().catch((err: Error) => say(`service stop failed: ${err.message}`));
    await samples?.close().catch(() => undefined);
    say(`stopped. The data stays in ${shown(DEMO_DIR)} until the next demo; look at it again with DATA_DIR=${shown(path.join(DEMO_DIR, "db"))} npm start`);
    process.exit(code);
  };
  onStopSignals(() => void stop(0), () => process.exit(1)); // Ctrl-C again, a moment later: leave at once

  try {
    service = await startService(config, logger);
    const base = `http://${config.HOST === "0.0.0.0" ? "localhost" : config.HOST}:${new URL(service.url).port}`;
    const b = service.bootstrapResult;
    if (!b.created || !b.generatedApiKey) throw new Error("the demo needs a fresh database (bootstrap did not run)");
    const adminKey = b.generatedApiKey;
    const call = apiCaller(base);

    const { org, apiKey } = await setUpDemoOrganization(call, adminKey);
    const key: string = apiKey.key;
    say(`organization '${org.slug}' (${org.id}), operator ${OPERATOR.email} (role operator), API key ${apiKey.keyPrefix}… with the operator's permissions`);

    // PKI and enrollment.
    const ca = await call("POST", "/api/v1/ca-certificates/generate", { key, body: { name: "Demo Root CA", commonName: "Demo Fleet Root CA", validityDays: 3650 } });
    const token = await call("POST", "/api/v1/enrollment-tokens", { key, body: { name: "demo devices", labels: { site: "demo-plant", tier: "edge", tz: DEMO_TIME_ZONES[0] } } });
    // one more token per time zone: the simulator enrolls devices with each in turn, so the fleet
    // sits in several time zones (label tz) and maintenance windows with timeZoneLabel "tz" differ per device
    const zoneTokens = [token];
    for (const tz of DEMO_TIME_ZONES.slice(1)) {
      zoneTokens.push(await call("POST", "/api/v1/enrollment-tokens", { key, body: { name: `demo devices ${tz}`, labels: { site: "demo-plant", tier: "edge", tz } } }));
    }
    say(`CA '${ca.name}' (default: ${ca.isDefault}), enrollment token ${token.tokenPrefix}… (devices in ${DEMO_TIME_ZONES.join(", ")}: label tz)`);

    // The sample applications: a Git registry over smart HTTP on loopback, served by this process.
    let registry: { id: string } | null = null;
    try {
      samples = await serveSampleApps();
    } catch (err) {
      say(`no Git registry: ${(err as Error).message}`);
    }
    if (samples) {
      const added = await addSampleRegistry(call, key, samples.url, "demo apps");
      registry = added.registry;
      say(`Git registry ${samples.url} ${syncSummary(added.synced)}`);
    }

    // Devices, on the demo's plan (scripts/demo-plan.ts).
    const traffic = { heartbeatMs: 10_000, telemetryMs: 15_000, logsMs: 20_000 };
    simulator = new FleetSimulator({
      url: base, enrollmentToken: token.token, enrollmentTokens: zoneTokens.map((t) => t.token), devices: DEVICES, ...traffic,
      ...DEMO_SIMULATION, enrollConcurrency: 8,
    });
    const started = Date.now();
    await simulator.enrollAll();
    if (stopping) return;
    simulator.startTraffic();
    const stats = simulator.stats();
    say(`simulator: ${stats.enrolled}/${stats.devices} devices enrolled${stats.lastError ? ` (last error: ${stats.lastError})` : ""}; heartbeat every 10 s, telemetry every 15 s`);

    // A continuous deployment: devices enrolled after it started get it too (docs/deployments.md).
    let continuous: { id: string; name: string } | null = null;
    const forwarder = registry ? (await call("GET", "/api/v1/applications?limit=100", { key })).items?.find((a: { key: string }) => a.key === "telemetry-forwarder") : null;
    if (forwarder) {
      continuous = await call("POST", "/api/v1/deployments", {
        key,
        body: {
          name: "forwarder-everywhere", applicationId: forwarder.id, version: "0.9.0", profileId: "compose-default",
          target: { labelSelector: { site: "demo-plant" } }, continuous: true,
          retry: { maxAttempts: 3, initialDelaySeconds: 10, maxDelaySeconds: 60 },
        },
      });
      await call("POST", `/api/v1/deployments/${continuous!.id}/start`, { key });
      say(`continuous deployment '${continuous!.name}' (telemetry-forwarder 0.9.0) started on every device labelled site=demo-plant`);
    }

    const device = (await call("GET", "/api/v1/devices?limit=1", { key })).items?.[0] ?? null;
    say(demoBanner({
      base,
      operator: OPERATOR,
      organizationSlug: org.slug,
      enrolledDevices: stats.enrolled,
      lateDevices: continuous ? LATE_DEVICES : 0,
      superAdmin: { email: b.adminEmail, password: b.generatedPassword, apiKey: adminKey },
      demoApiKey: key,
      enrollmentToken: token.token,
      gitRegistry: samples && registry ? { url: samples.url, id: registry.id } : null,
      deviceId: device?.id ?? null,
      continuousDeployment: continuous,
    }));
    say(`(ready ${Math.round((Date.now() - startedAt) / 1000)} s after the start)`);
    ticker = setInterval(() => {
      if (!simulator || stopping) return;
      const line = formatProgress(simulator.stats(), (Date.now() - started) / 1000);
      process.stdout.write(tty ? `\r\x1b[2K${line}` : line + "\n");
    }, tty ? 1000 : 15_000);

    // After the banner, in the background: devices that enroll after the continuous deployment
    // started, and join it.
    if (continuous) void joinLate(continuous, key, { url: base, enrollmentToken: token.token, devices: LATE_DEVICES, ...traffic, ...DEMO_SIMULATION, idPrefix: "demo-late", failingDevices: [], enrollConcurrency: LATE_DEVICES });
  } catch (err) {
    say(`demo failed: ${(err as Error).message}`);
    await stop(1);
  }

  async function joinLate(continuous: { id: string; name: string }, key: string, options: SimulatorOptions) {
    const call = apiCaller(options.url);
    try {
      lateSimulator = new FleetSimulator(options);
      await lateSimulator.enrollAll();
      if (stopping) return;
      lateSimulator.startTraffic();
      // Until each has its outcome: running (or failed), or skipped when the profile does not
      // support its architecture (one of the three is armv7: waiting for it to run never ends).
      const deadline = Date.now() + 120_000;
      let late: Array<{ state: string; reason: string | null }> = [];
      const settled = (e: { state: string }) => ["running", "failed", "skipped"].includes(e.state);
      while (Date.now() < deadline && !stopping) {
        late = (await call("GET", `/api/v1/deployments/${continuous.id}/devices?limit=200`, { key })).items.filter((e: { lateJoiner: boolean }) => e.lateJoiner);
        if (late.length >= options.devices && late.every(settled)) break;
        await new Promise((r) => setTimeout(r, 2000));
      }
      const count = (state: string) => late.filter((e) => e.state === state).length;
      const outcome = [`${count("running")} running it`, ...(count("skipped") ? [`${count("skipped")} skipped (architecture)`] : []), ...(count("failed") ? [`${count("failed")} failed`] : [])];
      if (!stopping) say(`${options.devices} devices (${options.idPrefix}-*) enrolled after '${continuous.name}' started and joined it: ${outcome.join(", ")}; ${(simulator?.stats().enrolled ?? 0) + lateSimulator.stats().enrolled} devices in all`);
    } catch (err) {
      if (!stopping) say(`late devices: ${(err as Error).message}`);
    }
  }
}

main().catch((err: Error) => {
  console.error(`fatal: ${err.message}`);
  process.exit(1);
});
