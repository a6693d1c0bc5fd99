// One simulated device speaking the agent protocol: enroll with a CSR, then heartbeats,
// telemetry and log lines signed with its own key, through the agent's own session (the typed
// tRPC client, the heartbeat on its lean REST route: agent/src/core/session.ts). Failures are simulated: with the configured probability
// a heartbeat reports `error` (and telemetry shows failing containers) until it recovers.
// Each heartbeat reports the progress of the device's deployments and hands the desired state
// it answers to the device's DeploymentAgent (agent/src/core/deployments.ts, on the virtual runtime), which obeys it,
// and its configuration revision to a VirtualConfiguration, which takes it at once and reports it applied.
import type { DeploymentAgent, DesiredDeploymentEntry } from "../../agent/src/core/deployments.js";
import { virtualDeploymentAgent, type DeploymentAgentOptions } from "./virtual-runtime.js";
import type { JsonClient, JsonResponse } from "../../agent/src/core/json-client.js";
import type { DeviceKeyAlgorithm } from "../../agent/src/core/identity.js";
import { DeviceSession, type EnrollAnswer, type HeartbeatAnswer, type RenewAnswer } from "../../agent/src/core/session.js";
import { faultOf, LogModel, type Fault, type LogLine } from "./log-lines.js";
import { MetricsModel, type TelemetrySnapshot } from "./metrics.js";
import { Outbox, retryAfterMs, type FlushResult } from "../../agent/src/core/outbox.js";
import { VirtualConfiguration } from "./virtual-configuration.js";
import type { VirtualSystem } from "./virtual-system.js";

export type { EnrollAnswer, HeartbeatAnswer } from "../../agent/src/core/session.js";

const AGENT_VERSION = "fleet-simulator/1.0";
/** snapshots per telemetry request at most (the agent endpoint's limit) */
const TELEMETRY_BATCH = 1000;
/** log lines per request at most (the agent endpoint's limit) */
const LOG_BATCH = 1000;

const ARCHITECTURES = ["arm64", "arm64", "arm64", "amd64", "amd64", "armv7"] as const;

export class VirtualDevice extends DeviceSession {
  failing = false;
  /** what is wrong while it fails (null otherwise): the one fault its heartbeat, telemetry and logs all tell */
  get fault(): Fault | null {
    return this.failing ? faultOf(this.reportedDeviceId) : null;
  }
  private readonly metrics = new MetricsModel();
  private readonly logs = new LogModel();
  /** the deployments this device was given, and their progress */
  readonly deployments: DeploymentAgent;
  /** the configuration revision it holds: every full one taken at once and reported applied */
  readonly configuration = new VirtualConfiguration();

  constructor(
    readonly reportedDeviceId: string,
    client: JsonClient,
    algorithm: DeviceKeyAlgorithm = "ES256",
    deploymentOptions: DeploymentAgentOptions = {},
    health: { random?: () => number; alwaysFailing?: boolean } = {},
  ) {
    super(client, algorithm);
    this.deployments = virtualDeploymentAgent(deploymentOptions);
    this.systemModel = deploymentOptions.system;
    this.healthRandom = health.random ?? Math.random;
    this.alwaysFailing = health.alwaysFailing ?? false;
    this.failing = this.alwaysFailing;
  }

  /** the health dice (seeded with `--seed`) */
  private readonly healthRandom: () => number;
  /** reports `error` from its first heartbeat on and never recovers (`--failing-device`, on purpose) */
  readonly alwaysFailing: boolean;

  /** the device's operating system, for a device with RAUC (deploymentOptions.system): reported with every heartbeat */
  get system(): VirtualSystem | undefined {
    return this.systemModel;
  }
  private readonly systemModel: VirtualSystem | undefined;

  facts() {
    return {
      os: "Linux 6.6 (simulated)",
      // A fleet of mixed hardware, stable per device: mostly arm64, some amd64, a few armv7.
      arch: ARCHITECTURES[[...this.reportedDeviceId].reduce((sum, c) => sum + c.charCodeAt(0), 0) % ARCHITECTURES.length],
      agentVersion: AGENT_VERSION,
      hardwareModel: "SimBoard v2",
      simulated: true,
      ...(this.systemModel ? { rauc: true } : {}),
    };
  }

  enroll(enrollmentToken: string): Promise<JsonResponse<EnrollAnswer>> {
    return this.enrollWith({ enrollmentToken, reportedDeviceId: this.reportedDeviceId, facts: this.facts() });
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
    const { response, reported } = await this.exchangeHeartbeat(this.deployments, {
      ...(this.fault ? { status: "error", message: this.fault.reason } : { status: "online" }),
      ...(includeFacts ? { facts: this.facts() } : {}),
      ...(this.systemModel ? { system: this.systemModel.report() } : {}),
    }, undefined, this.configuration);
    if (response.status === 200) this.lastReported = reported.length;
    return response;
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
  sendTelemetry(): Promise<JsonResponse> {
    return this.sendTelemetryBatch([this.metrics.snapshot(this.fault, this.logs.takeErrorCount())]);
  }

  /** A batch of log lines in one request, as is (the model's, or the ones given): no outbox, no resend. */
  sendLogs(entries: LogLine[] = this.logs.lines(this.fault)): Promise<JsonResponse> {
    return this.sendLogBatch(entries);
  }

  /** Sends the oldest batch of kept snapshots, if any and not waiting out a Retry-After. */
  deliverTelemetry(): Promise<FlushResult> {
    return this.telemetryOutbox.flush((snapshots) => this.sendTelemetryBatch(snapshots));
  }

  /** Sends the oldest batch of kept log lines, if any and not waiting out a Retry-After. */
  deliverLogs(): Promise<FlushResult> {
    return this.logOutbox.flush((entries) => this.sendLogBatch(entries));
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
        last = await this.sendTelemetryBatch(snapshots);
        const wait = last.status === 429 || last.status === 503 ? retryAfterMs(last.headers["retry-after"], Date.now()) : null;
        if (wait === null) break;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
      if (last.status >= 300) return last;
    }
    return last;
  }

  /** A new key and certificate, authenticated with the current one. */
  override renewCertificate(): Promise<JsonResponse<RenewAnswer>> {
    return super.renewCertificate(this.reportedDeviceId);
  }
}
