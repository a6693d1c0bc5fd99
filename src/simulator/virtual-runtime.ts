// The simulator's deployment runtime: every step takes a random time within its configured
// range (scaled by `timeScale`; 0 makes every step immediate) and an install fails with the
// configured probability, in its download or its install step, or on purpose (`failInstalls`).
// Every attempt draws its own failure, so a device that failed a fraction of attempts succeeds
// on a retry. The state machine it serves is the real agent's (agent/src/core/deployments.ts).
import {
  DeploymentAgent, type DeploymentRuntime, type DesiredDeploymentEntry, type LocalDeployment, type Step, type StepHandle, type StepOutcome,
} from "../../agent/src/core/deployments.js";
import type { VirtualSystem } from "./virtual-system.js";

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

export interface VirtualRuntimeOptions {
  /** chance that an install fails (in its download or its install step), 0..1 */
  failureRate?: number;
  timings?: Partial<DeploymentTimings>;
  /** multiplies every delay: 1 real time, 0.01 a hundred times faster, 0 immediate */
  timeScale?: number;
  /** uniform in [0, 1); default Math.random */
  random?: () => number;
  /**
   * a deliberate failure plan: installs of these `name@version` (name: a component of the
   * profile, or the application id) fail on every attempt, in the install step, with a message
   * saying it is on purpose (`--fail-install`); they draw no random number
   */
  failInstalls?: readonly string[];
  /**
   * the device's operating system (a device with RAUC): the install step of a deployment with a
   * system image updates it first, and fails with the rollback's reason when it falls back
   */
  system?: VirtualSystem;
}

/** A simulated device's deployments: the agent's state machine on the virtual runtime. */
export interface DeploymentAgentOptions extends VirtualRuntimeOptions {
  /** milliseconds; default Date.now */
  now?: () => number;
  /** transitions kept per deployment in `history` (for tests and demos) */
  historyLimit?: number;
}

type Phase = Exclude<Step, "remove">;

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

export class VirtualRuntime implements DeploymentRuntime {
  private readonly failureRate: number;
  private readonly timings: DeploymentTimings;
  private readonly timeScale: number;
  private readonly random: () => number;
  private readonly failInstalls: ReadonlySet<string>;
  private readonly system: VirtualSystem | undefined;
  /** the step each install attempt fails in (decided when its download begins), by deployment id */
  private readonly plans = new Map<string, { attempt: number; failIn: Phase | null; message?: string }>();

  constructor(options: VirtualRuntimeOptions = {}) {
    this.failureRate = options.failureRate ?? 0;
    this.timings = { ...DEFAULT_DEPLOYMENT_TIMINGS, ...options.timings };
    this.timeScale = options.timeScale ?? 1;
    this.random = options.random ?? Math.random;
    this.failInstalls = new Set(options.failInstalls ?? []);
    this.system = options.system;
    if (!(this.failureRate >= 0 && this.failureRate <= 1)) throw new Error("failureRate: a number from 0 to 1");
    if (!(this.timeScale >= 0)) throw new Error("timeScale: a number of at least 0");
    for (const [name, [min, max]] of Object.entries(this.timings)) {
      if (!(min >= 0 && max >= min)) throw new Error(`${name}: a range [min, max] with 0 <= min <= max`);
    }
  }

  begin(entry: Readonly<LocalDeployment>, step: Step, at: number): StepHandle {
    if (step === "download") {
      const planned = entry.desired ? this.plannedFailure(entry.desired) : undefined;
      const failIn = planned ? "install" : this.random() < this.failureRate ? (this.random() < 0.5 ? "download" : "install") : null;
      this.plans.set(entry.deploymentId, { attempt: entry.attempt, failIn, message: planned });
    }
    const plan = step === "remove" ? undefined : this.plans.get(entry.deploymentId);
    const range = step === "download" ? this.timings.downloadMs : step === "install" ? this.timings.installMs : this.timings.removeMs;
    const dueAt = at + this.delay(range);
    let settled: StepOutcome | null = null;
    return {
      dueAt,
      outcome: (now) => {
        if (now < dueAt) return null;
        if (!settled) settled = plan?.failIn === step ? { ok: false, message: plan.message ?? this.failureMessage(step as Phase) } : this.systemFirst(entry, step);
        return settled;
      },
    };
  }

  /** An install with a system image: the OS update first (an application after the committed boot). */
  private systemFirst(entry: Readonly<LocalDeployment>, step: Step): StepOutcome {
    const image = entry.desired?.systemImage;
    if (step !== "install" || !image || !this.system) return { ok: true };
    const rolledBack = this.system.update(image);
    return rolledBack ? { ok: false, message: `system update ${image.version} rolled back: ${rolledBack}` } : { ok: true };
  }

  /** The message of a failure `failInstalls` plans for this install, if it names it. */
  private plannedFailure(entry: DesiredDeploymentEntry): string | undefined {
    if (!this.failInstalls.size) return undefined;
    const components = Array.isArray(entry.profile?.components) ? (entry.profile.components as Array<{ name?: unknown }>) : [];
    const names = [entry.applicationId, ...components.map((c) => String(c?.name))];
    const planned = names.map((name) => `${name}@${entry.version}`).find((n) => this.failInstalls.has(n));
    return planned ? `install failed: ${planned} does not start on this device (simulated on purpose: --fail-install ${planned})` : undefined;
  }

  private failureMessage(phase: Phase): string {
    const messages = FAILURE_MESSAGES[phase];
    return messages[Math.min(messages.length - 1, Math.floor(this.random() * messages.length))];
  }

  private delay([min, max]: DelayRange): number {
    return (min + this.random() * (max - min)) * this.timeScale;
  }
}

/** A simulated device's deployments: the agent's own state machine, on the virtual runtime. */
export function virtualDeploymentAgent(options: DeploymentAgentOptions = {}): DeploymentAgent {
  return new DeploymentAgent({ runtime: new VirtualRuntime(options), now: options.now, historyLimit: options.historyLimit });
}
