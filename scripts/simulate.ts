// `npm run simulate -- --url http://localhost:3000 --token fme_... --devices 50 [--heartbeat 30s]
//  [--telemetry 60s] [--failure-rate 0.05] [--download 2s-8s] [--install 1s-4s] [--time-scale 1 | --fast]`:
// enrolls N virtual devices over the real agent protocol and keeps them heartbeating (and
// sending telemetry) until Ctrl-C. The devices obey the desired state: they download, install
// and run the deployments they are given (failing at the configured rate) and remove them on
// request, reporting every step in their heartbeats (docs/devices.md).
import { FleetSimulator } from "../src/simulator/engine.js";
import { deploymentsLine, formatProgress, parseSimulatorArgs, USAGE } from "../src/simulator/cli.js";

const argv = process.argv.slice(2);
if (argv.includes("--help") || argv.includes("-h")) {
  console.log(USAGE);
  process.exit(0);
}
let options;
try {
  options = parseSimulatorArgs(argv);
} catch (err) {
  console.error((err as Error).message);
  if (!(err as Error).message.startsWith("usage")) console.error(USAGE);
  process.exit(2);
}

const simulator = new FleetSimulator(options);
const started = Date.now();
const tty = process.stdout.isTTY;
let lastPrinted = 0;
const print = (force = false) => {
  const now = Date.now();
  if (!force && now - lastPrinted < (tty ? 250 : 5000)) return;
  lastPrinted = now;
  const line = formatProgress(simulator.stats(), (now - started) / 1000);
  // On a terminal the line rewrites itself; in a log file each update is its own line.
  if (tty) process.stdout.write(`\r\x1b[2K${line}`);
  else process.stdout.write(line + "\n");
};
simulator.on("progress", () => print());
const ticker = setInterval(() => print(), 1000);

const abort = new AbortController();
let stopping = false;
async function shutdown(code: number) {
  if (stopping) process.exit(1); // a second Ctrl-C: leave at once
  stopping = true;
  abort.abort();
  clearInterval(ticker);
  await simulator.stop();
  print(true);
  const stats = simulator.stats();
  const deployments = deploymentsLine(stats);
  process.stdout.write(`\nstopped: ${stats.enrolled} devices enrolled, ${stats.heartbeatsOk} heartbeats, ${stats.telemetryOk} telemetry batches, ` +
    `${stats.deploymentReports} deployment reports${deployments ? ` (${deployments})` : ""}` +
    `${stats.waiting.snapshots || stats.waiting.logLines ? `; not delivered: ${stats.waiting.snapshots} snapshots, ${stats.waiting.logLines} log lines` : ""}` +
    `${stats.lastError ? `; last error: ${stats.lastError}` : ""}\n`);
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

const t = options.deploymentTimings!;
const range = ([min, max]: readonly [number, number]) => `${min}-${max} ms`;
console.log(`simulating ${options.devices} devices against ${options.url} (heartbeat ${options.heartbeatMs} ms, ` +
  `${simulator.busyHeartbeatMs} ms while a deployment is in flight, telemetry ${options.telemetryMs ? `${options.telemetryMs} ms` : "off"}, ` +
  `logs ${options.logsMs ? `${options.logsMs} ms` : "off"}, ` +
  `failure rate ${options.failureRate}, deployment failure rate ${options.deploymentFailureRate}; download ${range(t.downloadMs!)}, ` +
  `install ${range(t.installMs!)}, remove ${range(t.removeMs!)}, time scale ${options.timeScale}); Ctrl-C stops`);
await simulator.enrollAll(abort.signal);
if (!stopping) {
  const stats = simulator.stats();
  if (stats.enrolled === 0) {
    print(true);
    console.error(`\nno device could enroll${stats.lastError ? `: ${stats.lastError}` : ""}`);
    await simulator.stop();
    process.exit(1);
  }
  simulator.startTraffic();
}
