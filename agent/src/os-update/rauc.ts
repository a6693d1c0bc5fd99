// RAUC's command line (Debian's `rauc`, 1.8 and later), the only way the agent touches the
// system's slots: `rauc install` writes a bundle into the inactive slot after RAUC checked its
// signature against the keyring on the device and its compatible against the system's, `rauc
// status` says which slot is booted and what each holds, `rauc status mark-good|mark-bad` tells
// the bootloader. RAUC's service does the work (`rauc install` is its D-Bus client): a client
// killed mid-install leaves the service installing, which the updater relies on to converge.
//
// FLEET_AGENT_RAUC (default `rauc` on PATH) and FLEET_AGENT_RAUC_CONF (a system.conf other than
// /etc/rauc/system.conf, passed as --conf) name another RAUC; the tests use both.
import { execFile } from "node:child_process";

/** A slot as `rauc status --detailed --output-format=json` lists it. */
export interface RaucSlot {
  name: string;
  bootname: string | null;
  device: string;
  /** booted, active (mounted) or inactive */
  state: string;
  /** the bootloader's word: good or bad */
  bootStatus: string | null;
  /** the bundle version RAUC installed into it (null: never installed by RAUC) */
  version: string | null;
  /** sha256 of the image RAUC wrote into it */
  imageSha256: string | null;
  installedAt: string | null;
}

export interface RaucStatus {
  compatible: string;
  /** the booted slot's bootname */
  booted: string;
  /** the slot the bootloader boots next (its name, e.g. rootfs.1) */
  bootPrimary: string | null;
  slots: RaucSlot[];
}

/** A refusal or failure in RAUC's own words (the LastError line of `rauc install`). */
export class RaucError extends Error {
  override readonly name = "RaucError";
  constructor(message: string, readonly busy = false) {
    super(message);
    this.stack = `${this.name}: ${message}`;
  }
}

const MESSAGE_LIMIT = 900;

/** What RAUC said about a failure: its LastError line, else its last meaningful line. */
export function raucMessage(output: string): string {
  const lines = output.split(/\r?\n/).map((l) => l.trim()).filter((l) => l && !/^rauc-Message:/.test(l) && !/^\d+% /.test(l) && l !== "idle" && l !== "installing");
  const lastError = lines.filter((l) => l.startsWith("LastError:")).pop();
  const chosen = lastError ? lastError.slice("LastError:".length).trim() : lines.slice(-2).join("; ");
  return chosen.slice(0, MESSAGE_LIMIT);
}

/** Parses `rauc status --detailed --output-format=json` (RAUC 1.8's shape: slots as a list of one-key objects). */
export function parseRaucStatus(json: string): RaucStatus {
  const raw = JSON.parse(json) as { compatible?: string; booted?: string; boot_primary?: string | null; slots?: Array<Record<string, any>> };
  const slots: RaucSlot[] = [];
  for (const entry of raw.slots ?? []) {
    for (const [name, slot] of Object.entries(entry)) {
      const status = slot.slot_status ?? {};
      slots.push({
        name,
        bootname: slot.bootname ?? null,
        device: String(slot.device ?? ""),
        state: String(slot.state ?? ""),
        bootStatus: slot.boot_status ?? null,
        version: status.bundle?.version ?? null,
        imageSha256: status.checksum?.sha256 ?? null,
        installedAt: status.installed?.timestamp ?? null,
      });
    }
  }
  slots.sort((a, b) => a.name.localeCompare(b.name));
  return { compatible: String(raw.compatible ?? ""), booted: String(raw.booted ?? ""), bootPrimary: raw.boot_primary ?? null, slots };
}

export class Rauc {
  constructor(
    private readonly program = process.env.FLEET_AGENT_RAUC || "rauc",
    private readonly conf = process.env.FLEET_AGENT_RAUC_CONF || "",
  ) {}

  private run(args: string[], timeoutMs: number): Promise<string> {
    const full = [...args, ...(this.conf ? [`--conf=${this.conf}`] : [])];
    return new Promise((resolve, reject) => {
      execFile(this.program, full, { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 8 * 1024 * 1024, encoding: "utf8" }, (error, stdout, stderr) => {
        if (!error) return resolve(stdout);
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return reject(new RaucError(`${this.program} is not installed (Debian: apt-get install rauc)`));
        const said = raucMessage(`${stdout}\n${stderr}`) || `rauc ${args[0]} failed with exit code ${String(error.code)}`;
        // the service installs one bundle at a time: another install (ours, begun before a restart) is still running
        reject(new RaucError(said, /already processing/i.test(`${stdout}\n${stderr}`)));
      });
    });
  }

  /**
   * The system's slots; null when this machine has no RAUC (not installed, or no system config
   * or service). "busy" while RAUC's service installs: it answers no status then.
   */
  async status(): Promise<RaucStatus | null | "busy"> {
    try {
      return parseRaucStatus(await this.run(["status", "--detailed", "--output-format=json"], 60_000));
    } catch (error) {
      return error instanceof RaucError && error.busy ? "busy" : null;
    }
  }

  /** `rauc install`: throws RaucError with RAUC's reason when it refuses (signature, compatible) or fails. */
  async install(bundle: string): Promise<void> {
    await this.run(["install", bundle], 60 * 60_000);
  }

  /** Tells the bootloader the booted slot is good (kept) or bad (the next boot falls back). */
  async mark(verdict: "good" | "bad"): Promise<void> {
    await this.run(["status", `mark-${verdict}`, "booted"], 60_000);
  }
}
