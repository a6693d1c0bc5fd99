// `fleet-agent run`: the device's loop. The same protocol core as every simulated device
// (agent/src/core: session, deployment state machine, outbox) on the real machine: the
// container engine (workloads.ts), /proc and statfs (host/), the real clock, and a state
// directory that carries everything across restarts (state-dir.ts).
//
// * Heartbeats at the interval the service answers, sooner (every second) while a deployment
//   step runs or a change waits to be reported; a 429/503 waits its Retry-After (busy or not:
//   the next heartbeat no sooner, as the protocol asks); an unreachable
//   service is logged once per outage and asked again, while the workloads keep running.
// * A certificate the service refuses (revoked, expired, device deleted: 401/403) stops the
//   agent with exit code 78 and says so: asking again cannot help, and systemd's unit does not
//   restart it for that code (RestartPreventExitStatus=78).
// * Renews its certificate, with a new key, once two thirds of its validity have passed.
// * Telemetry snapshots and log lines (its own and its containers') wait in on-disk outboxes
//   until the service took them (2xx), so an outage or a restart loses none that fit. The first
//   snapshot is taken at start (and so after every restart), not an interval later: a device's
//   Telemetry tab fills as soon as it is online.
import { X509Certificate } from "node:crypto";
import fsp from "node:fs/promises";
import { DeploymentAgent, type LocalDeployment } from "./core/deployments.js";
import { JsonClient } from "./core/json-client.js";
import { Outbox, retryAfterMs, type Delivery, type OutboxStore } from "./core/outbox.js";
import type { LogLevel, LogLine as LogEntry, TelemetrySnapshot } from "./core/reports.js";
import { DeviceSession, succeeded } from "./core/session.js";
import { readFacts } from "./host/facts.js";
import { HostMetrics } from "./host/metrics.js";
import { stopOrphanedCommands } from "./host/orphans.js";
import { loadIdentity, loadKey, loadTpmKeyBlob, storeCredentials, wipeIdentity, type StoredIdentity } from "./identity-store.js";
import { Tpm } from "./tpm.js";
import type { ComposeEngine, ProjectContainer } from "./runtime/engine.js";
import type { StateDir } from "./state-dir.js";
import { ComposeRuntime } from "./workloads.js";
import { AGENT_VERSION } from "./version.js";
import { ActionRunner } from "./actions/runner.js";
import { actionSettingsFromEnv, type ActionSettings } from "./actions/settings.js";
import { leaseHold } from "./actions/leases.js";
import { defaultRemoteAccess, type RemoteAccessConfig } from "./remote/config.js";
import { RemoteAccess } from "./remote/remote-access.js";
import { OsUpdater, type HealthCheck } from "./os-update/updater.js";
import { systemImageInstaller } from "./os-update/deployment-hand-over.js";
import { healthDirFromEnv, runHealthDir } from "./os-update/health-dir.js";
import type { SystemReport } from "./core/session.js";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ConfigurationAgent, configurationSettingsFromEnv, type ConfigurationSettings } from "./config/configuration.js";

export interface AgentOptions {
  state: StateDir;
  engine: ComposeEngine;
  /** default 60 s */
  telemetryIntervalMs?: number;
  /** how often container logs are collected and log lines sent; default 30 s (each look runs the engine's CLI once per container) */
  logIntervalMs?: number;
  /** heartbeat spacing while something is in flight; default 1 s (never sooner than a Retry-After the service answered) */
  busyHeartbeatMs?: number;
  /** telemetry snapshots kept at most while the service does not take them; default 10,000 (beyond, the oldest are dropped) */
  telemetryCapacity?: number;
  /** log lines kept at most while the service does not take them; default 20,000 (beyond, the oldest are dropped) */
  logCapacity?: number;
  /** where the agent's own lines go besides the service (the journal, through stdout) */
  print?: (line: string) => void;
  /** the device's word on remote access (agent/src/remote/config.ts); default: the defaults of docs/remote-access.md */
  remoteAccess?: RemoteAccessConfig;
  /** device actions: reboot command, boot id, leases; default from the environment (agent/src/actions/settings.ts) */
  actions?: ActionSettings;
  /** the device's health checks of a new system (executables); default FLEET_AGENT_HEALTH_DIR or /etc/fleet-agent/health.d */
  healthDir?: string;
  /** how often the OS update takes its next step; default 2 s */
  osUpdateTickMs?: number;
  /** configuration files: allowed roots, drift interval, activation timeout; default from the environment (agent/src/config/configuration.ts) */
  configuration?: ConfigurationSettings;
}

/** The agent stopped because the service refuses its certificate: no restart can help. */
export const EXIT_CREDENTIALS_REFUSED = 78;
/** The agent stopped to be started again (a restart-agent action): the unit's Restart=always starts it. */
export const EXIT_RESTART_ASKED = 75;
/** the agent's last lines kept for a diagnostics bundle */
const RECENT_LINES = 500;
const SOURCE = "fleet-agent";
const TELEMETRY_BATCH = 1000;
const LOG_BATCH = 1000;
/** how long one look at the containers serves (the telemetry and the log collection falling due together share it) */
const CONTAINER_LOOK_MS = 5000;

/** An outbox kept as one JSON file in the state directory, rewritten atomically at each change. */
export function fileStore<T>(state: StateDir, name: string): OutboxStore<T> {
  return {
    load: () => {
      const items = state.readJson<T[]>(`outbox/${name}.json`);
      return Array.isArray(items) ? items : [];
    },
    save: (items) => state.writeJson(`outbox/${name}.json`, items),
  };
}

/** When a certificate is renewed (ms since the epoch): once two thirds of its validity have passed, so a failed renewal has a third of it to try again. */
export function renewalDueAt(certificatePem: string): number {
  const cert = new X509Certificate(certificatePem);
  const from = Date.parse(cert.validFrom);
  const to = Date.parse(cert.validTo);
  return from + ((to - from) * 2) / 3;
}

export class FleetAgent {
  private identity!: StoredIdentity;
  private session!: DeviceSession;
  private deployments!: DeploymentAgent;
  private runtime!: ComposeRuntime;
  private actions!: ActionRunner;
  private actionSettings!: ActionSettings;
  private configuration!: ConfigurationAgent;
  private readonly recentLines: string[] = [];
  /** remote access (agent/src/remote): the long-poll and the sessions it serves */
  private remote: RemoteAccess | null = null;
  /** OS updates with RAUC (agent/src/os-update, docs/os-updates.md) */
  private osUpdate!: OsUpdater;
  /** when a heartbeat was first answered 200 in this run (the OS update's "the service is reached" check) */
  private reachedServiceAt: Date | null = null;
  private readonly metrics = new HostMetrics();
  private readonly telemetry: Outbox<TelemetrySnapshot>;
  private readonly logs: Outbox<LogEntry>;
  private nextLogSeq = Date.now() * 1000;
  private readonly timers = new Set<NodeJS.Timeout>();
  private wakeHeartbeat: (() => void) | null = null;
  private stopped = false;
  /** the runs of `every` under way that `stop` waits for */
  private readonly runningTasks = new Set<Promise<void>>();
  private outageSince: number | null = null;
  private errorLines = 0;
  private facts: Awaited<ReturnType<typeof readFacts>> | null = null;
  private factsReadAt = 0;
  private resolveDone!: (code: number) => void;
  private containerLook: { at: number; containers: Promise<ProjectContainer[]> } | null = null;
  /** per container id: its log file (null: none to watch), and its size:mtime when its log was last read */
  private readonly logFiles = new Map<string, string | null>();
  private readonly logFileSeen = new Map<string, string>();
  /** the exit code once the agent stopped (0: asked to stop) */
  readonly done = new Promise<number>((resolve) => (this.resolveDone = resolve));
  /** when the heartbeat last succeeded (status) */
  lastHeartbeatAt: Date | null = null;

  constructor(private readonly options: AgentOptions) {
    this.telemetry = new Outbox<TelemetrySnapshot>({ capacity: options.telemetryCapacity ?? 10_000, batchSize: TELEMETRY_BATCH, store: fileStore(options.state, "telemetry") });
    this.logs = new Outbox<LogEntry>({ capacity: options.logCapacity ?? 20_000, batchSize: LOG_BATCH, store: fileStore(options.state, "logs") });
  }

  log(level: LogLevel, message: string, source = SOURCE) {
    (this.options.print ?? console.log)(`${level}: ${message}`);
    this.recentLines.push(`${new Date().toISOString()} ${level}: ${message}`);
    if (this.recentLines.length > RECENT_LINES) this.recentLines.shift();
    if (level === "error") this.errorLines++;
    this.addLogLines([{ timestamp: new Date().toISOString(), level, source, message: message.slice(0, 8000) }]);
  }

  /**
   * Numbers each line (the service stores a line sent again once: its device, timestamp and
   * number) and keeps it for sending. The count starts at the microseconds since the epoch, so
   * it keeps growing across restarts while the clock does.
   */
  private addLogLines(lines: LogEntry[]) {
    this.logs.add(lines.map((line) => ({ ...line, seq: this.nextLogSeq++ })));
  }

  async start(): Promise<void> {
    const { state } = this.options;
    state.ensure();
    this.identity = loadIdentity(state);
    this.session = new DeviceSession(new JsonClient(this.identity.serviceUrl, 4, 60_000));
    if (this.identity.keyKind === "tpm") {
      // the key stays in the TPM: every token is signed there, renewals are re-attested
      const tpm = new Tpm();
      this.session.tpm = tpm;
      this.session.heldKey = tpm.keyOf(loadTpmKeyBlob(state, this.identity.keyFile));
    } else {
      this.session.keys = await loadKey(state, this.identity.keyFile);
    }
    const certificate = state.readText(this.identity.certificateFile);
    if (!certificate) throw new Error(`${state.path(this.identity.certificateFile)} is missing; enroll again`);
    this.session.adoptCertificate(this.identity.deviceId, certificate, this.identity.certificateNotAfter);

    this.runtime = new ComposeRuntime({
      engine: this.options.engine, session: this.session, state, serviceUrl: this.identity.serviceUrl,
      onSettled: () => {
        this.saveDeployments();
        this.wake();
      },
      log: (level, message) => this.log(level, message),
      // a deployment's system image goes to the OS updater (created below, before any step runs)
      systemImages: systemImageInstaller({
        updater: () => (this.osUpdate as OsUpdater | undefined), serviceUrl: this.identity.serviceUrl, log: (level, message) => this.log(level, message),
      }),
    });
    this.deployments = new DeploymentAgent({ runtime: this.runtime });
    // before any step begins again: nothing of the previous run may still be working
    const orphans = await stopOrphanedCommands(state.path("releases"));
    if (orphans.length) this.log("warn", `stopped ${orphans.length} engine command(s) a previous run of the agent left running`);
    // nothing of a previous run's remote sessions may still be running (kill -9 of the agent)
    this.remote = new RemoteAccess({
      serviceUrl: this.identity.serviceUrl, authorization: () => this.session.authorization(),
      config: this.options.remoteAccess ?? defaultRemoteAccess(), state, log: (level, message) => this.log(level, message),
    });
    await this.remote.start();
    const saved = state.readJson<LocalDeployment[]>("deployments.json") ?? [];
    this.deployments.restore(saved);
    const inFlight = new Set(this.deployments.list().filter((d) => d.state !== "removed").map((d) => d.applicationId));
    await this.runtime.removeLeftovers(inFlight);
    this.log("info", `fleet-agent ${AGENT_VERSION} runs as device ${this.identity.deviceId} for ${this.identity.serviceUrl} on ${this.options.engine.kind}` +
      (saved.length ? `; carrying on with ${saved.length} deployment(s)` : ""));

    this.actionSettings = this.options.actions ?? actionSettingsFromEnv();
    this.actions = new ActionRunner({
      state, settings: this.actionSettings, engine: this.options.engine,
      installed: () => this.runtime.installed(), exclusive: (task) => this.runtime.exclusive(task),
      renewCertificate: () => this.renewIfDue(true), uploadBundle: (id, data) => this.session.uploadActionBundle(id, data),
      status: () => this.status(), recentLines: () => [...this.recentLines], collectTelemetry: () => this.collectTelemetry(),
      log: (level, message) => this.log(level, message), wake: () => this.wake(), restartAgent: () => void this.stop(EXIT_RESTART_ASKED),
    });
    await this.actions.start();
    // a configuration revision a crash interrupted is completed or rolled back before the first heartbeat
    const configSettings = this.options.configuration ?? configurationSettingsFromEnv(state.dir);
    this.configuration = new ConfigurationAgent({ state, settings: configSettings, log: (level, message) => this.log(level, message), wake: () => this.wake() });
    this.configuration.start();

    const settings = this.actionSettings;
    this.osUpdate = new OsUpdater({
      state,
      reboot: async () => void (await promisify(execFile)("sh", ["-c", settings.rebootCommand], { timeout: 120_000 })),
      bootId: async () => (await fsp.readFile(settings.bootIdFile, "utf8")).trim(),
      log: (level, message) => this.log(level, message),
      changed: () => this.wake(),
      serviceHeaders: async () => ({ authorization: await this.session.authorization() }),
    });
    // before the first heartbeat: its facts say which slot booted and how an update across a reboot went
    await this.osUpdate.start();

    void this.heartbeatLoop();
    this.every(this.options.osUpdateTickMs ?? 2000, () => this.osUpdate.tick(this.healthChecks()), { atOnce: true });
    this.every(configSettings.driftIntervalMs, () => this.configuration.checkDrift());
    // a snapshot at once (its CPU figure: the average since boot, HostMetrics), then one per interval
    this.every(this.options.telemetryIntervalMs ?? 60_000, () => this.collectTelemetry(), { atOnce: true, awaitedOnStop: true });
    this.every(this.options.logIntervalMs ?? 30_000, () => this.collectContainerLogs(), { awaitedOnStop: true });
  }

  /** Stops the loops and ends the remote sessions; the workloads keep running. */
  async stop(code = 0): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    // a batch already on its way is let arrive: once `done` resolves, the agent sends nothing more
    await Promise.allSettled(this.runningTasks);
    await this.remote?.stop();
    this.wake();
    if (this.deployments) this.saveDeployments();
    this.session?.close();
    this.resolveDone(code);
  }

  /** What `fleet-agent status` shows. */
  status() {
    return {
      deviceId: this.identity?.deviceId,
      lastHeartbeatAt: this.lastHeartbeatAt?.toISOString() ?? null,
      deployments: this.deployments?.list().map((d) => ({ deploymentId: d.deploymentId, applicationId: d.applicationId, version: d.version, state: d.state })),
      actions: this.actions?.list(),
      configuration: this.configuration?.status() ?? null,
      remoteSessions: this.remote?.active ?? 0,
      telemetryWaiting: this.telemetry.size,
      logLinesWaiting: this.logs.size,
      /** dropped since the agent started: past the buffer's bound (oldest first), or refused for good (400, 413) */
      telemetryDropped: this.telemetry.dropped,
      logLinesDropped: this.logs.dropped,
    };
  }

  /** The heartbeat's `system` (a device with RAUC: what booted, the last update's outcome), absent without RAUC. */
  private systemReport(): { system?: SystemReport } {
    const system = this.osUpdate.systemReport();
    this.systemPending = null;
    if (!system) return {};
    const text = JSON.stringify(system);
    // sent when it changed and at least every 10th heartbeat (the service keeps it, and writes
    // only what changed): most heartbeats cost the service nothing for it
    if (this.systemSent?.text === text && this.systemSent.heartbeats < 10) {
      this.systemSent.heartbeats++;
      return {};
    }
    this.systemPending = text;
    return { system };
  }

  /** the system report the service took last, and the heartbeats since */
  private systemSent: { text: string; heartbeats: number } | null = null;
  /** the one the heartbeat under way carries */
  private systemPending: string | null = null;

  /**
   * What a new system must pass on its trial boot before it is marked good: the agent reaches
   * the service (a heartbeat answered since this start), and the deployed applications run
   * (every container of every installed release running, none exited or unhealthy), and every
   * check of the device's health directory passes (os-update/health-dir.ts).
   */
  private healthChecks(): Record<string, HealthCheck> {
    return {
      service: async () => (this.reachedServiceAt ? null : "no heartbeat was answered since the boot"),
      applications: async () => {
        const projects = Object.values(this.runtime.installed()).flatMap((r) => r.projects.map((p) => p.name));
        if (!projects.length) return null;
        const containers = await this.options.engine.containersOf(projects);
        const down = containers.filter((c) => c.state !== "running" || c.health === "unhealthy").map((c) => `${c.name} ${c.health === "unhealthy" ? "unhealthy" : c.state}`);
        if (!containers.length) return `no container of ${projects.join(", ")} exists`;
        return down.length ? down.join(", ") : null;
      },
      // the device's own checks: scripts the new image brings or the configuration wrote
      device: () => runHealthDir(this.options.healthDir ?? healthDirFromEnv()),
    };
  }

  /**
   * Runs `task` every `ms` (and at once with `atOnce`), never two runs at a time. A run of an
   * `awaitedOnStop` task (a batch on its way to the service) is let finish by `stop`; others (an
   * OS image download) are not waited for.
   */
  private every(ms: number, task: () => Promise<void>, options: { atOnce?: boolean; awaitedOnStop?: boolean } = {}) {
    let running = false;
    const run = () => {
      if (running || this.stopped) return;
      running = true;
      const ran: Promise<void> = task().catch((error: Error) => this.log("warn", error.message)).finally(() => {
        running = false;
        this.runningTasks.delete(ran);
      });
      if (options.awaitedOnStop) this.runningTasks.add(ran);
    };
    this.timers.add(setInterval(run, ms));
    if (options.atOnce) run();
  }

  private wake() {
    this.wakeHeartbeat?.();
  }

  /** Waits `ms`; a settled deployment step ends the wait early unless `wakeable` is false (a Retry-After runs); stopping always does. */
  private sleep(ms: number, wakeable = true): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeHeartbeat = () => {
        if (wakeable || this.stopped) done();
      };
    });
  }

  private saveDeployments() {
    this.options.state.writeJson("deployments.json", this.deployments.snapshot());
  }

  private async heartbeatLoop(): Promise<void> {
    while (!this.stopped) {
      let waitMs = this.identity.heartbeatIntervalSeconds * 1000;
      /** the service said when to come back (429/503 Retry-After): not even a busy deployment asks sooner */
      let toldToWait = false;
      try {
        await this.renewIfDue();
        // Facts go with every heartbeat (read again hourly): a heartbeat without them makes the
        // service take the request's source address for the device's (a NAT's, a proxy's).
        if (!this.facts || Date.now() - this.factsReadAt > 3_600_000) {
          this.facts = await readFacts({ agentVersion: AGENT_VERSION });
          this.factsReadAt = Date.now();
        }
        // "not now": a lease an application holds defers installs too, as it does disruptive actions
        this.deployments.holdInstalls(await leaseHold(this.actionSettings));
        const { response } = await this.session.exchangeHeartbeat(this.deployments, { status: "online", facts: { ...this.facts, ...this.osUpdate.facts(), ...this.configuration.facts() }, ...this.systemReport() }, this.actions, this.configuration);
        const message = (response.body as { message?: string } | undefined)?.message ?? `HTTP ${response.status}`;
        if (response.status === 200) {
          if (this.systemPending) this.systemSent = { text: this.systemPending, heartbeats: 1 };
          this.lastHeartbeatAt = new Date();
          this.reachedServiceAt ??= this.lastHeartbeatAt;
          if (this.outageSince !== null) {
            this.log("info", `the service answers again after ${Math.round((Date.now() - this.outageSince) / 1000)} s`);
            this.outageSince = null;
          }
          const interval = response.body.heartbeatIntervalSeconds;
          if (Number.isInteger(interval) && interval > 0 && interval !== this.identity.heartbeatIntervalSeconds) {
            this.identity = { ...this.identity, heartbeatIntervalSeconds: interval };
            this.options.state.writeJson("identity.json", this.identity);
          }
          waitMs = this.identity.heartbeatIntervalSeconds * 1000;
          this.saveDeployments();
          this.actions.tick();
          this.remote?.onHeartbeat(response.body.remoteAccess);
        } else if (response.status === 401 && response.headers["fleet-device-decommissioned"] === "true") {
          wipeIdentity(this.options.state);
          this.log("error", `the service says this device was decommissioned (${message}); its identity is wiped and the agent stops. Workloads keep running.`);
          await this.stop(EXIT_CREDENTIALS_REFUSED);
          return;
        } else if (response.status === 401 || response.status === 403) {
          const expiredAt = this.certificateExpiredAt();
          this.log("error", `the service refuses this device's certificate (${response.status}: ${message})` +
            (expiredAt ? `: it expired at ${expiredAt} and was not renewed in time` : "") + "; the agent stops asking. " +
            "Workloads keep running. Enroll the device again (fleet-agent enroll --force) once the cause is fixed.");
          await this.stop(EXIT_CREDENTIALS_REFUSED);
          return;
        } else if (response.status === 429 || response.status === 503) {
          const retryAfter = retryAfterMs(response.headers["retry-after"], Date.now());
          toldToWait = retryAfter !== null;
          waitMs = retryAfter ?? waitMs;
        } else {
          this.log("warn", `heartbeat answered ${response.status}: ${message}`);
        }
      } catch (error) {
        if (this.outageSince === null) {
          this.outageSince = Date.now();
          this.log("warn", `the service cannot be reached (${(error as Error).message}); workloads keep running, the agent keeps trying`);
        }
        waitMs = Math.min(waitMs, 15_000);
      }
      if ((this.deployments.busy() || this.actions.busy() || this.configuration.busy()) && !toldToWait) waitMs = Math.min(waitMs, this.options.busyHeartbeatMs ?? 1000);
      if (!this.stopped) await this.sleep(waitMs, !toldToWait);
    }
  }

  /** When the certificate expired, by this machine's clock (its validTo); null while it is valid. */
  private certificateExpiredAt(): string | null {
    const pem = this.session.certificatePem;
    if (!pem) return null;
    const notAfter = Date.parse(new X509Certificate(pem).validTo);
    return Date.now() >= notAfter ? new Date(notAfter).toISOString() : null;
  }

  /** A new key and certificate once two thirds of the certificate's validity have passed (`now`: at once, a renew-certificate action). */
  private async renewIfDue(now = false): Promise<string> {
    const pem = this.session.certificatePem;
    // an expired certificate cannot renew itself: the heartbeat then hears the service's refusal
    if (!pem || (!now && Date.now() < renewalDueAt(pem)) || this.certificateExpiredAt()) return "no renewal due";
    const res = await this.session.renewCertificate(this.identity.reportedDeviceId);
    if (!succeeded(res)) {
      // refused (401/403): the heartbeat that follows hears it too, says so and stops
      const refused = `certificate renewal answered ${res.status}` +
        (res.status === 401 || res.status === 403 ? "" : `; the certificate stays valid until ${new X509Certificate(pem).validTo}`);
      this.log("warn", refused);
      if (now) throw new Error(refused);
      return refused;
    }
    this.identity = await storeCredentials(
      this.options.state,
      { ...this.identity, certificateId: res.body.certificateId, certificateNotAfter: res.body.certificateNotAfter },
      this.session.currentKey, res.body.certificate, res.body.caChain,
    );
    this.log("info", `certificate renewed with a new key; valid until ${res.body.certificateNotAfter}`);
    return `certificate renewed with a new key; valid until ${res.body.certificateNotAfter}`;
  }

  /**
   * The containers of every installed project: one engine command for all of them, and one look
   * shared by the telemetry and the log collection when they fall due together (within
   * CONTAINER_LOOK_MS): the idle loop's cost is its engine commands (docs/agent.md, "Idle cost").
   */
  private ourContainers(): Promise<ProjectContainer[]> {
    const now = Date.now();
    if (this.containerLook && now - this.containerLook.at < CONTAINER_LOOK_MS) return this.containerLook.containers;
    const projects = Object.values(this.runtime.installed()).flatMap((r) => r.projects.map((p) => p.name));
    const containers = this.options.engine.containersOf(projects);
    this.containerLook = { at: now, containers };
    containers.catch(() => (this.containerLook = null));
    return containers;
  }

  /**
   * Whether a container may have written since its log was last read: false only when the
   * engine's log file (k8s-file, json-file) has the size and time it had then. Answers the
   * file's state to remember once the log was read.
   */
  private async logUnchanged(container: ProjectContainer): Promise<{ unchanged: boolean; seen: string | null }> {
    if (!this.logFiles.has(container.id)) this.logFiles.set(container.id, await this.options.engine.logFile(container.name).catch(() => null));
    const file = this.logFiles.get(container.id);
    if (!file) return { unchanged: false, seen: null };
    try {
      const stat = await fsp.stat(file);
      const seen = `${stat.size}:${stat.mtimeMs}`;
      return { unchanged: this.logFileSeen.get(container.id) === seen, seen };
    } catch {
      return { unchanged: false, seen: null };
    }
  }

  private async collectTelemetry(): Promise<void> {
    const [sample, containers] = await Promise.all([this.metrics.sample(), this.ourContainers().catch(() => [] as ProjectContainer[])]);
    const failed = containers.filter((c) => c.state === "exited" || c.state === "dead" || c.health === "unhealthy").length;
    this.telemetry.add([{
      timestamp: new Date().toISOString(),
      ...sample,
      containersRunning: containers.filter((c) => c.state === "running").length,
      containersFailed: failed,
      errorCount: this.errorLines,
    }]);
    this.errorLines = 0;
    await this.flush(this.telemetry, (batch) => this.session.sendTelemetryBatch(batch));
  }

  /** New lines of every container of ours since the last look (cursors kept across restarts). */
  private async collectContainerLogs(): Promise<void> {
    const cursors = this.options.state.readJson<Record<string, string>>("log-cursors.json") ?? {};
    const next: Record<string, string> = {};
    const containers = await this.ourContainers();
    for (const id of this.logFiles.keys()) if (!containers.some((c) => c.id === id)) [this.logFiles, this.logFileSeen].forEach((m) => m.delete(id));
    for (const container of containers) {
      // a container not seen before: from its first line (it may have written before its
      // project counted as running), at most the last 1,000
      const cursor = cursors[container.id];
      // nothing written since the last read: no engine command (a stat of its log file)
      const { unchanged, seen } = await this.logUnchanged(container);
      if (unchanged && cursor) {
        next[container.id] = cursor;
        continue;
      }
      const lines = await this.options.engine.logs(container.name, cursor ? new Date(cursor) : new Date(0), cursor ? {} : { tail: 1000 }).catch(() => []);
      const fresh = lines.filter((line) => !cursor || line.timestamp > cursor).filter((line) => line.message.trim() !== "");
      const last = fresh.length ? fresh[fresh.length - 1].timestamp : cursor;
      if (last) next[container.id] = last;
      if (seen) this.logFileSeen.set(container.id, seen);
      this.addLogLines(fresh.map((line) => ({
        timestamp: new Date(line.timestamp).toISOString(),
        level: line.stream === "stderr" ? "warn" : "info",
        source: `${container.service}`.slice(0, 100),
        message: line.message.slice(0, 8000),
      })));
    }
    const text = JSON.stringify(next);
    if (text !== JSON.stringify(cursors)) this.options.state.writeJson("log-cursors.json", next);
    await this.flush(this.logs, (batch) => this.session.sendLogBatch(batch));
  }

  private async flush<T>(outbox: Outbox<T>, send: (batch: T[]) => Promise<Delivery>): Promise<void> {
    for (;;) {
      const result = await outbox.flush(send);
      if (result.outcome !== "sent") return;
    }
  }
}
