// Plausible device telemetry: values that wander (random walks with bounds) rather than
// jump, with counters that only grow.
import type { TelemetrySnapshot } from "../../agent/src/core/reports.js";

export type { TelemetrySnapshot };

import type { Fault } from "./log-lines.js";

const GiB = 1024 ** 3;
const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

export class MetricsModel {
  private cpu = 5 + Math.random() * 30;
  private readonly memoryTotal = [2, 4, 8, 16][Math.floor(Math.random() * 4)] * GiB;
  private memoryShare = 0.2 + Math.random() * 0.4;
  private readonly diskTotal = [16, 32, 64, 128][Math.floor(Math.random() * 4)] * GiB;
  private diskShare = 0.1 + Math.random() * 0.5;
  // Booted seven to eight days ago: history an agent sends for up to the last week
  // (sendTelemetryHistory; the console benchmark sends 10,000 minutes) has a positive uptime.
  private readonly bootedAt = Date.now() - 7 * 86_400_000 - Math.floor(Math.random() * 86_400_000);
  private restarts = 0;
  private containers = 1 + Math.floor(Math.random() * 6);

  /**
   * The device's figures now: while it has a fault, the container the fault stops is the failed
   * one, and `errors` (the error lines its logs hold since the previous snapshot) its errorCount.
   */
  snapshot(fault: Fault | null, errors = 0, now = Date.now()): TelemetrySnapshot {
    const failing = fault !== null;
    this.cpu = clamp(this.cpu + (Math.random() - 0.5) * 10 + (failing ? 15 : 0), 0, 100);
    this.memoryShare = clamp(this.memoryShare + (Math.random() - 0.5) * 0.04, 0.05, 0.98);
    this.diskShare = clamp(this.diskShare + Math.random() * 0.0005, 0.01, 0.99);
    if (failing && Math.random() < 0.2) this.restarts++;
    const failed = fault?.container ? 1 : 0;
    return {
      timestamp: new Date(now).toISOString(),
      cpuUsagePercent: Math.round(this.cpu * 10) / 10,
      memoryUsedBytes: Math.round(this.memoryTotal * this.memoryShare),
      memoryTotalBytes: this.memoryTotal,
      diskUsedBytes: Math.round(this.diskTotal * this.diskShare),
      diskTotalBytes: this.diskTotal,
      uptimeSeconds: Math.floor((now - this.bootedAt) / 1000),
      restartCount: this.restarts,
      containersRunning: this.containers - failed,
      containersFailed: failed,
      errorCount: errors,
    };
  }
}
