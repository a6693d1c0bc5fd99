// One simulated device speaking the agent protocol: enroll with a CSR, then heartbeats,
// telemetry and log lines signed with its own key. Failures are simulated: with the configured probability
// a heartbeat reports `error` (and telemetry shows failing containers) until it recovers.
// Each heartbeat reports the progress of the device's deployments and hands the desired state
// it answers to the device's DeploymentAgent (agent/src/core/deployments.ts, on the virtual runtime), which obeys it.
import type { DeploymentAgent, DesiredDeploymentEntry } from "../../agent/src/core/deployments.js";
import { virtualDeploymentAgent, type DeploymentAgentOptions } from "./virtual-runtime.js";
import type { JsonClient, JsonResponse } from "../../agent/src/core/json-client.js";
import { createCsr, generateDeviceKeys, signDeviceToken, x5tS256, type DeviceKeyAlgorithm, type DeviceKeys } from "../../agent/src/core/identity.js";
import { faultOf, LogModel, type Fault, type LogLine } from "./log-lines.js";
import { MetricsModel, type TelemetrySnapshot } from "./metrics.js";
import { Outbox, retryAfterMs, type FlushResult } from "../../agent/src/core/outbox.js";

export interface EnrollAnswer {
  deviceId: string;
  certificate: string;
  caChain: string[];
  certificateNotAfter: string;
  heartbeatIntervalSeconds: number;
}

export interface HeartbeatAnswer {
  heartbeatIntervalSeconds: number;
  deployments: DesiredDeploymentEntry[];
}

const TOKEN_LIFETIME_SECONDS = 300;
/** a token is reused until this close to its expiry (signing per request would be wasteful) */
const TOKEN_REFRESH_MARGIN_SECONDS = 60;
const AGENT_VERSION = "fleet-simulator/1.0";
/** snapshots per telemetry request at most (the agent endpoint's limit) */
const TELEMETRY_BATCH = 1000;
/** log lines per request at most (the agent endpoint's limit) */
const LOG_BATCH = 1000;

const ARCHITECTURES = ["arm64", "arm64", "arm64", "amd64", "amd64", "armv7"] as const;

export class VirtualDevice {
  keys!: DeviceKeys;
  deviceId: string | null = null;
  certificatePem: string | null = null;
  certificateNotAfter: Date | null = null;
  failing = false;
  /** what is wrong while it fails (null otherwise): the one fault its heartbeat, telemetry and logs all tell */
  get fault(): Fault | null {
    return this.failing ? faultOf(this.reportedDeviceId) : null;
  }
  private x5t = "";
  private token: { value: string; expiresAt: number } | null = null;
  private readonly metrics = new MetricsModel();
  private readonly logs = new LogModel();
  /** the deployments this device was given, and their progress */
  readonly deployments: DeploymentAgent;

  constructor(
    readonly reportedDeviceId: string,
    private readonly client: JsonClient,
    private readonly algorithm: DeviceKeyAlgorithm = "ES256",
    deploymentOptions: DeploymentAgentOptions = {},
    health: { random?: () => number; alwaysFailing?: boolean } = {},
  ) {
    this.deployments = virtualDeploymentAgent(deploymentOptions);
    this.healthRandom = health.random ?? Math.random;
    this.alwaysFailing = health.alwaysFailing ?? false;
    this.failing = this.alwaysFailing;
  }

  /** the health dice (seeded with `--seed`) */
  private readonly healthRandom: () => number;
  /** reports `error` from its first heartbeat on and never recovers (`--failing-device`, on purpose) */
  readonly alwaysFailing: boolean;

  facts() {
    return {
      os: "Linux 6.6 (simulated)",
      // A fleet of mixed hardware, stable per device: mostly arm64, some amd64, a few armv7.
      arch: ARCHITECTURES[[...this.reportedDeviceId].reduce((sum, c) => sum + c.charCodeAt(0), 0) % ARCHITECTURES.length],
      agentVersion: AGENT_VERSION,
      hardwareModel: "SimBoard v2",
      simulated: true,
    };
  }

  async enroll(enrollmentToken: string): Promise<JsonResponse<EnrollAnswer>> {
    this.keys = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(this.keys, this.reportedDeviceId);
    const res = await this.client.request<EnrollAnswer>("POST", "/api/v1/agent/enroll", {
      enrollmentToken,
      reportedDeviceId: this.reportedDeviceId,
      csr,
      facts: this.facts(),
    });
    if (res.status === 201) this.adoptCertificate(res.body.deviceId, res.body.certificate, res.body.certificateNotAfter);
    return res;
  }

  /** Picks up an identity enrolled elsewhere (benchmarks hand devices between processes). */
  adoptCertificate(deviceId: string, certificatePem: string, notAfter: string) {
    this.deviceId = deviceId;
    this.certificatePem = certificatePem;
    this.certificateNotAfter = new Date(notAfter);
    this.x5t = x5tS256(certificatePem);
    this.token = null;
  }

  async authorization(): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    if (!this.token || this.token.expiresAt - now < TOKEN_REFRESH_MARGIN_SECONDS) {
      if (!this.deviceId) throw new Error("device is not enrolled");
      const value = await signDeviceToken(this.keys, { deviceId: this.deviceId, x5t: this.x5t, lifetimeSeconds: TOKEN_LIFETIME_SECONDS });
      this.token = { value, expiresAt: now + TOKEN_LIFETIME_SECONDS };
    }
    return `Bearer ${this.token.value}`;
  }

  /** Rolls the failure dice: start failing with `failureRate`, recover with probability one half. */
  updateHealth(failureRate: number) {
    if (this.alwaysFailing) this.failing = true;
    else if (this.failing) this.failing = this.healthRandom() >= 0.5;
    else this.failing = this.healthRandom() < failureRate;
  }

  /**
   * One heartbeat: status (and facts), plus the deployment states the service has not
   * acknowledged yet. On success those are acknowledged and the desired state answered is
   * obeyed; on failure they are sent again next time.
   */
  async heartbeat(includeFacts = false): Promise<JsonResponse<HeartbeatAnswer>> {
    const reports = this.deployments.pendingReports();
    const res = await this.client.request<HeartbeatAnswer>(
      "POST",
      "/api/v1/agent/heartbeat",
      {
        ...(this.fault ? { status: "error", message: this.fault.reason } : { status: "online" }),
        ...(includeFacts ? { facts: this.facts() } : {}),
        ...(reports.length ? { deployments: reports } : {}),
      },
      { authorization: await this.authorization() },
    );
    if (res.status === 200) {
      this.deployments.acknowledge(reports);
      if (Array.isArray(res.body?.deployments)) this.deployments.apply(res.body.deployments);
      this.lastReported = reports.length;
    }
    return res;
  }

  /** deployment reports the last successful heartbeat carried */
  lastReported = 0;

  /**
   * Telemetry and log lines wait here until the service has taken them (outbox.ts): a busy
   * service's 429/503 defers them by its Retry-After, nothing is lost. Capacity: about 40
   * hours of snapshots every 15 s, and as many log lines.
   */
  readonly telemetryOutbox = new Outbox<TelemetrySnapshot>({ capacity: 10_000, batchSize: TELEMETRY_BATCH });
  readonly logOutbox = new Outbox<LogLine>({ capacity: 10_000, batchSize: LOG_BATCH });

  /** A snapshot now, into the outbox (sent by `deliverTelemetry`). */
  collectTelemetry() {
    this.telemetryOutbox.add([this.metrics.snapshot(this.fault, this.logs.takeErrorCount())]);
  }

  /** A few log lines now (the model's: routine, or trouble while failing), into the outbox (sent by `deliverLogs`). */
  collectLogs() {
    this.logOutbox.add(this.logs.lines(this.fault));
  }

  /** One snapshot in one request, as is: no outbox, no resend (tests and tools). */
  async sendTelemetry(): Promise<JsonResponse> {
    return this.client.request("POST", "/api/v1/agent/telemetry", { snapshots: [this.metrics.snapshot(this.fault, this.logs.takeErrorCount())] }, {
      authorization: await this.authorization(),
    });
  }

  /** A batch of log lines in one request, as is (the model's, or the ones given): no outbox, no resend. */
  async sendLogs(entries: LogLine[] = this.logs.lines(this.fault)): Promise<JsonResponse> {
    return this.client.request("POST", "/api/v1/agent/logs", { entries }, {
      authorization: await this.authorization(),
    });
  }

  /** Sends the oldest batch of kept snapshots, if any and not waiting out a Retry-After. */
  deliverTelemetry(): Promise<FlushResult> {
    return this.telemetryOutbox.flush(async (snapshots) => this.client.request("POST", "/api/v1/agent/telemetry", { snapshots }, { authorization: await this.authorization() }));
  }

  /** Sends the oldest batch of kept log lines, if any and not waiting out a Retry-After. */
  deliverLogs(): Promise<FlushResult> {
    return this.logOutbox.flush(async (entries) => this.client.request("POST", "/api/v1/agent/logs", { entries }, { authorization: await this.authorization() }));
  }

  /**
   * What an agent sends after a time without a connection: the snapshots it kept, one every
   * `stepMs` from `fromMs` until `toMs`, in batches of at most `TELEMETRY_BATCH` (the endpoint's
   * limit); a batch the service is too busy for (429/503) is sent again after its Retry-After.
   * Used to give a new fleet some history (`npm run screenshots`).
   */
  async sendTelemetryHistory(fromMs: number, stepMs: number, toMs = Date.now()): Promise<JsonResponse> {
    const times: number[] = [];
    for (let t = fromMs; t <= toMs; t += stepMs) times.push(t);
    let last: JsonResponse = { status: 200, body: undefined, headers: {} };
    for (let i = 0; i < times.length; i += TELEMETRY_BATCH) {
      const snapshots = times.slice(i, i + TELEMETRY_BATCH).map((t) => this.metrics.snapshot(this.fault, 0, t)); // no log lines of those times
      for (;;) {
        last = await this.client.request("POST", "/api/v1/agent/telemetry", { snapshots }, { authorization: await this.authorization() });
        const wait = last.status === 429 || last.status === 503 ? retryAfterMs(last.headers["retry-after"], Date.now()) : null;
        if (wait === null) break;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
      if (last.status >= 300) return last;
    }
    return last;
  }

  /** A new key and certificate, authenticated with the current one. */
  async renewCertificate(): Promise<JsonResponse<{ certificate: string; certificateNotAfter: string }>> {
    const authorization = await this.authorization();
    const next = await generateDeviceKeys(this.algorithm);
    const csr = await createCsr(next, this.reportedDeviceId);
    const res = await this.client.request<{ certificate: string; certificateNotAfter: string }>(
      "POST", "/api/v1/agent/certificate/renew", { csr }, { authorization },
    );
    if (res.status === 201 && this.deviceId) {
      this.keys = next;
      this.adoptCertificate(this.deviceId, res.body.certificate, res.body.certificateNotAfter);
    }
    return res;
  }
}
