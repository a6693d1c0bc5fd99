// Plausible device log lines, so that a simulated fleet has something to read and follow in
// the console's Logs tab: a healthy device writes routine lines of its agent, its container
// runtime and its system; a failing one writes the warnings and errors of its one fault, which
// its heartbeat names and its telemetry counts (Fault).
import { counted } from "../lib/plural.js";

import type { LogLevel, LogLine } from "../../agent/src/core/reports.js";

export type { LogLevel, LogLine };

/**
 * `count` different items of `items` (all of them when it has fewer), in random order: a batch
 * never holds the same line twice, as a device writes each line once.
 */
function draw<T>(items: readonly T[], count: number): T[] {
  const pool = [...items];
  const n = Math.min(count, pool.length);
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(Math.random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

const ROUTINE: readonly [string, LogLevel, (n: number) => string][] = [
  ["agent", "info", () => "heartbeat acknowledged"],
  ["agent", "debug", (n) => `desired state unchanged (${n} entries)`],
  ["agent", "info", (n) => `telemetry batch sent (${counted(n, "snapshot")})`],
  ["containerd", "info", (n) => `health check passed for ${counted(n, "container")}`],
  ["kernel", "info", () => "eth0: link up, 1000 Mbps full duplex"],
  ["systemd", "info", () => "Started Daily rotation of log files."],
  ["ntpd", "info", (n) => `clock offset ${(n / 10).toFixed(1)} ms, in sync`],
];

/**
 * What is wrong with a failing device: one trouble, told alike by its heartbeat (`message`),
 * its telemetry (`containersFailed`, `errorCount`: the error lines it wrote since the previous
 * snapshot) and its log lines, so that none of them contradicts the others.
 */
export interface Fault {
  /** the heartbeat's message: why the device is in error */
  reason: string;
  /** the container it keeps from running (app-<n>), or null */
  container: number | null;
  /** the lines it writes; each error line counts in the telemetry's errorCount */
  lines: readonly (readonly [string, LogLevel, string])[];
}

const FAULTS: readonly ((n: number) => Fault)[] = [
  (n) => ({
    reason: `container app-${n} keeps exiting with code 137 (out of memory)`,
    container: n,
    lines: [["containerd", "error", `container app-${n} exited with code 137 (out of memory)`], ["containerd", "warn", `container app-${n} restarting (back-off ${n * 10} s)`]],
  }),
  (n) => ({
    reason: `container app-${n} cannot start: its image does not download (context deadline exceeded)`,
    container: n,
    lines: [["agent", "error", `failed to pull the image of app-${n}: context deadline exceeded`], ["agent", "warn", `heartbeat took ${n * 400} ms (slow uplink)`]],
  }),
  (n) => ({
    reason: `container app-${n} crashed: segmentation fault in its health check`,
    container: n,
    lines: [["containerd", "error", `container app-${n} exited with code 139 (segmentation fault)`], ["containerd", "warn", `container app-${n} unhealthy: health check failed 3 times`]],
  }),
];

/**
 * The fault a device has whenever it fails: always the same one for the same device name. Each
 * stops one container, so a failing simulated device always counts one failed container (what
 * the overview's "with failed containers" and alert rules on containersFailed watch for).
 */
export function faultOf(deviceName: string): Fault {
  let hash = 0;
  for (const char of deviceName) hash = (hash * 31 + char.charCodeAt(0)) >>> 0;
  return FAULTS[hash % FAULTS.length](1 + (Math.floor(hash / FAULTS.length) % 3));
}

export class LogModel {
  /** error lines written since the telemetry last took the count */
  private errors = 0;

  /**
   * One to three different lines as of `now`, a few milliseconds apart: routine, or the fault's
   * own lines (a fault has two: at most those two).
   */
  lines(fault: Fault | null, now = Date.now()): LogLine[] {
    const chosen = fault ? draw(fault.lines, 1 + Math.floor(Math.random() * 3)) : draw(ROUTINE, 1 + Math.floor(Math.random() * 3)).map(routine);
    return chosen.map(([source, level, message], i) => {
      if (level === "error") this.errors++;
      return { timestamp: new Date(now - (chosen.length - 1 - i) * 7).toISOString(), level, source, message };
    });
  }

  /** The error lines written since the previous call: a snapshot's errorCount. */
  takeErrorCount(): number {
    const errors = this.errors;
    this.errors = 0;
    return errors;
  }
}

/** A routine line of the table, its number filled in. */
function routine([source, level, text]: (typeof ROUTINE)[number]): readonly [string, LogLevel, string] {
  return [source, level, text(1 + Math.floor(Math.random() * 5))];
}
