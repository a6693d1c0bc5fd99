// Plausible device log lines, so that a simulated fleet has something to read and follow in
// the console's Logs tab: a healthy device writes routine lines of its agent, its container
// runtime and its system; a failing one writes warnings and errors that match the failure its
// heartbeat reports (restarts, exits, resource pressure).
export type LogLevel = "debug" | "info" | "warn" | "error";

export interface LogLine {
  timestamp: string;
  level: LogLevel;
  source: string;
  message: string;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)];

const ROUTINE: readonly [string, LogLevel, (n: number) => string][] = [
  ["agent", "info", () => "heartbeat acknowledged"],
  ["agent", "debug", (n) => `desired state unchanged (${n} entries)`],
  ["agent", "info", (n) => `telemetry batch sent (${n} snapshot${n === 1 ? "" : "s"})`],
  ["containerd", "info", (n) => `health check passed for ${n} container${n === 1 ? "" : "s"}`],
  ["kernel", "info", () => "eth0: link up, 1000 Mbps full duplex"],
  ["systemd", "info", () => "Started Daily rotation of log files."],
  ["ntpd", "info", (n) => `clock offset ${(n / 10).toFixed(1)} ms, in sync`],
];

const TROUBLE: readonly [string, LogLevel, (n: number) => string][] = [
  ["containerd", "error", (n) => `container app-${n} exited with code 137 (out of memory)`],
  ["containerd", "warn", (n) => `container app-${n} restarting (back-off ${n * 10} s)`],
  ["agent", "warn", (n) => `heartbeat took ${n * 400} ms (slow uplink)`],
  ["kernel", "warn", () => "thermal zone0: temperature above threshold, throttling"],
  ["agent", "error", () => "failed to pull image: context deadline exceeded"],
];

export class LogModel {
  /** One to three lines as of `now`, a few milliseconds apart. */
  lines(failing: boolean, now = Date.now()): LogLine[] {
    const count = 1 + Math.floor(Math.random() * 3);
    return Array.from({ length: count }, (_, i) => {
      const [source, level, text] = failing && Math.random() < 0.7 ? pick(TROUBLE) : pick(ROUTINE);
      return { timestamp: new Date(now - (count - 1 - i) * 7).toISOString(), level, source, message: text(1 + Math.floor(Math.random() * 5)) };
    });
  }
}
