// A device's deployments: it obeys the desired state each heartbeat answers and walks every
// deployment it was given through the agent states (docs/devices.md, docs/deployments.md):
//
//   install:  downloading -> installing -> running      (or failed, with a message)
//   remove:   removing -> removed
//
// Maintenance windows: `window: "download-only"` downloads and then waits (still downloading,
// nothing installed) until the window is open; `closed` does nothing yet. A higher `attempt`
// than the one it worked on (an automatic retry) starts the install again, and so does a new
// revision (version, profile, parameters, or their rendered hash: a device variable changed)
// under the same deployment (an in-place upgrade).
//
// The steps themselves are carried out by a DeploymentRuntime: the simulator's virtual one
// (timers and dice, src/simulator/virtual-runtime.ts) or the real agent's container engine
// (agent/src/runtime). This machine is the same for both, so the simulated fleet and a real
// device obey a desired state alike. A deployment that leaves the desired state (cancelled,
// superseded, removal confirmed or forced) is dropped; a new install of the same application
// replaces the one the device ran (upgrade, downgrade, rollback). State changes are reported in
// the next heartbeat and kept until a heartbeat carrying them succeeded. Free of I/O and of the
// real clock (both injected), so it can be saved (`snapshot`) and restored after a restart.

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
  /**
   * sha256 of the parameters as the service rendered them for this device (device variables,
   * docs/configuration.md): another one re-creates the deployment's projects in place
   */
  parametersHash?: string;
  /** with install: the OS update (a RAUC bundle) the profile's system-image component asks; installed first (docs/os-updates.md) */
  systemImage?: SystemImageEntry;
}

/** The system image of a desired deployment, as the service hands it (docs/agent.md). */
export interface SystemImageEntry {
  component: string;
  /** the bundle's http(s) URL; null: an oci:// bundle, fetched from the service's relay (bundlePath) */
  url: string | null;
  /** an oci:// bundle: the service's path relaying it (device token, Range requests) */
  bundlePath?: string;
  repository: string;
  /** sha256:<hex> of the bundle */
  digest: string;
  version: string;
}

/** The release a device brought up again when an upgrade failed (a device-side rollback). */
export interface RolledBackTo {
  /** the deployment it was installed by (for an upgrade in place: the upgraded deployment's own id) */
  deploymentId: string;
  version: string;
}

export interface DeploymentReport {
  deploymentId: string;
  state: AgentDeploymentState;
  message?: string;
  attempt?: number;
  /** with failed: what runs instead (the service shows that version running on the device again) */
  rolledBackTo?: RolledBackTo;
}

/** The work a deployment's state stands for: fetch what it needs, start it, take it down. */
export type Step = "download" | "install" | "remove";

export type StepOutcome = { ok: true } | { ok: false; message: string; rolledBackTo?: RolledBackTo };

/** A step a runtime is carrying out for one deployment. */
export interface StepHandle {
  /** when the outcome is due on the agent's clock (a virtual runtime knows it); null: when the work settles */
  readonly dueAt: number | null;
  /** the outcome once it is known at `now`, else null; asked again until it answers */
  outcome(now: number): StepOutcome | null;
}

/**
 * What carries the steps out: a virtual runtime (the simulator's) or a real one (the container
 * engine). A step must be safe to begin again after a crash: the agent restarts the step a
 * saved deployment was in.
 */
export interface DeploymentRuntime {
  /** starts `step` for `entry` at time `at` (`entry.desired` holds what the service asked for) */
  begin(entry: Readonly<LocalDeployment>, step: Step, at: number): StepHandle;
}

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
  /** when the current step ends, if the runtime knows; null otherwise or when nothing is in flight */
  dueAt: number | null;
  /** the last state the service acknowledged (a heartbeat that carried it succeeded) */
  reportedState: AgentDeploymentState | null;
  reportedMessage?: string;
  /** failed: the release the runtime brought up again instead (reported with the failure) */
  rolledBackTo?: RolledBackTo;
  /** every state this deployment went through on this device, oldest first */
  history: AgentDeploymentState[];
  /** the desired-state entry it came from (profile, parameters: what the runtime installs) */
  desired?: DesiredDeploymentEntry;
}

export interface DeploymentAgentOptions {
  runtime: DeploymentRuntime;
  /** milliseconds; default Date.now */
  now?: () => number;
  /** transitions kept per deployment in `history` (for tests and demos) */
  historyLimit?: number;
}

const IN_FLIGHT: ReadonlySet<AgentDeploymentState> = new Set(["pending", "downloading", "installing", "removing"]);
const STEP_OF: Partial<Record<AgentDeploymentState, Step>> = { downloading: "download", installing: "install", removing: "remove" };

/**
 * Whether a desired install asks for what the device holds under that deployment: the same
 * version, profile and parameters. A running deployment upgraded in place (the service's
 * update rollout) tells the device a new revision under the same id and attempt: it is
 * installed like an upgrade. Without the entry it came from (nothing to compare), the same.
 */
function sameRevision(local: LocalDeployment, entry: DesiredDeploymentEntry): boolean {
  if (!local.desired) return local.version === entry.version;
  const text = (v: unknown) => JSON.stringify(v ?? null);
  // the hash is compared only when both sides carry one: an agent that ran a deployment before
  // the service sent hashes does not restart it for the field's arrival
  const { parametersHash: ran } = local.desired;
  const sameHash = ran === undefined || entry.parametersHash === undefined || ran === entry.parametersHash;
  return local.version === entry.version && text(local.desired.profile) === text(entry.profile) && text(local.desired.parameters) === text(entry.parameters) && sameHash;
}

export class DeploymentAgent {
  private readonly entries = new Map<string, LocalDeployment>();
  /** the step each deployment is in, by deployment id (absent: nothing in flight) */
  private readonly steps = new Map<string, StepHandle>();
  private readonly runtime: DeploymentRuntime;
  private readonly now: () => number;
  private readonly historyLimit: number;

  constructor(options: DeploymentAgentOptions) {
    this.runtime = options.runtime;
    this.now = options.now ?? Date.now;
    this.historyLimit = options.historyLimit ?? 32;
  }

  /** The deployments the device holds now (in the order it got them). */
  list(): LocalDeployment[] {
    return [...this.entries.values()];
  }

  get(deploymentId: string): LocalDeployment | undefined {
    return this.entries.get(deploymentId);
  }

  /**
   * "Not now" (agent/src/actions/leases.ts): while an application on the device holds a lease,
   * installs (new versions, upgrades, rollbacks) download but do not install, and removals (an
   * operator's stop) do not begin: the application keeps running. The device says so in its
   * report's message (downloading, "install deferred by a lease of forklift until ..."; running,
   * "removal deferred by a lease of forklift until ..."), which the service shows. The next
   * heartbeat after the lease ended installs or removes. `null`: nothing holds.
   */
  holdInstalls(held: { by: string; until: string } | null): void {
    this.held = held;
  }

  private held: { by: string; until: string } | null = null;

  private heldMessage(): string | undefined {
    return this.held ? `install deferred by a lease of ${this.held.by} until ${this.held.until}` : undefined;
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
    for (const id of [...this.entries.keys()]) if (!wanted.has(id)) this.drop(id);

    for (const entry of obeyed) {
      const local = this.entries.get(entry.deploymentId);
      if (entry.action === "install") {
        const attempt = entry.attempt ?? 1;
        const window = entry.window ?? "open";
        if (local && local.action === "install" && attempt <= local.attempt && sameRevision(local, entry)) {
          // already on its way (or done): only the window may have opened (or a lease ended)
          if (local.desired && local.desired.parametersHash === undefined && entry.parametersHash !== undefined) {
            local.desired = { ...local.desired, parametersHash: entry.parametersHash }; // what the next hash is compared with
          }
          local.mayInstall = window === "open" && !this.held;
          if (local.downloaded && !local.mayInstall && window === "open") local.message = this.heldMessage();
          if (local.downloaded && local.mayInstall) {
            local.downloaded = false;
            this.enter(local, "installing", now);
          }
          continue;
        }
        if (window === "closed") continue; // nothing yet: not even the download
        // Upgrade, downgrade, rollback: the new version of the application replaces the old one.
        for (const other of [...this.entries.values()]) {
          if (other.applicationId === entry.applicationId && other.action === "install") this.drop(other.deploymentId);
        }
        const created: LocalDeployment = {
          deploymentId: entry.deploymentId,
          applicationId: entry.applicationId,
          version: entry.version,
          action: "install",
          state: "pending",
          attempt,
          mayInstall: window === "open" && !this.held,
          downloaded: false,
          dueAt: null,
          reportedState: null,
          history: [],
          desired: entry,
        };
        this.entries.set(entry.deploymentId, created);
        this.enter(created, "downloading", now);
      } else {
        // A removal of something unknown (the agent restarted) is confirmed all the same.
        const target =
          local ??
          ({
            deploymentId: entry.deploymentId, applicationId: entry.applicationId, version: entry.version, action: "remove",
            state: "pending", attempt: 1, mayInstall: true, downloaded: false, dueAt: null, reportedState: null, history: [], desired: entry,
          } satisfies LocalDeployment);
        this.entries.set(entry.deploymentId, target);
        if (target.action === "remove" && target.state !== "pending") continue; // removing or removed already
        if (this.held) {
          // not begun while a lease holds: the service keeps the words as the device's message
          target.message = `removal deferred by a lease of ${this.held.by} until ${this.held.until}`;
          continue;
        }
        target.action = "remove";
        this.steps.delete(target.deploymentId);
        this.enter(target, "removing", now);
      }
    }
    this.advance();
  }

  /** Takes every step whose outcome is known (several at once when the clock jumped). */
  advance(): void {
    const now = this.now();
    for (const entry of this.entries.values()) {
      for (let step = this.steps.get(entry.deploymentId); step; step = this.steps.get(entry.deploymentId)) {
        const outcome = step.outcome(now);
        if (!outcome) break;
        // a virtual step ended at its due time, which the next step starts from
        const at = step.dueAt ?? now;
        this.steps.delete(entry.deploymentId);
        entry.dueAt = null;
        if (!outcome.ok) {
          this.settle(entry, "failed", outcome.message, outcome.rolledBackTo);
          continue;
        }
        switch (entry.state) {
          case "downloading":
            if (entry.mayInstall) this.enter(entry, "installing", at);
            else {
              entry.downloaded = true; // the install waits for the maintenance window, or for a lease to end
              if (this.held && (entry.desired?.window ?? "open") === "open") entry.message = this.heldMessage();
            }
            break;
          case "installing":
            this.settle(entry, "running");
            break;
          case "removing":
            this.settle(entry, "removed");
            break;
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
      if (e.state === "failed" && e.rolledBackTo) report.rolledBackTo = e.rolledBackTo;
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

  /** When the next step ends, if the runtime knows (null: nothing in flight, or only work that ends when it settles). */
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

  /** What a restart needs to carry on: every deployment as it stands (JSON-safe). */
  snapshot(): LocalDeployment[] {
    return this.list().map((e) => ({ ...e, history: [...e.history] }));
  }

  /**
   * Carries on after a restart from a `snapshot`: a deployment that was in the middle of a step
   * begins that step again (runtimes make steps safe to repeat), so no work is lost or doubled.
   */
  restore(saved: readonly LocalDeployment[]): void {
    const now = this.now();
    this.entries.clear();
    this.steps.clear();
    for (const item of saved) {
      const entry: LocalDeployment = { ...item, history: [...item.history], dueAt: null };
      this.entries.set(entry.deploymentId, entry);
      const step = STEP_OF[entry.state];
      if (step && !(entry.state === "downloading" && entry.downloaded)) this.steps.set(entry.deploymentId, this.runtime.begin(entry, step, now));
    }
  }

  private drop(deploymentId: string) {
    this.entries.delete(deploymentId);
    this.steps.delete(deploymentId);
  }

  private record(entry: LocalDeployment, state: AgentDeploymentState) {
    entry.state = state;
    entry.history.push(state);
    if (entry.history.length > this.historyLimit) entry.history.shift();
  }

  private enter(entry: LocalDeployment, state: "downloading" | "installing" | "removing", from: number) {
    this.record(entry, state);
    entry.message = undefined;
    entry.rolledBackTo = undefined;
    const handle = this.runtime.begin(entry, STEP_OF[state]!, from);
    this.steps.set(entry.deploymentId, handle);
    entry.dueAt = handle.dueAt;
  }

  private settle(entry: LocalDeployment, state: AgentDeploymentState, message?: string, rolledBackTo?: RolledBackTo) {
    this.record(entry, state);
    entry.message = message;
    entry.rolledBackTo = rolledBackTo;
    entry.dueAt = null;
  }
}
