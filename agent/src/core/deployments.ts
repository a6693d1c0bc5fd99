// A virtual device's deployments: it obeys the desired state each heartbeat answers and walks
// every deployment it was given through the agent states (docs/devices.md, docs/deployments.md):
//
//   install:  downloading -> installing -> running      (or failed, with a message)
//   remove:   removing -> removed
//
// Maintenance windows: `window: "download-only"` downloads and then waits (still downloading,
// nothing installed) until the window is open; `closed` does nothing yet. A higher `attempt`
// than the one it worked on (an automatic retry) starts the install again; every attempt draws
// its own failure, so a device that failed a fraction of attempts succeeds on a retry.
//
// Each step takes a random time within its configured range (scaled by `timeScale`; 0 makes
// every step immediate). A deployment that leaves the desired state (cancelled, superseded,
// removal confirmed or forced) is dropped; a new install of the same application replaces the
// one the device ran (upgrade, downgrade, rollback). State changes are reported in the next
// heartbeat and kept until a heartbeat carrying them succeeded. Free of I/O and of the real
// clock: the clock and the random source are injected, so the unit tests are deterministic.

/** The agent states a device reports (the service adds skipped, cancelled and superseded). */
export type AgentDeploymentState = "pending" | "downloading" | "installing" | "running" | "failed" | "removing" | "removed";

/** One entry of the heartbeat's desired state (src/modules/agent/schemas.ts). */
export interface DesiredDeploymentEntry {
  deploymentId: string;
  action: "install" | "remove";
  /** the install attempt (automatic retries count up); absent: 1 */
  attempt?: number;
  /** maintenance window: absent means open */
  window?: "open" | "download-only" | "closed";
  applicationId: string;
  version: string;
  profile?: { id: string; type: string; components: unknown };
  parameters?: Record<string, unknown>;
}

export interface DeploymentReport {
  deploymentId: string;
  state: AgentDeploymentState;
  message?: string;
  attempt?: number;
}

/** [min, max] milliseconds; each step draws uniformly from its range. */
export type DelayRange = readonly [number, number];

export interface DeploymentTimings {
  downloadMs: DelayRange;
  installMs: DelayRange;
  removeMs: DelayRange;
}

export const DEFAULT_DEPLOYMENT_TIMINGS: DeploymentTimings = {
  downloadMs: [2000, 8000],
  installMs: [1000, 4000],
  removeMs: [500, 2000],
};

export interface DeploymentAgentOptions {
  /** chance that an install fails (in its download or its install step), 0..1 */
  failureRate?: number;
  timings?: Partial<DeploymentTimings>;
  /** multiplies every delay: 1 real time, 0.01 a hundred times faster, 0 immediate */
  timeScale?: number;
  /** milliseconds; default Date.now */
  now?: () => number;
  /** uniform in [0, 1); default Math.random */
  random?: () => number;
  /** transitions kept per deployment in `history` (for tests and demos) */
  historyLimit?: number;
  /**
   * a deliberate failure plan: installs of these `name@version` (name: a component of the
   * profile, or the application id) fail on every attempt, in the install step, with a message
   * saying it is on purpose (`--fail-install`); they draw no random number
   */
  failInstalls?: readonly string[];
}

type Phase = "download" | "install";

export interface LocalDeployment {
  deploymentId: string;
  applicationId: string;
  version: string;
  action: "install" | "remove";
  state: AgentDeploymentState;
  message?: string;
  /** the install attempt it works on */
  attempt: number;
  /** the maintenance window allows installing (else: download, then wait) */
  mayInstall: boolean;
  /** the download is done and waits for the window */
  downloaded: boolean;
  /** when the current step ends; null when nothing is in flight */
  dueAt: number | null;
  /** the step an install will fail in (decided when it starts), null when it succeeds */
  failIn: Phase | null;
  /** the message of a failure planned on purpose (`failInstalls`) */
  plannedFailure?: string;
  /** the last state the service acknowledged (a heartbeat that carried it succeeded) */
  reportedState: AgentDeploymentState | null;
  reportedMessage?: string;
  /** every state this deployment went through on this device, oldest first */
  history: AgentDeploymentState[];
}

const IN_FLIGHT: ReadonlySet<AgentDeploymentState> = new Set(["pending", "downloading", "installing", "removing"]);

const FAILURE_MESSAGES: Record<Phase, readonly string[]> = {
  download: [
    "download failed: registry answered 503 Service Unavailable (simulated)",
    "download failed: connection reset while pulling the image (simulated)",
    "download failed: digest mismatch of layer 3 (simulated)",
  ],
  install: [
    "install failed: component exited with code 1 during start (simulated)",
    "install failed: not enough disk space (simulated)",
    "install failed: health check did not pass within 60 s (simulated)",
  ],
};

export class DeploymentAgent {
  private readonly entries = new Map<string, LocalDeployment>();
  private readonly failureRate: number;
  private readonly timings: DeploymentTimings;
  private readonly timeScale: number;
  private readonly now: () => number;
  private readonly random: () => number;
  private readonly historyLimit: number;
  private readonly failInstalls: ReadonlySet<string>;

  constructor(options: DeploymentAgentOptions = {}) {
    this.failureRate = options.failureRate ?? 0;
    this.timings = { ...DEFAULT_DEPLOYMENT_TIMINGS, ...options.timings };
    this.timeScale = options.timeScale ?? 1;
    this.now = options.now ?? Date.now;
    this.random = options.random ?? Math.random;
    this.historyLimit = options.historyLimit ?? 32;
    this.failInstalls = new Set(options.failInstalls ?? []);
    if (!(this.failureRate >= 0 && this.failureRate <= 1)) throw new Error("failureRate: a number from 0 to 1");
    if (!(this.timeScale >= 0)) throw new Error("timeScale: a number of at least 0");
    for (const [name, [min, max]] of Object.entries(this.timings)) {
      if (!(min >= 0 && max >= min)) throw new Error(`${name}: a range [min, max] with 0 <= min <= max`);
    }
  }

  /** The deployments the device holds now (in the order it got them). */
  list(): LocalDeployment[] {
    return [...this.entries.values()];
  }

  get(deploymentId: string): LocalDeployment | undefined {
    return this.entries.get(deploymentId);
  }

  /** Obeys a heartbeat's desired state. Call `advance` first so that due steps are taken. */
  apply(desired: readonly DesiredDeploymentEntry[]): void {
    const now = this.now();
    // One version of an application at a time: of several installs of one application (the
    // service never sends them, but an agent must decide), the last one listed wins.
    const latestInstall = new Map<string, string>();
    for (const d of desired) if (d.action === "install") latestInstall.set(d.applicationId, d.deploymentId);
    const obeyed = desired.filter((d) => d.action === "remove" || latestInstall.get(d.applicationId) === d.deploymentId);
    const wanted = new Set(obeyed.map((d) => d.deploymentId));
    // Gone from the desired state: cancelled, superseded, removal confirmed or forced.
    for (const id of [...this.entries.keys()]) if (!wanted.has(id)) this.entries.delete(id);

    for (const entry of obeyed) {
      const local = this.entries.get(entry.deploymentId);
      if (entry.action === "install") {
        const attempt = entry.attempt ?? 1;
        const window = entry.window ?? "open";
        if (local && local.action === "install" && attempt <= local.attempt) {
          // already on its way (or done): only the window may have opened
          local.mayInstall = window === "open";
          if (local.downloaded && local.mayInstall) {
            local.downloaded = false;
            this.enter(local, "installing", now, this.timings.installMs);
          }
          continue;
        }
        if (window === "closed") continue; // nothing yet: not even the download
        // Upgrade, downgrade, rollback: the new version of the application replaces the old one.
        for (const other of this.entries.values()) {
          if (other.applicationId === entry.applicationId && other.action === "install") this.entries.delete(other.deploymentId);
        }
        const planned = this.plannedFailure(entry);
        const failIn = planned ? "install" : this.random() < this.failureRate ? (this.random() < 0.5 ? "download" : "install") : null;
        const created: LocalDeployment = {
          deploymentId: entry.deploymentId,
          applicationId: entry.applicationId,
          version: entry.version,
          action: "install",
          state: "pending",
          attempt,
          mayInstall: window === "open",
          downloaded: false,
          dueAt: null,
          failIn,
          ...(planned ? { plannedFailure: planned } : {}),
          reportedState: null,
          history: [],
        };
        this.entries.set(entry.deploymentId, created);
        this.enter(created, "downloading", now, this.timings.downloadMs);
      } else {
        // A removal of something unknown (the agent restarted) is confirmed all the same.
        const target =
          local ??
          ({
            deploymentId: entry.deploymentId, applicationId: entry.applicationId, version: entry.version, action: "remove",
            state: "pending", attempt: 1, mayInstall: true, downloaded: false, dueAt: null, failIn: null, reportedState: null, history: [],
          } satisfies LocalDeployment);
        this.entries.set(entry.deploymentId, target);
        if (target.action === "remove" && target.state !== "pending") continue; // removing or removed already
        target.action = "remove";
        target.failIn = null;
        this.enter(target, "removing", now, this.timings.removeMs);
      }
    }
    this.advance();
  }

  /** Takes every step whose time has come (several at once when the clock jumped). */
  advance(): void {
    const now = this.now();
    for (const entry of this.entries.values()) {
      while (entry.dueAt !== null && entry.dueAt <= now) {
        const at = entry.dueAt;
        switch (entry.state) {
          case "downloading":
            if (entry.failIn === "download") this.fail(entry);
            else if (!entry.mayInstall) {
              // downloaded; the install waits for the maintenance window
              entry.downloaded = true;
              entry.dueAt = null;
            } else this.enter(entry, "installing", at, this.timings.installMs);
            break;
          case "installing":
            if (entry.failIn === "install") this.fail(entry);
            else this.settle(entry, "running");
            break;
          case "removing":
            this.settle(entry, "removed");
            break;
          default:
            entry.dueAt = null;
        }
      }
    }
  }

  /** What the next heartbeat reports: the current state of every deployment whose change the service has not acknowledged. */
  pendingReports(): DeploymentReport[] {
    this.advance();
    const reports: DeploymentReport[] = [];
    for (const e of this.entries.values()) {
      if (e.state === "pending") continue; // nothing to say yet
      if (e.state === e.reportedState && e.message === e.reportedMessage) continue;
      const report: DeploymentReport = { deploymentId: e.deploymentId, state: e.state, ...(e.message === undefined ? {} : { message: e.message }) };
      // the attempt, so that a late report of an earlier attempt cannot be taken for this one
      if (e.action === "install") report.attempt = e.attempt;
      reports.push(report);
    }
    return reports;
  }

  /** The heartbeat that carried `sent` succeeded: those states are known to the service. */
  acknowledge(sent: readonly DeploymentReport[]): void {
    for (const report of sent) {
      const entry = this.entries.get(report.deploymentId);
      if (!entry) continue;
      entry.reportedState = report.state;
      entry.reportedMessage = report.message;
    }
  }

  /** Something is downloading, installing or removing, or a change waits to be reported: heartbeat sooner. */
  busy(): boolean {
    for (const e of this.entries.values()) {
      if (IN_FLIGHT.has(e.state) || e.state !== e.reportedState || e.message !== e.reportedMessage) return true;
    }
    return false;
  }

  /** When the next step ends (null: nothing in flight). */
  nextDueAt(): number | null {
    let next: number | null = null;
    for (const e of this.entries.values()) if (e.dueAt !== null && (next === null || e.dueAt < next)) next = e.dueAt;
    return next;
  }

  /** Deployments by local state. */
  counts(): Record<AgentDeploymentState, number> {
    const counts = { pending: 0, downloading: 0, installing: 0, running: 0, failed: 0, removing: 0, removed: 0 };
    for (const e of this.entries.values()) counts[e.state]++;
    return counts;
  }

  /** The message of a failure `failInstalls` plans for this install, if it names it. */
  private plannedFailure(entry: DesiredDeploymentEntry): string | undefined {
    if (!this.failInstalls.size) return undefined;
    const components = Array.isArray(entry.profile?.components) ? (entry.profile.components as Array<{ name?: unknown }>) : [];
    const names = [entry.applicationId, ...components.map((c) => String(c?.name))];
    const planned = names.map((name) => `${name}@${entry.version}`).find((n) => this.failInstalls.has(n));
    return planned ? `install failed: ${planned} does not start on this device (simulated on purpose: --fail-install ${planned})` : undefined;
  }

  private delay([min, max]: DelayRange): number {
    return (min + this.random() * (max - min)) * this.timeScale;
  }

  private record(entry: LocalDeployment, state: AgentDeploymentState) {
    entry.state = state;
    entry.history.push(state);
    if (entry.history.length > this.historyLimit) entry.history.shift();
  }

  private enter(entry: LocalDeployment, state: AgentDeploymentState, from: number, range: DelayRange) {
    this.record(entry, state);
    entry.message = undefined;
    entry.dueAt = from + this.delay(range);
  }

  private settle(entry: LocalDeployment, state: AgentDeploymentState) {
    this.record(entry, state);
    entry.message = undefined;
    entry.dueAt = null;
  }

  private fail(entry: LocalDeployment) {
    const phase = entry.failIn ?? "install";
    const messages = FAILURE_MESSAGES[phase];
    this.record(entry, "failed");
    entry.message = entry.plannedFailure ?? messages[Math.min(messages.length - 1, Math.floor(this.random() * messages.length))];
    entry.dueAt = null;
  }
}
