// A simulated device's configuration (docs/configuration.md): it takes every full revision the
// heartbeat answers at once (it has no files to write) and reports it applied with its next
// heartbeat, as the real agent (agent/src/config/configuration.ts) does after writing the files,
// and at least every 10th heartbeat. Enough for a fleet of simulated devices to show a layer
// change reaching them (the rollout, the benchmark's time until every device reported it).
import type { ConfigurationExchange } from "../../agent/src/core/session.js";

interface Report {
  revision: string;
  state: "applied";
  appliedRevision: string;
  drift: [];
}

const REPORT_EVERY = 10;

export class VirtualConfiguration implements ConfigurationExchange {
  /** the revision in effect (null: none yet) */
  applied: string | null = null;
  private changed = false;
  private sinceReport = 0;

  pendingReport(): Report | undefined {
    if (this.applied === null) return undefined;
    this.sinceReport++;
    if (!this.changed && this.sinceReport < REPORT_EVERY) return undefined;
    return { revision: this.applied, state: "applied", appliedRevision: this.applied, drift: [] };
  }

  acknowledge(report: Report | undefined): void {
    if (!report) return;
    if (report.revision === this.applied) this.changed = false;
    this.sinceReport = 0;
  }

  apply(answer: unknown): void {
    const a = answer as { revision?: unknown; full?: unknown } | undefined;
    if (!a || typeof a.revision !== "string") return;
    // full: a revision to take; not full: the service already holds this one applied, unless the device has another
    if (a.revision !== this.applied && (a.full === true || this.applied !== null)) {
      if (a.full === true) this.applied = a.revision;
      this.changed = true;
    }
  }
}
