// `npm run demo`: the whole service in one process on the embedded database, with content.
//
// Starts the service on a fresh PGlite data directory (./data-demo, DEMO_DIR), then, through
// the public REST API only: a demo organization with its operator and an API key, a CA, an
// enrollment token, a Git registry with sample applications (a bare repository served over
// smart HTTP on loopback by this process, with `git http-backend`), a first sync, and 50
// simulated devices enrolling and heartbeating over the agent protocol. Prints where to look:
// the web console first, with whom to sign in.
// Ctrl-C (or SIGTERM) stops the simulator, the service and the Git server, in that order.
//
// PORT (default 3000), DEMO_DIR (default ./data-demo), DEMO_DEVICES (default 50).
import fs from "node:fs";
import path from "node:path";
import { loadConfig } from "../src/config.js";
import { createLogger } from "../src/lib/logger.js";
import { startService, type RunningService } from "../src/server.js";
import { FleetSimulator } from "../src/simulator/engine.js";
import { formatProgress } from "../src/simulator/cli.js";
import { onStopSignals } from "../src/lib/stop-signals.js";
import { startGitServer, type GitServer } from "../test/support/git-server/index.js";
import { demoBanner } from "./demo-banner.js";

const DEMO_DIR = path.resolve(process.env.DEMO_DIR ?? "./data-demo");
const MARKER = ".fleet-demo";
const PORT = Number(process.env.PORT ?? 3000);
/** A path as the reader can type it: relative below the current directory, absolute elsewhere. */
const shown = (p: string) => {
  const relative = path.relative(process.cwd(), p);
  return relative === "" ? "." : relative.startsWith("..") ? p : relative;
};
const DEVICES = Number(process.env.DEMO_DEVICES ?? 50);
/** The time zones the demo devices sit in (label tz), in turn. */
const DEMO_TIME_ZONES = ["Europe/Berlin", "America/New_York", "Asia/Tokyo"];
const OPERATOR = { email: "operator@demo.example", password: "demo-operator-password" };

// ---------------------------------------------------------------------------------------
// Sample applications, per /work/shared/design/manifest.md (one our format, one Margo).

const manifest = (id: string, name: string, version: string, extra: { description: string; category: string; tags: string[]; type?: string; vendor: string; cores?: number }) => `apiVersion: fleet.app/v1alpha1
kind: ApplicationManifest
metadata:
  id: ${id}
  name: ${name}
  version: ${version}
  description: ${extra.description}
  catalog:
    category: ${extra.category}
    tags: [${extra.tags.join(", ")}]
    icon: ./icon.svg
    organization: [{ name: ${extra.vendor}, site: https://example.com }]
deploymentProfiles:
  - id: ${extra.type ?? "compose"}-default
    type: ${extra.type ?? "compose"}
    components:
      - name: ${id}
        properties:
          repository: oci://registry.example/apps/${id}
          revision: ${version}
          timeout: 5m0s
    requiredResources:
      cpu: { cores: ${extra.cores ?? 0.5}, architectures: [arm64, amd64] }
      memory: 512Mi
      storage: 1Gi
${id === "vision-gateway" ? VISION_PARAMETERS : ""}`;

// Parameters a deployment of the vision gateway gives (docs/deployments.md): a checked number
// with a default, and a secret without one.
const VISION_PARAMETERS = `parameters:
  pollSeconds:
    value: 30
    description: how often the cameras are polled
    schema: { type: integer, minimum: 5, maximum: 3600 }
    targets: [{ pointer: POLL_SECONDS, components: [vision-gateway] }]
  cloudToken:
    description: token for the inference cloud
    secret: true
    required: true
    schema: { type: string }
    targets: [{ pointer: CLOUD_TOKEN, components: [vision-gateway] }]
`;

const ICON = `<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16"><rect width="16" height="16" fill="#2a7"/></svg>\n`;

const MARGO = `apiVersion: margo.org/v1-alpha1
kind: ApplicationDescription
metadata:
  id: plc-connector
  name: PLC Connector
  version: 1.0.0
  description: OPC UA and Modbus bridge to MQTT
  catalog:
    application:
      descriptionFile: ./README.md
      tagline: Field bus to MQTT
      tags: [industrial, opcua, modbus]
    author: [{ name: Demo Vendor }]
    organization: [{ name: Demo Vendor, site: https://example.com }]
deploymentProfiles:
  - type: helm.v3
    id: helm
    components:
      - name: plc-connector
        properties:
          repository: oci://registry.example/charts/plc-connector
          revision: 1.0.0
`;

const APP_FILES: Record<string, string> = {
  "README.md": "Sample applications of the fleet-manager demo.\n",
  "apps/vision-gateway/2.4.0/app.yaml": manifest("vision-gateway", "Vision Gateway", "2.4.0", { description: "Camera ingest and on-device inference", category: "vision", tags: ["vision", "inference"], vendor: "Acme Industrial", cores: 1.5 }),
  "apps/vision-gateway/2.4.0/icon.svg": ICON,
  "apps/vision-gateway/2.4.1/app.yaml": manifest("vision-gateway", "Vision Gateway", "2.4.1", { description: "Camera ingest and on-device inference", category: "vision", tags: ["vision", "inference"], vendor: "Acme Industrial", cores: 1.5 }),
  "apps/vision-gateway/2.4.1/icon.svg": ICON,
  "apps/mqtt-broker/app.yaml": manifest("mqtt-broker", "MQTT Broker", "5.0.2", { description: "Local MQTT broker for sensors", category: "messaging", tags: ["mqtt", "messaging"], vendor: "Demo Vendor", type: "helm" }),
  "apps/mqtt-broker/icon.svg": ICON,
  "apps/telemetry-forwarder/app.yaml": manifest("telemetry-forwarder", "Telemetry Forwarder", "0.9.0", { description: "Batches and forwards sensor data", category: "monitoring", tags: ["telemetry"], vendor: "Demo Vendor" }),
  "apps/telemetry-forwarder/icon.svg": ICON,
  "apps/plc-connector/margo.yaml": MARGO,
  "apps/plc-connector/README.md": "# PLC Connector\n\nBridges OPC UA and Modbus devices to MQTT.\n",
};

// ---------------------------------------------------------------------------------------

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

  const say = (line = "") => process.stdout.write(line + "\n");
  say(`starting the service on the embedded database in ${shown(DEMO_DIR)} (log: ${shown(logFile)})`);
  let service: RunningService | null = null;
  let git: GitServer | null = null;
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
    await git?.close().catch(() => undefined);
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

    const call = async (method: string, p: string, opts: { key?: string; token?: string; body?: unknown } = {}) => {
      const headers: Record<string, string> = {};
      if (opts.key) headers["x-api-key"] = opts.key;
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      if (opts.body !== undefined || method !== "GET") headers["content-type"] = "application/json";
      const res = await fetch(base + p, { method, headers, body: method === "GET" ? undefined : JSON.stringify(opts.body ?? {}) });
      const text = await res.text();
      const body = text ? JSON.parse(text) : undefined;
      if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 300)}`);
      return body;
    };

    // Organization, its operator (owner) and an API key created by the operator.
    const org = await call("POST", "/api/v1/organizations", { key: adminKey, body: { name: "Demo Fleet", slug: "demo", description: "Created by npm run demo" } });
    const roles = await call("GET", "/api/v1/roles?limit=200", { key: adminKey });
    const owner = (roles.items ?? roles.data).find((r: { name: string; organizationId: string | null }) => r.name === "owner");
    const operator = await call("POST", "/api/v1/users", { key: adminKey, body: { email: OPERATOR.email, name: "Demo Operator", password: OPERATOR.password } });
    await call("POST", `/api/v1/users/${operator.id}/organizations`, { key: adminKey, body: { organizationId: org.id, roleId: owner.id } });
    const login = await call("POST", "/api/v1/auth/login", { body: OPERATOR });
    const apiKey = await call("POST", `/api/v1/organizations/${org.id}/api-keys`, { token: login.accessToken, body: { name: "demo", description: "full-permission key of the demo operator", permissions: ["*"] } });
    const key: string = apiKey.key;
    say(`organization '${org.slug}' (${org.id}), operator ${OPERATOR.email}, API key ${apiKey.keyPrefix}…`);

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

    // Git registry over smart HTTP on loopback, served by this process.
    let repo: { url: string } | null = null;
    let registry: { id: string } | null = null;
    try {
      git = await startGitServer(); // needs the git command-line tool (git http-backend)
      repo = await git.createRepo("demo-apps", APP_FILES);
    } catch (err) {
      say(`no Git registry: could not serve a Git repository (${(err as Error).message.split("\n")[0]}); is git installed?`);
    }
    if (repo) {
      registry = await call("POST", "/api/v1/registries/git", { key, body: { name: "demo apps", url: repo.url, branch: "main", path: "/apps", syncIntervalMinutes: 5 } });
      const synced = await call("POST", `/api/v1/registries/git/${registry!.id}/sync`, { key });
      say(`Git registry ${repo.url} synced at ${synced.commit?.slice(0, 7)}: ${synced.applicationsFound} manifests, ${synced.applicationsImported} imported, ${synced.errors.length} errors, ${synced.rejectedManifests.length} rejected`);
    }

    // Devices.
    simulator = new FleetSimulator({
      url: base, enrollmentToken: token.token, enrollmentTokens: zoneTokens.map((t) => t.token), devices: DEVICES, heartbeatMs: 10_000, telemetryMs: 15_000, logsMs: 20_000,
      failureRate: 0.02, idPrefix: "demo", enrollConcurrency: 8,
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
      say(`continuous deployment '${continuous!.name}' started on every device labelled site=demo-plant`);
      lateSimulator = new FleetSimulator({
        url: base, enrollmentToken: token.token, devices: 3, heartbeatMs: 10_000, telemetryMs: 15_000, logsMs: 20_000,
        failureRate: 0.02, idPrefix: "demo-late", enrollConcurrency: 3,
      });
      await lateSimulator.enrollAll();
      if (stopping) return;
      lateSimulator.startTraffic();
      // Wait (bounded) until the late devices run it: they joined after the start.
      const deadline = Date.now() + 90_000;
      let joined = { joined: 0, running: 0 };
      while (Date.now() < deadline && !stopping) {
        const late = (await call("GET", `/api/v1/deployments/${continuous!.id}/devices?limit=100`, { key })).items.filter((e: { lateJoiner: boolean }) => e.lateJoiner);
        joined = { joined: late.length, running: late.filter((e: { state: string }) => e.state === "running").length };
        if (joined.running >= 3) break;
        await new Promise((r) => setTimeout(r, 2000));
      }
      say(`3 devices enrolled after the start joined '${continuous!.name}': ${joined.joined} joined, ${joined.running} running it`);
    }

    const device = (await call("GET", "/api/v1/devices?limit=1", { key })).items?.[0] ?? null;
    say(demoBanner({
      base,
      operator: OPERATOR,
      organizationSlug: org.slug,
      enrolledDevices: stats.enrolled,
      superAdmin: { email: b.adminEmail, password: b.generatedPassword, apiKey: adminKey },
      demoApiKey: key,
      enrollmentToken: token.token,
      gitRegistry: repo && registry ? { url: repo.url, id: registry.id } : null,
      deviceId: device?.id ?? null,
      continuousDeployment: continuous,
    }));
    const tty = process.stdout.isTTY;
    ticker = setInterval(() => {
      if (!simulator || stopping) return;
      const line = formatProgress(simulator.stats(), (Date.now() - started) / 1000);
      process.stdout.write(tty ? `\r\x1b[2K${line}` : line + "\n");
    }, tty ? 1000 : 15_000);
  } catch (err) {
    say(`demo failed: ${(err as Error).message}`);
    await stop(1);
  }
}

main().catch((err: Error) => {
  console.error(`fatal: ${err.message}`);
  process.exit(1);
});
