// A simulated device's configuration (docs/configuration.md): it takes every full revision the
// heartbeat answers at once (it has no files to write) and reports it applied with its next
// heartbeat, as the real agent (agent/src/config/configuration.ts) does after writing the files,
// and at least every 10th heartbeat. Enough for a fleet of simulated devices to show a layer
// change reaching them (the rollout, the benchmark's time until every device reported it).
// `failing` (a message) makes it fail every new revision instead, keeping the one it had, as the
// agent reports an activation that exited non-zero: a rollout's failure threshold can be met.
import type { ConfigurationExchange } from "../../agent/src/core/session.js";

interface Report {
  revision: string;
  state: "applied" | "failed";
  message?: string;
  appliedRevision?: string;
  drift: [];
}

const REPORT_EVERY = 10;

export class VirtualConfiguration implements ConfigurationExchange {
  /** the revision in effect (null: none yet) */
  applied: string | null = null;
  /** set: each new revision fails with this message (the previous one stays in effect) */
  failing: string | null = null;
  /** the revision that failed last (null: none, or one applied since) */
  failed: string | null = null;
  private changed = false;
  private sinceReport = 0;

  pendingReport(): Report | undefined {
    if (this.applied === null && this.failed === null) return undefined;
    this.sinceReport++;
    if (!this.changed && this.sinceReport < REPORT_EVERY) return undefined;
    if (this.failed !== null) {
      return { revision: this.failed, state: "failed", message: this.failing ?? "failed", ...(this.applied ? { appliedRevision: this.applied } : {}), drift: [] };
    }
    return { revision: this.applied!, state: "applied", appliedRevision: this.applied!, drift: [] };
  }

  acknowledge(report: Report | undefined): void {
    if (!report) return;
    if (report.revision === (this.failed ?? this.applied)) this.changed = false;
    this.sinceReport = 0;
  }

  apply(answer: unknown): void {
    const a = answer as { revision?: unknown; full?: unknown } | undefined;
    if (!a || typeof a.revision !== "string") return;
    // full: a revision to take; not full: the service already holds this one applied, unless the device has another
    if (a.revision !== this.applied && (a.full === true || this.applied !== null)) {
      if (a.full === true && this.failing !== null) {
        // tried once per revision (the agent tries a failed one again after minutes)
        if (this.failed === a.revision) return;
        this.failed = a.revision;
      } else if (a.full === true) {
        this.applied = a.revision;
        this.failed = null;
      }
      this.changed = true;
    } else if (a.revision === this.applied && this.failed !== null) {
      // answered the revision in effect again (a rollback): nothing failed any more
      this.failed = null;
      this.changed = true;
    }
  }
}
