// The agent's state directory (default /var/lib/fleet-agent): everything a restart needs.
//
//   device.key        the device's private key (PKCS#8 PEM, mode 0600; never leaves the machine)
//   device.crt        its certificate; ca-chain.pem the issuing CA chain, nearest first
//   identity.json     service URL, device id, certificate id and expiry, heartbeat interval
//   deployments.json  the deployment state machine as it stood (agent/src/core/deployments.ts)
//   installed.json    per application, the release that runs (what a failed upgrade rolls back to)
//   outbox/           telemetry and log lines the service has not taken yet
//   releases/         the rendered compose files of each deployment, by deployment id
//
// Every write goes to a temporary file that is synced and renamed over the old one, so a crash
// (kill -9, power loss) leaves either the old or the new file, never half of one. A file that
// cannot be read is an error naming the file and what to do, never a silent fresh start.
import fs from "node:fs";
import path from "node:path";

export class StateError extends Error {
  override readonly name = "StateError";
}

export class StateDir {
  constructor(readonly dir: string) {}

  path(...parts: string[]): string {
    return path.join(this.dir, ...parts);
  }

  /** Creates the directory (0700: it holds the device key) and its sub-directories. */
  ensure(): void {
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(this.dir, 0o700);
    for (const sub of ["outbox", "releases"]) fs.mkdirSync(this.path(sub), { recursive: true, mode: 0o700 });
  }

  exists(name: string): boolean {
    return fs.existsSync(this.path(name));
  }

  readText(name: string): string | null {
    try {
      return fs.readFileSync(this.path(name), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new StateError(`cannot read ${this.path(name)}: ${(err as Error).message}`);
    }
  }

  /** A JSON file, or null when absent; a corrupted one is an error naming it. */
  readJson<T>(name: string): T | null {
    const text = this.readText(name);
    if (text === null) return null;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new StateError(`${this.path(name)} is corrupted (not JSON); restore it from a backup, or remove the state directory and enroll again`);
    }
  }

  /** Writes atomically: a temporary file, synced, renamed over the old one. */
  writeText(name: string, text: string, mode = 0o600): void {
    const target = this.path(name);
    fs.mkdirSync(path.dirname(target), { recursive: true, mode: 0o700 });
    writeFileAtomically(target, text, mode);
  }

  writeJson(name: string, value: unknown): void {
    this.writeText(name, `${JSON.stringify(value, null, 1)}\n`);
  }

  remove(name: string): void {
    fs.rmSync(this.path(name), { recursive: true, force: true });
  }
}

/**
 * A temporary file beside `target`, synced, renamed over it: the old or the new content after
 * any crash. `durableRename` also syncs the directory, so that the rename itself survives a
 * power loss (a journal's commit point needs that; the state files' next write repairs a lost one).
 */
export function writeFileAtomically(target: string, data: string | Uint8Array, mode = 0o600, durableRename = false): void {
  const temporary = `${target}.${process.pid}.tmp`;
  const fd = fs.openSync(temporary, "w", mode);
  try {
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.chmodSync(temporary, mode);
  fs.renameSync(temporary, target);
  if (durableRename) syncDirectory(path.dirname(target));
}

/** fsync of a directory: its entries (a rename, a removal) reach the disk. */
export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, "r");
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
