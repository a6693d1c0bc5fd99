// Command-line parsing and the live progress line of `npm run simulate`.
import { parseArgs } from "node:util";
import type { SimulatorOptions, SimulatorStats } from "./engine.js";
import type { DelayRange } from "./virtual-runtime.js";
import type { DeviceKeyAlgorithm } from "../../agent/src/core/identity.js";

export const USAGE = `usage: npm run simulate -- --url <service url> --token <enrollment token> [--token <another> ...] --devices <N>
         [--heartbeat 30s] [--telemetry 60s|0] [--logs 30s|0] [--failure-rate 0.02] [--prefix sim-xyz]
         [--concurrency 8] [--key ES256|EdDSA|RS256] [--seed <n>] [--failing-device <name> ...]
         deployments: [--deployment-failure-rate 0] [--fail-install <app>@<version> ...] [--download 2s-8s]
         [--install 1s-4s] [--remove 500ms-2s] [--time-scale 1 | --fast] [--busy-heartbeat 1s]
         OS updates: [--system-updates commit|rollback] (devices with RAUC; a system image is committed or rolled back)`;

/** "500ms", "30s", "2m", "1h" or plain seconds. */
export function parseDuration(text: string, name: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new Error(`--${name}: "${text}" is not a duration (e.g. 500ms, 30s, 2m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Math.round(Number(match[1]) * unit);
}

/** "2s-8s", "2-8s" (the unit of the upper bound applies to a bare lower one) or one duration. */
export function parseDelayRange(text: string, name: string): DelayRange {
  const parts = text.split("-");
  if (parts.length > 2) throw new Error(`--${name}: "${text}" is not a range (e.g. 2s-8s)`);
  const upperUnit = /(ms|s|m|h)$/.exec(parts[parts.length - 1].trim())?.[1] ?? "s";
  const lowerText = /^\d+(\.\d+)?$/.test(parts[0].trim()) ? parts[0].trim() + upperUnit : parts[0];
  const min = parseDuration(lowerText, name);
  const max = parts.length === 2 ? parseDuration(parts[1], name) : min;
  if (max < min) throw new Error(`--${name}: the upper bound is below the lower one`);
  return [min, max];
}

export function parseSimulatorArgs(argv: string[]): SimulatorOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: "string" },
      // repeatable: devices enroll round robin with each token, and so carry its labels
      // (one token per time zone, labelled tz=..., puts the fleet in several time zones)
      token: { type: "string", multiple: true },
      devices: { type: "string" },
      heartbeat: { type: "string", default: "30s" },
      telemetry: { type: "string", default: "60s" },
      logs: { type: "string", default: "30s" },
      "failure-rate": { type: "string", default: "0.02" },
      prefix: { type: "string" },
      concurrency: { type: "string", default: "8" },
      key: { type: "string", default: "ES256" },
      "deployment-failure-rate": { type: "string" },
      download: { type: "string", default: "2s-8s" },
      install: { type: "string", default: "1s-4s" },
      remove: { type: "string", default: "500ms-2s" },
      "time-scale": { type: "string" },
      fast: { type: "boolean", default: false },
      "busy-heartbeat": { type: "string" },
      seed: { type: "string" },
      "fail-install": { type: "string", multiple: true },
      "failing-device": { type: "string", multiple: true },
      "system-updates": { type: "string" },
    },
    strict: true,
  });
  if (!values.url || !values.token?.length || !values.devices) throw new Error(USAGE);
  const devices = Number(values.devices);
  if (!Number.isInteger(devices) || devices < 1 || devices > 1_000_000) throw new Error("--devices: a whole number from 1 to 1,000,000");
  const failureRate = Number(values["failure-rate"]);
  if (!(failureRate >= 0 && failureRate <= 1)) throw new Error("--failure-rate: a number from 0 to 1");
  const heartbeatMs = parseDuration(values.heartbeat!, "heartbeat");
  if (heartbeatMs < 100) throw new Error("--heartbeat: at least 100ms");
  const telemetryMs = values.telemetry === "0" ? 0 : parseDuration(values.telemetry!, "telemetry");
  const logsMs = values.logs === "0" ? 0 : parseDuration(values.logs!, "logs");
  const enrollConcurrency = Number(values.concurrency);
  if (!Number.isInteger(enrollConcurrency) || enrollConcurrency < 1 || enrollConcurrency > 256) throw new Error("--concurrency: 1 to 256");
  if (!["ES256", "EdDSA", "RS256"].includes(values.key!)) throw new Error("--key: ES256, EdDSA or RS256");
  // Deployments fail only when asked: a canary that pauses by chance teaches nothing.
  const deploymentFailureRate = Number(values["deployment-failure-rate"] ?? 0);
  if (!(deploymentFailureRate >= 0 && deploymentFailureRate <= 1)) throw new Error("--deployment-failure-rate: a number from 0 to 1");
  if (values.fast && values["time-scale"] !== undefined) throw new Error("--fast is --time-scale 0: give one of them");
  const timeScale = values.fast ? 0 : Number(values["time-scale"] ?? 1);
  if (!(timeScale >= 0 && timeScale <= 1000)) throw new Error("--time-scale: a number from 0 (immediate) to 1000");
  const busyHeartbeatMs = values["busy-heartbeat"] === undefined ? undefined : parseDuration(values["busy-heartbeat"], "busy-heartbeat");
  if (busyHeartbeatMs !== undefined && busyHeartbeatMs < 50) throw new Error("--busy-heartbeat: at least 50ms");
  const seed = values.seed === undefined ? undefined : Number(values.seed);
  if (seed !== undefined && !(Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff)) throw new Error("--seed: a whole number from 0 to 4294967295");
  for (const planned of values["fail-install"] ?? []) {
    if (!/^[^@\s]+@[^@\s]+$/.test(planned)) throw new Error(`--fail-install: "${planned}" is not <application>@<version> (e.g. mqtt-broker@5.0.2)`);
  }
  const systemUpdates = values["system-updates"];
  if (systemUpdates !== undefined && systemUpdates !== "commit" && systemUpdates !== "rollback") throw new Error("--system-updates: commit or rollback");
  new URL(values.url); // throws a readable error for a bad URL
  return {
    url: values.url,
    enrollmentToken: values.token[0],
    ...(values.token.length > 1 ? { enrollmentTokens: values.token } : {}),
    devices,
    heartbeatMs,
    telemetryMs,
    logsMs,
    failureRate,
    idPrefix: values.prefix,
    enrollConcurrency,
    keyAlgorithm: values.key as DeviceKeyAlgorithm,
    deploymentFailureRate,
    deploymentTimings: {
      downloadMs: parseDelayRange(values.download!, "download"),
      installMs: parseDelayRange(values.install!, "install"),
      removeMs: parseDelayRange(values.remove!, "remove"),
    },
    timeScale,
    ...(busyHeartbeatMs !== undefined ? { busyHeartbeatMs } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(values["fail-install"]?.length ? { failInstalls: values["fail-install"] } : {}),
    ...(values["failing-device"]?.length ? { failingDevices: values["failing-device"] } : {}),
    ...(systemUpdates ? { systemUpdates } : {}),
  };
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : "-");

/** " (2 failed, 5 deferred, 40 waiting)": what did not go through at once; empty when all did. */
function uploadTrouble(failed: number, deferred: number, waiting: number): string {
  const parts = [[failed, "failed"], [deferred, "deferred"], [waiting, "waiting"]].filter(([n]) => n).map(([n, what]) => `${n} ${what}`);
  return parts.length ? ` (${parts.join(", ")})` : "";
}

export function formatProgress(stats: SimulatorStats, elapsedSeconds: number): string {
  const hb = stats.heartbeatLatency;
  const parts = [
    `${Math.floor(elapsedSeconds)}s`,
    `enrolled ${stats.enrolled}/${stats.devices}${stats.enrollFailed ? ` (${stats.enrollFailed} failed)` : ""}`,
    `heartbeats ${stats.heartbeatsOk}${stats.heartbeatsFailed ? ` (${stats.heartbeatsFailed} failed)` : ""} p50 ${fmt(hb.p50)}ms p99 ${fmt(hb.p99)}ms`,
    stats.telemetryUnavailable ? "telemetry n/a (404)" : `telemetry ${stats.telemetryOk}${uploadTrouble(stats.telemetryFailed, stats.telemetryDeferred, stats.waiting.snapshots)}`,
    ...(stats.logsOk || stats.logsFailed || stats.logsDeferred ? [`logs ${stats.logsOk}${uploadTrouble(stats.logsFailed, stats.logsDeferred, stats.waiting.logLines)}`] : []),
    `failing ${stats.failing}`,
    ...(deploymentsLine(stats) ? [deploymentsLine(stats)] : []),
    ...(stats.rejected ? [`rejected ${stats.rejected}`] : []),
  ];
  return parts.join(" | ");
}

/** "deployments 7 running, 2 installing, 1 failed" (states with devices only); empty when none. */
export function deploymentsLine(stats: Pick<SimulatorStats, "deployments">): string {
  const parts = Object.entries(stats.deployments).filter(([, n]) => n > 0).map(([state, n]) => `${n} ${state}`);
  return parts.length ? `deployments ${parts.join(", ")}` : "";
}
