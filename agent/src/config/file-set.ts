// A configuration revision's files, written all or none (docs/configuration.md, "On the
// device"). The files of one revision live in several directories, which no single rename can
// swap, so a journal in the state directory makes the set atomic:
//
//   1. check every file (root, path, content digest, mode, owner) before anything is written;
//   2. stage: the new contents, and a copy of whatever each target holds now (or that it does
//      not exist), into config/staging/<tx>/, each synced;
//   3. the commit point: config/journal.json (written to a temporary file, synced, renamed,
//      its directory synced) says what goes where;
//   4. each target gets its content through a temporary file beside it (synced, mode and owner
//      set, renamed over the target), files of the previous revision that this one no longer has
//      are removed, config/applied.json names the new revision, the journal and staging go.
//
// A kill -9 (or power loss) anywhere: before the commit point nothing outside the staging
// directory was touched, and recovery (at the agent's start) drops the staging; after it the
// journal is carried out again to its end (every step may be repeated), and if a step cannot
// be done the saved copies are put back (a rollback, itself journalled). Either way the device
// ends with the old set or the new one, never a mix.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { syncDirectory, writeFileAtomically } from "../state-dir.js";
import { checkPath } from "./roots.js";
import { resolveOwner, type OwnerFiles } from "./owners.js";
import type { AppliedRevision, ConfigFileEntry, OwnedFile } from "./types.js";

/** A file of a revision, checked and decoded. */
export interface DesiredFile extends OwnedFile {
  content: Buffer;
}

interface Placement {
  path: string;
  /** the staged content: a file in the transaction's staging directory; null: the target did not exist */
  staged: string | null;
  mode: number;
  uid: number;
  gid: number;
}

interface Journal {
  phase: "commit" | "rollback";
  tx: string;
  writes: Placement[];
  removes: string[];
  /** what every touched target held before: put back by a rollback */
  backups: Placement[];
  previous: AppliedRevision | null;
  next: AppliedRevision;
}

export interface FileSetOptions {
  /** the agent's state directory (the journal and staging go in its config/) */
  stateDir: string;
  roots: readonly string[];
  owners?: OwnerFiles;
  /**
   * Called between the steps of a transaction, synchronously. The crash tests stop the process
   * there and kill it (kill -9) to prove every point recovers; the agent passes nothing.
   */
  onStep?: (step: string) => void;
}

export interface Outcome {
  /** paths written or removed (what the activations look at) */
  changed: string[];
}

export const sha256 = (data: Uint8Array) => createHash("sha256").update(data).digest("hex");

/** Reads a file's digest; null when it is missing or not a regular file. */
export function digestOf(file: string): string | null {
  try {
    const stat = fs.lstatSync(file);
    return stat.isFile() ? sha256(fs.readFileSync(file)) : null;
  } catch {
    return null;
  }
}

/** Durable: synced, renamed, its directory synced (the journal's commit point relies on it). */
const writeDurable = (file: string, data: string | Uint8Array) => writeFileAtomically(file, data, 0o600, true);

export class FileSet {
  readonly dir: string;
  private readonly step: (name: string) => void;

  constructor(private readonly options: FileSetOptions) {
    this.dir = path.join(options.stateDir, "config");
    this.step = options.onStep ?? (() => undefined);
  }

  private get journalFile() {
    return path.join(this.dir, "journal.json");
  }

  private get appliedFile() {
    return path.join(this.dir, "applied.json");
  }

  private get stagingRoot() {
    return path.join(this.dir, "staging");
  }

  /** The revision in effect and the files it owns (null: none applied yet). */
  applied(): AppliedRevision | null {
    try {
      return JSON.parse(fs.readFileSync(this.appliedFile, "utf8")) as AppliedRevision;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw new Error(`${this.appliedFile} is corrupted (${(error as Error).message}); remove it and the service sends the configuration again`);
    }
  }

  /** Checks and decodes a revision's files; throws naming the path (nothing written). */
  check(files: readonly ConfigFileEntry[]): DesiredFile[] {
    const seen = new Set<string>();
    return files.map((f) => {
      checkPath(f.path, this.options.roots);
      if (seen.has(f.path)) throw new Error(`${f.path} is listed twice in the revision`);
      seen.add(f.path);
      const content = Buffer.from(f.contentBase64 ?? "", "base64");
      const digest = sha256(content);
      if (digest !== f.sha256) throw new Error(`${f.path}: the content does not match its sha256 (${f.sha256})`);
      const modeText = f.mode ?? "0644";
      if (!/^[0-7]{3,4}$/.test(modeText)) throw new Error(`${f.path}: mode ${JSON.stringify(f.mode)} is not an octal mode like 0644`);
      let owner: { uid: number; gid: number };
      try {
        owner = resolveOwner(f.owner, this.options.owners);
      } catch (error) {
        throw new Error(`${f.path}: ${(error as Error).message}`);
      }
      return { path: f.path, content, sha256: digest, mode: parseInt(modeText, 8), ...owner, ...(f.layer ? { layer: f.layer } : {}) };
    });
  }

  /** Whether the target already is this file: content, mode and owner. */
  private onDisk(file: DesiredFile): boolean {
    try {
      const stat = fs.lstatSync(file.path);
      return stat.isFile() && (stat.mode & 0o7777) === file.mode && stat.uid === file.uid && stat.gid === file.gid &&
        stat.size === file.content.length && digestOf(file.path) === file.sha256;
    } catch {
      return false;
    }
  }

  /**
   * Makes `files` (checked) the revision in effect, all or none: those that differ from what is on
   * disk are written, files of the previous revision that this one no longer has are removed.
   * Throws (after the rollback) when a step cannot be done.
   */
  apply(revision: string, files: readonly DesiredFile[]): Outcome {
    this.recover(); // a transaction left by a crash is ended first
    const previous = this.applied();
    const next: AppliedRevision = { revision, files: files.map(({ content: _content, ...owned }) => owned) };
    const writes = files.filter((f) => !this.onDisk(f));
    const keep = new Set(files.map((f) => f.path));
    const removes = (previous?.files ?? []).map((f) => f.path).filter((p) => !keep.has(p) && fs.existsSync(p) && this.stillOurs(p));
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    if (!writes.length && !removes.length) {
      writeDurable(this.appliedFile, JSON.stringify(next));
      return { changed: [] };
    }

    const tx = `${Date.now().toString(36)}-${randomBytes(4).toString("hex")}`;
    const staging = path.join(this.stagingRoot, tx);
    fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
    const journal: Journal = { phase: "commit", tx, writes: [], removes, backups: [], previous, next };
    try {
      this.stage(staging, journal, writes);
    } catch (error) {
      fs.rmSync(staging, { recursive: true, force: true }); // before the commit point: nothing else was touched
      throw error;
    }
    this.step("staged");
    writeDurable(this.journalFile, JSON.stringify(journal));
    this.step("journal");
    this.carryOut(journal);
    return { changed: [...writes.map((f) => f.path), ...removes] };
  }

  /** The new contents and a copy of what each touched target holds now, each synced. */
  private stage(staging: string, journal: Journal, writes: readonly DesiredFile[]) {
    writes.forEach((f, i) => {
      // 0600: a file may hold a secret, whatever mode its target gets
      writeDurable(path.join(staging, `new-${i}`), f.content);
      journal.writes.push({ path: f.path, staged: `new-${i}`, mode: f.mode, uid: f.uid, gid: f.gid });
    });
    [...writes.map((f) => f.path), ...journal.removes].forEach((target, i) => {
      let stat: fs.Stats | null = null;
      try {
        stat = fs.lstatSync(target);
      } catch {
        /* not there: a rollback removes it */
      }
      if (!stat) return journal.backups.push({ path: target, staged: null, mode: 0, uid: 0, gid: 0 });
      writeDurable(path.join(staging, `old-${i}`), fs.readFileSync(target));
      journal.backups.push({ path: target, staged: `old-${i}`, mode: stat.mode & 0o7777, uid: stat.uid, gid: stat.gid });
    });
    syncDirectory(staging);
  }

  /**
   * Ends a transaction a crash interrupted (the agent's start): carried out to its end after the
   * commit point, else dropped; a step that cannot be done rolls back. Answers what it did.
   */
  recover(): "none" | "completed" | "rolled back" {
    let journal: Journal | null = null;
    try {
      journal = JSON.parse(fs.readFileSync(this.journalFile, "utf8")) as Journal;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw new Error(`${this.journalFile} is corrupted (${(error as Error).message})`);
    }
    if (!journal) {
      // staged before the commit point: nothing outside it was touched
      fs.rmSync(this.stagingRoot, { recursive: true, force: true });
      // a journal or applied.json whose write a crash cut short
      for (const name of fs.existsSync(this.dir) ? fs.readdirSync(this.dir) : []) if (name.endsWith(".tmp")) fs.rmSync(path.join(this.dir, name), { force: true });
      return "none";
    }
    if (journal.phase === "rollback") {
      this.rollBack(journal);
      return "rolled back";
    }
    try {
      this.carryOut(journal);
      return "completed";
    } catch {
      return "rolled back";
    }
  }

  /** A file of the previous revision is removed only while it still lies under the allowed roots. */
  private stillOurs(file: string): boolean {
    try {
      checkPath(file, this.options.roots);
      return true;
    } catch {
      return false;
    }
  }

  private carryOut(journal: Journal) {
    try {
      const staging = path.join(this.stagingRoot, journal.tx);
      for (const w of journal.writes) {
        this.place(w, fs.readFileSync(path.join(staging, w.staged!)), journal.tx);
        this.step(`placed ${w.path}`);
      }
      for (const target of journal.removes) {
        fs.rmSync(target, { force: true });
        syncDirectory(path.dirname(target));
        this.step(`removed ${target}`);
      }
      writeDurable(this.appliedFile, JSON.stringify(journal.next));
      this.step("applied");
      this.finish(journal);
    } catch (error) {
      journal.phase = "rollback";
      writeDurable(this.journalFile, JSON.stringify(journal));
      this.rollBack(journal);
      throw error;
    }
  }

  private rollBack(journal: Journal) {
    const staging = path.join(this.stagingRoot, journal.tx);
    for (const b of journal.backups) {
      if (b.staged === null) fs.rmSync(b.path, { force: true });
      else this.place(b, fs.readFileSync(path.join(staging, b.staged)), journal.tx);
      this.step(`restored ${b.path}`);
    }
    for (const w of journal.writes) fs.rmSync(this.temporaryOf(w.path, journal.tx), { force: true });
    if (journal.previous) writeDurable(this.appliedFile, JSON.stringify(journal.previous));
    else fs.rmSync(this.appliedFile, { force: true });
    this.finish(journal);
  }

  private finish(journal: Journal) {
    fs.rmSync(this.journalFile, { force: true });
    syncDirectory(this.dir);
    fs.rmSync(this.stagingRoot, { recursive: true, force: true }); // one transaction at a time
  }

  private temporaryOf(target: string, tx: string): string {
    return path.join(path.dirname(target), `.${path.basename(target)}.fleet-${tx}`);
  }

  /** One target: a temporary file beside it (same file system), synced, owner and mode set, renamed over it. */
  private place(p: Placement, content: Buffer, tx: string) {
    const dir = path.dirname(p.path);
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
    const temporary = this.temporaryOf(p.path, tx);
    const fd = fs.openSync(temporary, "w", 0o600);
    try {
      const half = Math.floor(content.length / 2);
      fs.writeSync(fd, content, 0, half);
      this.step(`writing ${p.path}`); // half of it written: a crash here leaves only the temporary file
      fs.writeSync(fd, content, half, content.length - half);
      try {
        fs.fchownSync(fd, p.uid, p.gid);
      } catch (error) {
        throw new Error(`${p.path}: cannot set owner ${p.uid}:${p.gid} (${(error as NodeJS.ErrnoException).code})`);
      }
      fs.fchmodSync(fd, p.mode); // after the owner: chown clears set-id bits
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(temporary, p.path);
    syncDirectory(dir);
  }
}
