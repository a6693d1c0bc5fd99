// The device's configuration (issue 48, docs/configuration.md "On the device"): the revision
// the heartbeat's answer hands over is written (file-set.ts: all files or none), the layers
// whose files changed are activated (activation.ts), the outcome is reported with the next
// heartbeats, and the files the agent owns are checked for drift at an interval.
//
// Reports: sent when something changed since the last one the service took, and at least every
// 10th heartbeat. A failed revision keeps the previous one in effect (its files, or, when only
// an activation failed, the new files with the previous revision reported as the one in effect)
// and is tried again when the service hands it over after RETRY_MS, or at once with restore.
import path from "node:path";
import type { StateDir } from "../state-dir.js";
import { runActivations } from "./activation.js";
import { digestOf, FileSet } from "./file-set.js";
import { configRootsFromEnv } from "./roots.js";
import { withDriftContent } from "./drift.js";
import type { ActivationEntry, ConfigurationAnswer, ConfigurationReport, DriftEntry } from "./types.js";

export interface ConfigurationSettings {
  roots: string[];
  driftIntervalMs: number;
  activationTimeoutMs: number;
}

export function configurationSettingsFromEnv(stateDir: string, env: NodeJS.ProcessEnv = process.env): ConfigurationSettings {
  const seconds = (name: string, fallback: number) => {
    const value = Number(env[name]);
    return (Number.isFinite(value) && value > 0 ? value : fallback) * 1000;
  };
  return {
    roots: configRootsFromEnv(stateDir, env),
    driftIntervalMs: seconds("FLEET_AGENT_DRIFT_INTERVAL_SECONDS", 300),
    activationTimeoutMs: seconds("FLEET_AGENT_ACTIVATION_TIMEOUT_SECONDS", 60),
  };
}

/** The last outcome, as config/status.json keeps it across restarts (hashes and paths only, never content). */
interface Outcome {
  revision: string;
  state: "applied" | "failed";
  message?: string;
  appliedRevision?: string;
  drift: DriftEntry[];
  /** when it failed (ms): the same revision is tried again RETRY_MS later */
  failedAt?: number;
  /** an activation failed: the paths that changed, so that trying again activates them */
  unactivated?: string[];
}

const STATUS = "config/status.json";
/**
 * Written before a revision's files and removed once its activations ran: a kill -9 between the
 * two would otherwise leave new files that their service was never told to take up.
 */
const ACTIVATING = "config/activating.json";

interface Activating {
  revision: string;
  activations: ActivationEntry[];
  /** the revision in effect before (what a failure reports) */
  kept?: string;
}
/** a revision that failed is tried again at most this often */
const RETRY_MS = 5 * 60_000;
/** a report at least every this many heartbeats, changed or not */
const REPORT_EVERY = 10;
const MESSAGE_MAX = 2000;
const DRIFT_REPORTED = 100;

export interface ConfigurationOptions {
  state: StateDir;
  settings: ConfigurationSettings;
  log: (level: "info" | "warn" | "error", message: string) => void;
  /** something changed that the service should hear soon */
  wake: () => void;
  /** the crash tests' hook between file steps (file-set.ts) */
  onStep?: (step: string) => void;
  now?: () => number;
}

const short = (revision: string) => revision.slice(0, 12);

export class ConfigurationAgent {
  readonly files: FileSet;
  private outcome: Outcome | null = null;
  private rev = 0;
  private reportedRev = 0;
  private sentRev = 0;
  private heartbeatsSinceReport = 0;
  private work: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private readonly queued = new Set<string>();
  private readonly now: () => number;

  constructor(private readonly options: ConfigurationOptions) {
    this.files = new FileSet({ stateDir: options.state.dir, roots: options.settings.roots, onStep: options.onStep });
    this.now = options.now ?? Date.now;
  }

  /** After a start: a revision a crash interrupted is ended (completed or rolled back) before anything else. */
  start(): void {
    const recovered = this.files.recover();
    if (recovered !== "none") this.options.log("warn", `configuration: a revision interrupted by the agent's stop was ${recovered}`);
    this.outcome = this.options.state.readJson<Outcome>(STATUS);
    const applied = this.files.applied();
    const interrupted = this.options.state.readJson<Activating>(ACTIVATING);
    const unactivated = interrupted !== null && applied?.revision === interrupted.revision;
    // the status written before a crash may lag behind the files: the files decide (once activated)
    if (applied && !unactivated && (!this.outcome || (this.outcome.state === "applied" && this.outcome.revision !== applied.revision))) {
      this.outcome = { revision: applied.revision, state: "applied", appliedRevision: applied.revision, drift: this.outcome?.drift ?? [] };
    }
    if (this.outcome) this.rev = 1; // the service hears it once after every start
    if (interrupted && unactivated) {
      // its files are in place, its activations may not have run: all of them run (reloads are made to be repeated)
      this.options.log("warn", `configuration revision ${short(interrupted.revision)}: the agent stopped before its activations ended; running them again`);
      const paths = interrupted.activations.flatMap((x) => x.paths);
      void this.enqueue(() => this.activate(interrupted, paths, []));
    } else if (interrupted) this.options.state.remove(ACTIVATING); // its files never took effect
  }

  /** The report for the next heartbeat, when one is due. */
  pendingReport(): ConfigurationReport | undefined {
    if (!this.outcome) return undefined;
    this.heartbeatsSinceReport++;
    if (this.rev <= this.reportedRev && this.heartbeatsSinceReport < REPORT_EVERY) return undefined;
    this.sentRev = this.rev;
    const o = this.outcome;
    return {
      revision: o.revision, state: o.state,
      ...(o.message ? { message: o.message.slice(0, MESSAGE_MAX) } : {}),
      ...(o.appliedRevision ? { appliedRevision: o.appliedRevision } : {}),
      // the service takes at most 100 (the rest: reported once these are resolved); contents read now, never kept in the state
      drift: withDriftContent(o.drift.slice(0, DRIFT_REPORTED)),
    };
  }

  /** The heartbeat that carried the report succeeded. */
  acknowledge(report: ConfigurationReport | undefined): void {
    if (!report) return;
    this.reportedRev = Math.max(this.reportedRev, this.sentRev);
    this.heartbeatsSinceReport = 0;
  }

  /** Obeys the heartbeat answer's configuration (absent: leave what the device has). Not awaited: `idle()` is. */
  apply(answer: unknown): void {
    if (!answer || typeof answer !== "object") return;
    const a = answer as ConfigurationAnswer;
    if (typeof a.revision !== "string" || !a.revision) return;
    const applied = this.files.applied();
    const o = this.outcome;
    if (!a.full) {
      // the service believes this revision applied; if the device holds another, saying so brings the full answer
      if (a.revision === applied?.revision) return;
      if (o?.state === "applied") this.changed();
      else if (!o) {
        // nothing on record here (the agent's config/ was removed): a failure the service answers in full, taken at once
        this.record({ revision: a.revision, state: "failed", message: "this device has no record of the revision (its configuration state was reset); it needs the full configuration", drift: [] });
      }
      return;
    }
    const done = o?.revision === a.revision && o.state === "applied" && applied?.revision === a.revision;
    if (done && !a.restore) return;
    const failedRecently = o?.revision === a.revision && o.state === "failed" && this.now() - (o.failedAt ?? 0) < RETRY_MS;
    if (failedRecently && !a.restore) return;
    // heartbeats come every second while it works: the same revision is not queued twice
    const key = `${a.revision}:${a.restore ? "restore" : ""}`;
    if (this.queued.has(key)) return;
    this.queued.add(key);
    void this.enqueue(() => this.applyRevision(a).finally(() => this.queued.delete(key)));
  }

  /** Hashes the owned files and reports those that differ (missing ones without a digest). */
  checkDrift(): Promise<void> {
    return this.enqueue(async () => {
      const applied = this.files.applied();
      if (!applied || !this.outcome) return;
      const drift: DriftEntry[] = [];
      for (const f of applied.files) {
        const now = digestOf(f.path);
        if (now !== f.sha256) drift.push(now === null ? { path: f.path } : { path: f.path, sha256: now });
      }
      if (JSON.stringify(drift) === JSON.stringify(this.outcome.drift)) return;
      const before = new Set(this.outcome.drift.map((d) => d.path));
      for (const d of drift) if (!before.has(d.path)) this.options.log("warn", `configuration: ${d.path} ${d.sha256 ? "was changed" : "was removed"} outside the agent (drift)`);
      this.record({ ...this.outcome, drift });
    });
  }

  /** Resolves once the work handed over so far is done. */
  idle(): Promise<void> {
    return this.work;
  }

  /** A report waits, or a revision is being applied. */
  busy(): boolean {
    return this.inFlight > 0 || this.rev > this.reportedRev;
  }

  /**
   * Facts for the heartbeat: where configuration files may be written (colon-separated), so
   * that the service refuses a layer's file outside them when it is written instead of the
   * device failing it (src/modules/config-layers/roots.ts).
   */
  facts(): { configRoots: string } {
    return { configRoots: this.options.settings.roots.join(":") };
  }

  /** For fleet-agent status. */
  status() {
    const applied = this.files.applied();
    return this.outcome
      ? { revision: this.outcome.revision, state: this.outcome.state, message: this.outcome.message ?? null, appliedRevision: applied?.revision ?? null, files: applied?.files.length ?? 0, drift: this.outcome.drift }
      : null;
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    this.inFlight++;
    const run = this.work.then(task).catch((error: Error) => this.options.log("error", `configuration: ${error.message}`)).finally(() => this.inFlight--);
    this.work = run;
    return run;
  }

  private async applyRevision(a: ConfigurationAnswer): Promise<void> {
    const previous = this.files.applied();
    const kept = previous?.revision;
    const retried = this.outcome?.revision === a.revision ? this.outcome.unactivated ?? [] : [];
    const activations = Array.isArray(a.activations) ? a.activations : [];
    let changed: string[];
    try {
      // a full answer without its list would otherwise read as "no files": everything removed
      if (!Array.isArray(a.files)) throw new Error("the service's full answer carries no file list");
      const desired = this.files.check(a.files);
      if (activations.length) this.options.state.writeJson(ACTIVATING, { revision: a.revision, activations, ...(kept ? { kept } : {}) } satisfies Activating);
      changed = this.files.apply(a.revision, desired).changed;
    } catch (error) {
      this.options.state.remove(ACTIVATING);
      const message = `${(error as Error).message}; ${kept ? `revision ${short(kept)} kept` : "no configuration was applied before"}`;
      this.options.log("warn", `configuration revision ${short(a.revision)} failed: ${message}`);
      this.record({ revision: a.revision, state: "failed", message, ...(kept ? { appliedRevision: kept } : {}), drift: this.outcome?.drift ?? [], failedAt: this.now() });
      return;
    }
    if (changed.length) this.options.log("info", `configuration revision ${short(a.revision)}: ${changed.length} file(s) written or removed (${changed.map((p) => path.basename(p)).join(", ")})`);
    await this.activate({ revision: a.revision, activations, kept }, changed, retried);
  }

  /** Runs the activations of the layers whose paths changed (or were left unactivated), and records the outcome. */
  private async activate({ revision, activations, kept }: Activating, changed: string[], retried: string[]): Promise<void> {
    const paths = [...new Set([...retried, ...changed])];
    const result = await runActivations(activations, paths, this.options.settings.activationTimeoutMs);
    this.options.state.remove(ACTIVATING);
    if (result.failure) {
      const message = `${result.failure}; the files of revision ${short(revision)} are in place, ${kept ? `revision ${short(kept)} is reported in effect` : "no revision was in effect before"}`;
      this.options.log("warn", `configuration revision ${short(revision)} failed: ${message}`);
      this.record({ revision, state: "failed", message, ...(kept ? { appliedRevision: kept } : {}), drift: [], failedAt: this.now(), unactivated: paths });
      return;
    }
    if (result.ran.length) this.options.log("info", `configuration revision ${short(revision)}: activated ${result.ran.join(", ")}`);
    this.record({ revision, state: "applied", appliedRevision: revision, drift: [] });
  }

  private record(outcome: Outcome) {
    this.outcome = outcome;
    this.options.state.writeJson(STATUS, outcome);
    this.changed();
  }

  private changed() {
    this.rev++;
    this.options.wake();
  }
}
