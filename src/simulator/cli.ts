// Command-line parsing and the live progress line of `npm run simulate`.
import { parseArgs } from "node:util";
import type { SimulatorOptions, SimulatorStats } from "./engine.js";
import type { DeviceKeyAlgorithm } from "./identity.js";

export const USAGE = `usage: npm run simulate -- --url <service url> --token <enrollment token> --devices <N>
         [--heartbeat 30s] [--telemetry 60s|0] [--failure-rate 0.05] [--prefix sim-xyz]
         [--concurrency 8] [--key ES256|EdDSA|RS256]`;

/** "500ms", "30s", "2m", "1h" or plain seconds. */
export function parseDuration(text: string, name: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) throw new Error(`--${name}: "${text}" is not a duration (e.g. 500ms, 30s, 2m)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(match[2] ?? "s") as "ms" | "s" | "m" | "h"];
  return Math.round(Number(match[1]) * unit);
}

export function parseSimulatorArgs(argv: string[]): SimulatorOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      url: { type: "string" },
      token: { type: "string" },
      devices: { type: "string" },
      heartbeat: { type: "string", default: "30s" },
      telemetry: { type: "string", default: "60s" },
      "failure-rate": { type: "string", default: "0.05" },
      prefix: { type: "string" },
      concurrency: { type: "string", default: "8" },
      key: { type: "string", default: "ES256" },
    },
    strict: true,
  });
  if (!values.url || !values.token || !values.devices) throw new Error(USAGE);
  const devices = Number(values.devices);
  if (!Number.isInteger(devices) || devices < 1 || devices > 1_000_000) throw new Error("--devices: a whole number from 1 to 1,000,000");
  const failureRate = Number(values["failure-rate"]);
  if (!(failureRate >= 0 && failureRate <= 1)) throw new Error("--failure-rate: a number from 0 to 1");
  const heartbeatMs = parseDuration(values.heartbeat!, "heartbeat");
  if (heartbeatMs < 100) throw new Error("--heartbeat: at least 100ms");
  const telemetryMs = values.telemetry === "0" ? 0 : parseDuration(values.telemetry!, "telemetry");
  const enrollConcurrency = Number(values.concurrency);
  if (!Number.isInteger(enrollConcurrency) || enrollConcurrency < 1 || enrollConcurrency > 256) throw new Error("--concurrency: 1 to 256");
  if (!["ES256", "EdDSA", "RS256"].includes(values.key!)) throw new Error("--key: ES256, EdDSA or RS256");
  new URL(values.url); // throws a readable error for a bad URL
  return {
    url: values.url,
    enrollmentToken: values.token,
    devices,
    heartbeatMs,
    telemetryMs,
    failureRate,
    idPrefix: values.prefix,
    enrollConcurrency,
    keyAlgorithm: values.key as DeviceKeyAlgorithm,
  };
}

const fmt = (n: number) => (Number.isFinite(n) ? n.toFixed(n < 10 ? 1 : 0) : "-");

export function formatProgress(stats: SimulatorStats, elapsedSeconds: number): string {
  const hb = stats.heartbeatLatency;
  const parts = [
    `${Math.floor(elapsedSeconds)}s`,
    `enrolled ${stats.enrolled}/${stats.devices}${stats.enrollFailed ? ` (${stats.enrollFailed} failed)` : ""}`,
    `heartbeats ${stats.heartbeatsOk}${stats.heartbeatsFailed ? ` (${stats.heartbeatsFailed} failed)` : ""} p50 ${fmt(hb.p50)}ms p99 ${fmt(hb.p99)}ms`,
    stats.telemetryUnavailable ? "telemetry n/a (404)" : `telemetry ${stats.telemetryOk}${stats.telemetryFailed ? ` (${stats.telemetryFailed} failed)` : ""}`,
    `failing ${stats.failing}`,
    ...(stats.rejected ? [`rejected ${stats.rejected}`] : []),
  ];
  return parts.join(" | ");
}
