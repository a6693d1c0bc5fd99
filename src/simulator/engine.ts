// The simulator engine: enrolls N virtual devices over the real agent protocol, then drives
// their heartbeats, telemetry and log lines on their own schedules (spread over the interval, so the
// server sees a steady rate). Each device obeys the desired state its heartbeats answer
// (deployment-agent.ts) and heartbeats sooner while a deployment is in flight, so that
// progress shows. Reused by the benchmarks (`heartbeatLoad`), the demo and the CLI.
import { EventEmitter } from "node:events";
import type { AgentDeploymentState, DeploymentTimings } from "./deployment-agent.js";
import { JsonClient } from "./http-client.js";
import type { DeviceKeyAlgorithm } from "./identity.js";
import { closedLoop, LatencyRecorder } from "./latency.js";
import { VirtualDevice } from "./virtual-device.js";

export interface SimulatorOptions {
  /** service base URL, e.g. http://localhost:3000 */
  url: string;
  enrollmentToken: string;
  /**
   * several enrollment tokens: device n enrolls with token n mod their number, so the fleet
   * carries each token's labels (one token per time zone with a `tz` label puts the devices in
   * several time zones for maintenance windows); `enrollmentToken` is then not used
   */
  enrollmentTokens?: string[];
  devices: number;
  heartbeatMs: number;
  /** 0 = no telemetry */
  telemetryMs: number;
  /** how often each device sends a few log lines; 0 or absent = none */
  logsMs?: number;
  /** chance per heartbeat interval that a healthy device starts failing (reports error) */
  failureRate: number;
  /** chance that a deployment fails on a device (reports failed with a message); default failureRate */
  deploymentFailureRate?: number;
  /** how long downloading, installing and removing take: [min, max] ms each (default 2-8 s, 1-4 s, 0.5-2 s) */
  deploymentTimings?: Partial<DeploymentTimings>;
  /** multiplies the deployment delays: 1 real time (default), 0.01 a hundred times faster, 0 immediate */
  timeScale?: number;
  /** heartbeat interval while a deployment is in flight or a change waits to be reported (default 1 s x timeScale, 100 ms to heartbeatMs) */
  busyHeartbeatMs?: number;
  /** reported device ids are `${idPrefix}-${n}` (default: a random run id) */
  idPrefix?: string;
  enrollConcurrency?: number;
  keyAlgorithm?: DeviceKeyAlgorithm;
  /** connections to the service (default 64) */
  maxSockets?: number;
}

export interface SimulatorStats {
  devices: number;
  enrolled: number;
  enrollFailed: number;
  heartbeatsOk: number;
  heartbeatsFailed: number;
  telemetryOk: number;
  telemetryFailed: number;
  /** the service answered 404 for telemetry: it does not offer it (yet); sending stops */
  telemetryUnavailable: boolean;
  logsOk: number;
  logsFailed: number;
  failing: number;
  /** devices the service refused (401: revoked, deleted); they stop */
  rejected: number;
  lastError: string | null;
  heartbeatLatency: ReturnType<LatencyRecorder["summary"]>;
  /** the deployments the devices hold, by local state */
  deployments: Record<AgentDeploymentState, number>;
  /** deployment state changes delivered to the service (heartbeats that carried them succeeded) */
  deploymentReports: number;
}

type Task = "heartbeat" | "telemetry" | "logs";

export class FleetSimulator extends EventEmitter {
  readonly devices: VirtualDevice[] = [];
  readonly client: JsonClient;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly latency = new LatencyRecorder();
  private readonly rejected = new Set<VirtualDevice>();
  private running = false;
  private counters = { enrolled: 0, enrollFailed: 0, heartbeatsOk: 0, heartbeatsFailed: 0, telemetryOk: 0, telemetryFailed: 0, logsOk: 0, logsFailed: 0, deploymentReports: 0 };
  private readonly healthRolledAt = new Map<VirtualDevice, number>();
  readonly busyHeartbeatMs: number;
  private telemetryUnavailable = false;
  private lastError: string | null = null;

  constructor(readonly options: SimulatorOptions) {
    super();
    this.client = new JsonClient(options.url, options.maxSockets ?? 64);
    const prefix = options.idPrefix ?? `sim-${Date.now().toString(36)}`;
    const timeScale = options.timeScale ?? 1;
    this.busyHeartbeatMs = Math.min(options.heartbeatMs, options.busyHeartbeatMs ?? Math.max(100, 1000 * timeScale));
    const deploymentOptions = { failureRate: options.deploymentFailureRate ?? options.failureRate, timings: options.deploymentTimings, timeScale };
    for (let n = 1; n <= options.devices; n++) {
      this.devices.push(new VirtualDevice(`${prefix}-${String(n).padStart(6, "0")}`, this.client, options.keyAlgorithm, deploymentOptions));
    }
  }

  /** The token device `index` (0-based) enrolls with: round robin over `enrollmentTokens` when given. */
  enrollmentTokenOf(index: number): string {
    const tokens = this.options.enrollmentTokens;
    return tokens?.length ? tokens[index % tokens.length] : this.options.enrollmentToken;
  }

  /** Enrolls every device, `enrollConcurrency` at a time; resolves when all have been tried. */
  async enrollAll(signal?: AbortSignal): Promise<void> {
    let next = 0;
    const worker = async () => {
      while (next < this.devices.length && !signal?.aborted) {
        const index = next++;
        const device = this.devices[index];
        try {
          const res = await this.track(device.enroll(this.enrollmentTokenOf(index)));
          if (res.status === 201) this.counters.enrolled++;
          else this.fail("enroll", res.status, res.body);
        } catch (err) {
          this.fail("enroll", 0, (err as Error).message);
        }
        this.emit("progress");
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.options.enrollConcurrency ?? 8) }, worker));
  }

  private get logsMs(): number {
    return this.options.logsMs ?? 0;
  }

  /** Starts each enrolled device's heartbeat (and telemetry and log) loop, spread over the interval. */
  startTraffic(): void {
    this.running = true;
    for (const device of this.devices) {
      if (!device.deviceId) continue;
      this.schedule(device, "heartbeat", Math.random() * this.options.heartbeatMs, true);
      if (this.options.telemetryMs > 0) this.schedule(device, "telemetry", Math.random() * this.options.telemetryMs);
      if (this.logsMs > 0) this.schedule(device, "logs", Math.random() * this.logsMs);
    }
  }

  /** Stops all loops and waits for requests in flight. */
  async stop(): Promise<void> {
    this.running = false;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
    this.client.close();
  }

  stats(): SimulatorStats {
    return {
      devices: this.devices.length,
      ...this.counters,
      telemetryUnavailable: this.telemetryUnavailable,
      failing: this.devices.filter((d) => d.failing).length,
      rejected: this.rejected.size,
      lastError: this.lastError,
      heartbeatLatency: this.latency.summary(),
      deployments: this.deploymentCounts(),
    };
  }

  /** The deployments the devices hold, by local state. */
  deploymentCounts(): Record<AgentDeploymentState, number> {
    const total = { pending: 0, downloading: 0, installing: 0, running: 0, failed: 0, removing: 0, removed: 0 };
    for (const device of this.devices) {
      const counts = device.deployments.counts();
      for (const state of Object.keys(total) as AgentDeploymentState[]) total[state] += counts[state];
    }
    return total;
  }

  /**
   * Benchmark mode: heartbeats as fast as `concurrency` closed loops allow for `durationMs`,
   * round-robin over the enrolled devices. Returns rate and latency percentiles.
   */
  async heartbeatLoad(durationMs: number, concurrency: number) {
    const enrolled = this.devices.filter((d) => d.deviceId);
    if (enrolled.length === 0) throw new Error("no enrolled devices");
    // Sign every token up front: the load generator should measure the server, not itself.
    await Promise.all(enrolled.map((d) => d.authorization()));
    const latency = new LatencyRecorder();
    let ok = 0;
    let failed = 0;
    const started = performance.now();
    await closedLoop(concurrency, durationMs, async (_worker, i) => {
      const device = enrolled[i % enrolled.length];
      const t0 = performance.now();
      try {
        const res = await device.heartbeat();
        if (res.status === 200) ok++;
        else {
          failed++;
          this.lastError = `heartbeat ${res.status}: ${JSON.stringify(res.body).slice(0, 200)}`;
        }
      } catch (err) {
        failed++;
        this.lastError = (err as Error).message;
      }
      latency.record(performance.now() - t0);
    });
    const seconds = (performance.now() - started) / 1000;
    return { ok, failed, seconds, perSecond: ok / seconds, latency: latency.summary() };
  }

  private schedule(device: VirtualDevice, task: Task, delayMs: number, first = false) {
    if (!this.running) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      void this.track(this.runTask(device, task, first)).finally(() => {
        // While a deployment is in flight (or a change waits to be reported) the device checks in sooner.
        const interval =
          task === "heartbeat" ? (device.deployments.busy() ? this.busyHeartbeatMs : this.options.heartbeatMs)
          : task === "telemetry" ? this.options.telemetryMs : this.logsMs;
        if (!this.rejected.has(device) && !(task === "telemetry" && this.telemetryUnavailable)) {
          // +-5 % jitter, like real agents, so devices do not synchronize.
          this.schedule(device, task, interval * (0.95 + Math.random() * 0.1));
        }
      });
    }, delayMs);
    this.timers.add(timer);
  }

  private async runTask(device: VirtualDevice, task: Task, first: boolean) {
    try {
      if (task === "heartbeat") {
        // The health dice are rolled once per regular interval, not on every quick heartbeat of a busy device.
        const now = Date.now();
        if (now - (this.healthRolledAt.get(device) ?? 0) >= this.options.heartbeatMs * 0.9) {
          this.healthRolledAt.set(device, now);
          device.updateHealth(this.options.failureRate);
        }
        const t0 = performance.now();
        const res = await device.heartbeat(first);
        this.latency.record(performance.now() - t0);
        if (res.status === 200) {
          this.counters.heartbeatsOk++;
          this.counters.deploymentReports += device.lastReported;
        } else {
          this.counters.heartbeatsFailed++;
          if (res.status === 401) this.rejected.add(device);
          this.fail("heartbeat", res.status, res.body);
        }
      } else if (task === "logs") {
        const res = await device.sendLogs();
        if (res.status >= 200 && res.status < 300) this.counters.logsOk++;
        else {
          this.counters.logsFailed++;
          if (res.status === 401) this.rejected.add(device);
          this.fail("logs", res.status, res.body);
        }
      } else {
        const res = await device.sendTelemetry();
        if (res.status >= 200 && res.status < 300) this.counters.telemetryOk++;
        else if (res.status === 404) this.telemetryUnavailable = true;
        else {
          this.counters.telemetryFailed++;
          if (res.status === 401) this.rejected.add(device);
          this.fail("telemetry", res.status, res.body);
        }
      }
    } catch (err) {
      if (task === "heartbeat") this.counters.heartbeatsFailed++;
      else if (task === "logs") this.counters.logsFailed++;
      else this.counters.telemetryFailed++;
      this.lastError = `${task}: ${(err as Error).message}`;
    }
    this.emit("progress");
  }

  private fail(what: string, status: number, body: unknown) {
    if (what === "enroll") this.counters.enrollFailed++;
    const message = body && typeof body === "object" && "message" in body ? String((body as { message: unknown }).message) : String(body);
    this.lastError = `${what}${status ? ` ${status}` : ""}: ${message.slice(0, 200)}`;
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise)).catch(() => undefined);
    return promise;
  }
}
