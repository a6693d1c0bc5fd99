// The simulator engine: enrolls N virtual devices over the real agent protocol, then drives
// their heartbeats, telemetry and log lines on their own schedules (spread over the interval, so the
// server sees a steady rate). Each device obeys the desired state its heartbeats answer
// (deployment-agent.ts) and heartbeats sooner while a deployment is in flight, so that
// progress shows. Reused by the benchmarks (`heartbeatLoad`), the demo and the CLI.
import { EventEmitter } from "node:events";
import type { AgentDeploymentState } from "../../agent/src/core/deployments.js";
import type { DeploymentTimings } from "./virtual-runtime.js";
import { JsonClient } from "../../agent/src/core/json-client.js";
import { generateDeviceKeys, publicKeyPemOf, type DeviceKeyAlgorithm } from "../../agent/src/core/identity.js";
import { closedLoop, LatencyRecorder } from "./latency.js";
import { VirtualDevice } from "./virtual-device.js";
import { VirtualSystem, type SystemUpdateBehaviour } from "./virtual-system.js";
import { retryAfterMs } from "../../agent/src/core/outbox.js";
import { succeeded } from "../../agent/src/core/session.js";
import { seededRandom } from "./random.js";

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
  /**
   * makes the random choices repeatable: each device draws from streams derived from the seed
   * and its name (random.ts), so the same seed and prefix fail the same installs and start
   * the same health failures on the same devices; absent: Math.random
   */
  seed?: number;
  /** a deliberate failure plan: installs of these `name@version` fail on every device, every attempt (deployment-agent.ts) */
  failInstalls?: string[];
  /** a deliberate failure plan: these devices (reported ids, e.g. demo-000013) report `error` all along */
  failingDevices?: string[];
  /**
   * devices with RAUC (docs/os-updates.md): each reports its operating system, and a deployment's
   * system image is committed, or rolled back with the agent's reason (`--system-updates`)
   */
  systemUpdates?: SystemUpdateBehaviour;
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
  /**
   * told of every heartbeat, telemetry and log request the devices' loops made (benchmarks: latency and errors by kind);
   * `status` 0 = no answer, `items` the snapshots or log lines in the request
   */
  observe?: (kind: Task, ms: number, status: number, items: number) => void;
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
  /**
   * telemetry and log requests the service did not take for now (429/503 with Retry-After, 5xx,
   * no answer): their data stays in the device's outbox and is sent again after the delay
   */
  telemetryDeferred: number;
  logsDeferred: number;
  /** what the devices keep until the service takes it, and what they dropped (outbox full, or refused for good: 400/413) */
  waiting: { snapshots: number; logLines: number };
  dropped: { snapshots: number; logLines: number };
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

export type Task = "heartbeat" | "telemetry" | "logs";
type Upload = Exclude<Task, "heartbeat">;
const UPLOADS: Upload[] = ["telemetry", "logs"];

export class FleetSimulator extends EventEmitter {
  readonly devices: VirtualDevice[] = [];
  readonly client: JsonClient;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly latency = new LatencyRecorder();
  private readonly rejected = new Set<VirtualDevice>();
  /** devices without a connection for now (setOffline): they keep collecting, send nothing */
  private readonly offline = new Set<VirtualDevice>();
  private running = false;
  private counters = {
    enrolled: 0, enrollFailed: 0, heartbeatsOk: 0, heartbeatsFailed: 0, telemetryOk: 0, telemetryFailed: 0, telemetryDeferred: 0,
    logsOk: 0, logsFailed: 0, logsDeferred: 0, deploymentReports: 0,
  };
  /** a resend waiting out a Retry-After, per device and upload (at most one each) */
  private readonly retries = new Set<string>();
  /** a heartbeat answered 429/503: the next one not before this time */
  private readonly heartbeatNotBefore = new Map<VirtualDevice, number>();
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
    const deploymentOptions = {
      failureRate: options.deploymentFailureRate ?? options.failureRate, timings: options.deploymentTimings, timeScale, failInstalls: options.failInstalls,
    };
    const failing = new Set(options.failingDevices ?? []);
    const { seed } = options;
    for (let n = 1; n <= options.devices; n++) {
      const name = `${prefix}-${String(n).padStart(6, "0")}`;
      this.devices.push(new VirtualDevice(name, this.client, options.keyAlgorithm,
        {
          ...deploymentOptions, ...(seed === undefined ? {} : { random: seededRandom(seed, name, "deployments") }),
          ...(options.systemUpdates ? { system: new VirtualSystem(options.systemUpdates) } : {}),
        },
        { alwaysFailing: failing.has(name), ...(seed === undefined ? {} : { random: seededRandom(seed, name, "health") }) }));
    }
  }

  /** The token device `index` (0-based) enrolls with: round robin over `enrollmentTokens` when given. */
  enrollmentTokenOf(index: number): string {
    const tokens = this.options.enrollmentTokens;
    return tokens?.length ? tokens[index % tokens.length] : this.options.enrollmentToken;
  }

  /**
   * Instead of enrolling: each device makes its own key (as an agent does) and the benchmark has
   * its certificate issued in bulk (bench/support/seed-identities.ts). `keysMade` is told each
   * device's public key; `issued` answers, by reported device id, the device id and certificate.
   */
  async adoptSeededIdentities(
    publicKeys: (requests: Array<{ index: number; reportedDeviceId: string; publicKeyPem: string }>) => Promise<Map<string, { deviceId: string; certificatePem: string; notAfter: string }>>,
  ): Promise<void> {
    const requests = [];
    for (const [index, device] of this.devices.entries()) {
      device.keys = await generateDeviceKeys(this.options.keyAlgorithm ?? "ES256");
      requests.push({ index, reportedDeviceId: device.reportedDeviceId, publicKeyPem: await publicKeyPemOf(device.keys) });
    }
    const issued = await publicKeys(requests);
    for (const device of this.devices) {
      const identity = issued.get(device.reportedDeviceId);
      if (!identity) {
        this.fail("enroll", 0, `no certificate was seeded for ${device.reportedDeviceId}`);
        continue;
      }
      device.adoptCertificate(identity.deviceId, identity.certificatePem, identity.notAfter);
      this.counters.enrolled++;
    }
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
          if (succeeded(res)) this.counters.enrolled++;
          else this.fail("enroll", res.status, res.body);
        } catch (err) {
          this.fail("enroll", 0, (err as Error).message);
        }
        this.emit("progress");
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, this.options.enrollConcurrency ?? 8) }, worker));
  }

  /**
   * Takes a device off the network or brings it back: while offline its loops go on (it keeps
   * collecting telemetry and log lines into its outbox, as an agent does) but it sends nothing;
   * back, its next heartbeat and uploads go out, the backlog batch after batch.
   */
  setOffline(device: VirtualDevice, offline: boolean): void {
    if (offline) this.offline.add(device);
    else this.offline.delete(device);
  }

  isOffline(device: VirtualDevice): boolean {
    return this.offline.has(device);
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

  /**
   * Stops the loops, then sends what the devices still keep (waiting out each Retry-After, as
   * long as `timeoutMs` allows), then stops: a fleet that leaves nothing behind.
   */
  async drain(timeoutMs = 60_000): Promise<void> {
    this.running = false;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.retries.clear();
    await Promise.allSettled([...this.inFlight]);
    const deadline = Date.now() + timeoutMs;
    const holding = (device: VirtualDevice, upload: Upload) =>
      this.outboxOf(device, upload).size > 0 && !this.rejected.has(device) && !(upload === "telemetry" && this.telemetryUnavailable);
    await Promise.all(this.devices.filter((d) => d.deviceId).flatMap((device) => UPLOADS.map(async (upload) => {
      while (holding(device, upload) && Date.now() + this.outboxOf(device, upload).waitMs() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, this.outboxOf(device, upload).waitMs()));
        await this.deliver(device, upload);
      }
    })));
    await this.stop();
  }

  /** Stops all loops and waits for requests in flight (what the devices still keep is not sent: `drain` sends it). */
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
      waiting: this.outboxTotals((o) => o.size),
      dropped: this.outboxTotals((o) => o.dropped),
      heartbeatLatency: this.latency.summary(),
      deployments: this.deploymentCounts(),
    };
  }

  private outboxOf(device: VirtualDevice, upload: Upload) {
    return upload === "telemetry" ? device.telemetryOutbox : device.logOutbox;
  }

  private outboxTotals(count: (outbox: VirtualDevice["telemetryOutbox"] | VirtualDevice["logOutbox"]) => number) {
    return {
      snapshots: this.devices.reduce((sum, d) => sum + count(d.telemetryOutbox), 0),
      logLines: this.devices.reduce((sum, d) => sum + count(d.logOutbox), 0),
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
   * round-robin over the enrolled devices. Returns rate and latency percentiles; `latency`
   * (when given) records every heartbeat too, so that several loads can be summed.
   */
  async heartbeatLoad(durationMs: number, concurrency: number, latency = new LatencyRecorder()) {
    const enrolled = this.devices.filter((d) => d.deviceId);
    if (enrolled.length === 0) throw new Error("no enrolled devices");
    // Sign every token up front: the load generator should measure the server, not itself.
    await Promise.all(enrolled.map((d) => d.authorization()));
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
          // +-5 % jitter, like real agents, so devices do not synchronize; a busy service's Retry-After first.
          const notBefore = task === "heartbeat" ? (this.heartbeatNotBefore.get(device) ?? 0) - Date.now() : 0;
          this.schedule(device, task, Math.max(notBefore, interval * (0.95 + Math.random() * 0.1)));
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
        if (this.offline.has(device)) return;
        const t0 = performance.now();
        const res = await device.heartbeat(first).catch((err: Error) => {
          this.options.observe?.("heartbeat", performance.now() - t0, 0, 0);
          throw err;
        });
        this.latency.record(performance.now() - t0);
        this.options.observe?.("heartbeat", performance.now() - t0, res.status, 0);
        if (res.status === 200) {
          this.counters.heartbeatsOk++;
          this.counters.deploymentReports += device.lastReported;
          this.heartbeatNotBefore.delete(device);
        } else {
          this.counters.heartbeatsFailed++;
          if (res.status === 401) this.rejected.add(device);
          const wait = res.status === 429 || res.status === 503 ? retryAfterMs(res.headers["retry-after"], Date.now()) : null;
          if (wait !== null) this.heartbeatNotBefore.set(device, Date.now() + wait);
          this.fail("heartbeat", res.status, res.body);
        }
      } else {
        if (task === "telemetry") device.collectTelemetry();
        else device.collectLogs();
        await this.deliver(device, task);
      }
    } catch (err) {
      if (task === "heartbeat") this.counters.heartbeatsFailed++;
      else if (task === "logs") this.counters.logsFailed++;
      else this.counters.telemetryFailed++;
      this.lastError = `${task}: ${(err as Error).message}`;
    }
    this.emit("progress");
  }

  /**
   * Sends what the device's outbox holds for `upload`, batch after batch, until it is empty or
   * the service defers it: then one resend is scheduled after the Retry-After (outbox.ts), while
   * the regular loop goes on collecting.
   */
  private async deliver(device: VirtualDevice, upload: Upload): Promise<void> {
    const [ok, failed, deferred] = upload === "telemetry"
      ? (["telemetryOk", "telemetryFailed", "telemetryDeferred"] as const)
      : (["logsOk", "logsFailed", "logsDeferred"] as const);
    for (;;) {
      if (this.offline.has(device)) return; // kept in the outbox until the device is back
      const t0 = performance.now();
      const result = await (upload === "telemetry" ? device.deliverTelemetry() : device.deliverLogs());
      const status = result.delivery?.status ?? 0;
      if (result.outcome === "idle") return;
      this.options.observe?.(upload, performance.now() - t0, status, result.items);
      if (result.outcome === "sent") {
        this.counters[ok]++;
        continue; // a backlog goes out batch after batch
      }
      if (upload === "telemetry" && status === 404) {
        this.telemetryUnavailable = true; // the service does not offer telemetry: stop quietly
        return;
      }
      if (status === 401) this.rejected.add(device);
      if (result.outcome === "dropped") {
        this.counters[failed]++;
        this.fail(upload, status, result.delivery?.body);
        continue;
      }
      this.counters[deferred]++;
      if (status !== 429 && status !== 503) this.lastError = `${upload}${status ? ` ${status}` : ""}: ${result.error?.message ?? "not taken; kept for a resend"}`;
      if (!this.rejected.has(device)) this.scheduleRetry(device, upload, result.waitMs ?? 0);
      return;
    }
  }

  private scheduleRetry(device: VirtualDevice, upload: Upload, waitMs: number) {
    const key = `${device.reportedDeviceId}:${upload}`;
    if (!this.running || this.retries.has(key)) return;
    this.retries.add(key);
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.retries.delete(key);
      void this.track(this.deliver(device, upload)).catch((err: Error) => (this.lastError = `${upload}: ${err.message}`));
    }, waitMs);
    this.timers.add(timer);
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
