// A simulated device's operating system: two RAUC slots (A and B), the booted one, and its last
// system update (docs/os-updates.md). A deployment whose desired state carries a system image is
// "installed" by switching slots: committed (the new slot booted and kept) or, when the device is
// told to, rolled back (the bootloader went back to the old slot), reported with the reason the
// real agent gives. No bootloader and no RAUC here: this is the protocol, for the service's tests.
import type { SystemImageEntry } from "../../agent/src/core/deployments.js";
import type { SystemReport } from "../../agent/src/core/session.js";

/** commit: every update boots and is kept; rollback: every update falls back after its trial boot */
export type SystemUpdateBehaviour = "commit" | "rollback";

interface Slot {
  version: string | null;
  digest: string | null;
}

export class VirtualSystem {
  private booted: "A" | "B" = "A";
  private readonly slots: Record<"A" | "B", Slot> = { A: { version: "1.0.0", digest: null }, B: { version: null, digest: null } };
  private last: SystemReport["lastUpdate"] = null;

  constructor(public behaviour: SystemUpdateBehaviour = "commit") {}

  /** Installs an image into the other slot and "boots" it: null when committed, else the rollback's reason. */
  update(image: SystemImageEntry): string | null {
    const from = this.booted;
    const to = from === "A" ? "B" : "A";
    const startedAt = new Date().toISOString();
    if (this.slots[from].digest === image.digest) return null; // runs it already
    this.slots[to] = { version: image.version, digest: image.digest };
    const reason = this.behaviour === "rollback"
      ? `the new system in slot ${to} did not pass its health checks within 300 s (service: no heartbeat was answered since the boot); marked bad, the bootloader falls back to slot ${from} (simulated)`
      : null;
    if (!reason) this.booted = to;
    this.last = {
      digest: image.digest, fromVersion: this.slots[from].version, toVersion: image.version, fromSlot: from, toSlot: to,
      outcome: reason ? "rolled-back" : "committed", reason, startedAt, finishedAt: new Date().toISOString(),
    };
    return reason;
  }

  report(): SystemReport {
    const other = this.booted === "A" ? "B" : "A";
    return {
      bootedSlot: this.booted,
      booted: { version: this.slots[this.booted].version, digest: this.slots[this.booted].digest },
      other: { slot: other, version: this.slots[other].version, digest: this.slots[other].digest },
      lastUpdate: this.last,
    };
  }
}
