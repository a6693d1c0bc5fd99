// What a device sends besides its heartbeat (docs/devices.md, "The agent protocol"): telemetry
// snapshots (POST /agent/telemetry) and log lines (POST /agent/logs), as the real agent and the
// simulator both build them.

/** What a snapshot takes from the machine (the real agent: agent/src/host/metrics.ts). */
export interface HostMetricsSample {
  cpuUsagePercent: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  diskUsedBytes: number;
  diskTotalBytes: number;
  uptimeSeconds: number;
}

export interface TelemetrySnapshot extends HostMetricsSample {
  timestamp: string;
  /** absent: the device does not count restarts */
  restartCount?: number;
  containersRunning: number;
  containersFailed: number;
  /** error lines written since the previous snapshot */
  errorCount: number;
}

export type LogLevel = "debug" | "info" | "warn" | "error";

export interface LogLine {
  timestamp: string;
  level: LogLevel;
  source: string;
  message: string;
  /** the agent's number of the line: the service stores a line sent again once (LogLines.seq) */
  seq?: number;
}
