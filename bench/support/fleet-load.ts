// The load generator of bench/fleet-day.ts, in its own process (its CPU and memory measured
// apart from the service's): the simulator's devices (src/simulator/engine.ts) enroll over the
// real protocol (a key, a CSR and a certificate each), then heartbeat, send telemetry and log
// lines on their own schedules; every minute a share of them goes offline (keeps collecting,
// sends nothing) and the ones offline long enough come back, sending their backlog; the
// operator labels each returning device (POST /devices/{id}/labels), which a continuous
// deployment follows. Prints `READY {json}` once enrolled; answers commands on stdin with
// `DONE {json}` (bench/support/child.ts): `start`, `stats`, `stop` (drains the outboxes).
//
// FLEET_LOAD (JSON): url, tokens (enrollment tokens, round robin), devices, enrollConcurrency,
// heartbeatMs, telemetryMs, logsMs, busyHeartbeatMs, offlinePercent, offlineMinutes, apiKey,
// returnLabel { key, value }, idPrefix, seed; seedDir and seedLabels to seed the devices in bulk
// instead of enrolling them (bench/support/seed-identities.ts)
import { FleetSimulator } from "../../src/simulator/engine.js";
import type { VirtualDevice } from "../../src/simulator/virtual-device.js";
import { JsonClient } from "../../agent/src/core/json-client.js";
import { RequestStats, timedRequest } from "./request-stats.js";
import { answerCommands } from "./commands.js";
import fs from "node:fs";
import path from "node:path";
import { readJsonLines, writeJsonLines, type SeedAnswer } from "./seed-identities.js";

interface LoadConfig {
  url: string;
  tokens: string[];
  devices: number;
  enrollConcurrency: number;
  heartbeatMs: number;
  telemetryMs: number;
  logsMs: number;
  busyHeartbeatMs: number;
  offlinePercent: number;
  offlineMinutes: number;
  apiKey: string;
  returnLabel: { key: string; value: string };
  idPrefix: string;
  seed: number;
  /** seeding in bulk instead of enrolling: the folder the key requests and the issued certificates pass through */
  seedDir?: string;
  /** with seedDir: each device's labels, round robin (as the enrollment tokens would give them) */
  seedLabels?: Array<Record<string, string>>;
}

const config = JSON.parse(process.env.FLEET_LOAD!) as LoadConfig;
const stats = new RequestStats();
const simulator = new FleetSimulator({
  url: config.url,
  enrollmentToken: config.tokens[0],
  enrollmentTokens: config.tokens,
  devices: config.devices,
  heartbeatMs: config.heartbeatMs,
  telemetryMs: config.telemetryMs,
  logsMs: config.logsMs,
  busyHeartbeatMs: config.busyHeartbeatMs,
  // a device in a thousand starts failing per interval (recovers with one chance in two); installs fail one time in 500
  failureRate: 0.001,
  deploymentFailureRate: 0.002,
  seed: config.seed,
  idPrefix: config.idPrefix,
  enrollConcurrency: config.enrollConcurrency,
  maxSockets: 256,
  observe: (kind, ms, status, items) => stats.record(kind, ms, status, items),
});

// Enrollment, with a progress line every 10 s on stderr (the benchmark's output).
const enrollStarted = performance.now();
const progress = setInterval(() => {
  const s = simulator.stats();
  const seconds = (performance.now() - enrollStarted) / 1000;
  process.stderr.write(`enrolling: ${s.enrolled.toLocaleString("en")} of ${config.devices.toLocaleString("en")} in ${seconds.toFixed(0)} s (${(s.enrolled / seconds).toFixed(1)}/s), ${s.enrollFailed} failed\n`);
}, 10_000);
const enrollCpu = process.cpuUsage();
if (config.seedDir) {
  // seeded in bulk (bench/support/seed-identities.ts): the keys made here, the certificates
  // issued by the service through the benchmark, which watches for requests.jsonl
  await simulator.adoptSeededIdentities(async (requests) => {
    writeJsonLines(path.join(config.seedDir!, "requests.jsonl"), requests.map((r) => ({
      reportedDeviceId: r.reportedDeviceId, publicKeyPem: r.publicKeyPem, labels: config.seedLabels![r.index % config.seedLabels!.length],
    })));
    fs.writeFileSync(path.join(config.seedDir!, "requests.ready"), "");
    const answers = path.join(config.seedDir!, "answers.jsonl");
    while (!fs.existsSync(`${answers}.ready`)) await new Promise((resolve) => setTimeout(resolve, 500));
    return new Map(readJsonLines<SeedAnswer>(answers).map((a) => [a.reportedDeviceId, a]));
  });
} else {
  await simulator.enrollAll();
}
clearInterval(progress);
const enrollSeconds = (performance.now() - enrollStarted) / 1000;
const enrollCpuUsed = process.cpuUsage(enrollCpu);
const enrolled = simulator.devices.filter((d) => d.deviceId);

// The operator's side: returning devices get the label the continuous deployment selects.
const api = new JsonClient(config.url, 8);
const labelled = new Set<VirtualDevice>();
const labelQueue: VirtualDevice[] = [];
let labelling = false;
async function labelReturned() {
  if (labelling) return;
  labelling = true;
  try {
    await Promise.all(Array.from({ length: 4 }, async () => {
      for (let device = labelQueue.shift(); device; device = labelQueue.shift()) {
        const res = await timedRequest(stats, "label (operator)", () =>
          api.request("POST", `/api/v1/devices/${device.deviceId}/labels`, config.returnLabel, { "x-api-key": config.apiKey })).catch(() => null);
        if (res && res.status < 300) labelled.add(device);
      }
    }));
  } finally {
    labelling = false;
  }
}

// Going offline and coming back: each minute `offlinePercent` of the online devices leave, and
// those that left `offlineMinutes` ago return.
const away: VirtualDevice[][] = [];
let wentOffline = 0;
let cameBack = 0;
function churn() {
  const returning = away.length >= config.offlineMinutes ? away.shift()! : [];
  for (const device of returning) {
    simulator.setOffline(device, false);
    if (!labelled.has(device)) labelQueue.push(device);
  }
  cameBack += returning.length;
  const leaving: VirtualDevice[] = [];
  // at least one a minute, so that a small trial fleet shows the returns too
  const wanted = Math.max(1, Math.round((enrolled.length * config.offlinePercent) / 100));
  for (let tries = 0; leaving.length < wanted && tries < wanted * 10; tries++) {
    const device = enrolled[Math.floor(Math.random() * enrolled.length)];
    if (simulator.isOffline(device)) continue;
    simulator.setOffline(device, true);
    leaving.push(device);
  }
  away.push(leaving);
  wentOffline += leaving.length;
  void labelReturned();
}

let churnTimer: NodeJS.Timeout | null = null;
let churnStart: NodeJS.Timeout | null = null;
function snapshot() {
  const s = simulator.stats();
  return {
    window: stats.window(),
    totals: stats.totals(),
    enrolled: s.enrolled,
    offline: away.reduce((n, group) => n + group.length, 0),
    wentOffline,
    cameBack,
    labelled: labelled.size,
    labelsWaiting: labelQueue.length,
    waiting: s.waiting,
    dropped: s.dropped,
    deployments: s.deployments,
    deploymentReports: s.deploymentReports,
    lastError: s.lastError,
    cpu: process.cpuUsage(),
    memory: process.memoryUsage(),
  };
}

answerCommands(async (line) => {
  if (line === "start") {
    simulator.startTraffic();
    // half a minute off the benchmark's samples (each at a whole minute), so that a sample never races a churn
    churnStart = setTimeout(() => {
      churn();
      churnTimer = setInterval(churn, 60_000);
    }, 30_000);
  } else if (line === "stop") {
    if (churnStart) clearTimeout(churnStart);
    if (churnTimer) clearInterval(churnTimer);
    for (const group of away.splice(0)) for (const device of group) simulator.setOffline(device, false);
    // what the devices still keep goes out (the service's Retry-After waited out), then they stop
    await simulator.drain(120_000);
    api.close();
  }
  return snapshot();
});

process.stdout.write(`READY ${JSON.stringify({
  enrolled: enrolled.length, enrollFailed: simulator.stats().enrollFailed, enrollSeconds, lastError: simulator.stats().lastError,
  enrollCpuMicros: enrollCpuUsed.user + enrollCpuUsed.system,
})}\n`);
