// Nothing a session started outlives it, nor the agent (docs/remote-access.md, "On the device").
//
// Every session's process is spawned detached (setsid: a session and process group of its own,
// sid = pgid = its pid); a pty made by script(1) puts the shell into one more session. Those
// session ids are what we track, because everything the user starts inherits them (a pipeline,
// a background job, `nohup`), unlike a parent link. Three ways they end:
// * the session ends: SIGHUP/SIGTERM to every process of those sessions, SIGKILL after a grace;
// * the agent is killed (`kill -9`, the OOM killer): each session has a watchdog, a small
//   `/bin/sh` in a session of its own, that reads the session ids from a pipe whose writing end
//   only the agent holds (Node opens its pipes close-on-exec, so no other child inherits it).
//   When the agent dies the kernel closes that end, `read` sees end of file, and the watchdog
//   SIGKILLs every process of those sessions, found in /proc (no procps needed), twice (a fork
//   between the two looks is caught by the second). No prctl(PR_SET_PDEATHSIG), which Node cannot
//   call and which would only reach the direct child;
// * the watchdog was killed too (a whole-group kill, a reboot is not a case: the ids die with it):
//   the session ids and this boot's id are also kept in the state directory
//   (`remote-processes.json`), and the agent kills what is left of them when it starts.
// A process that leaves its session on purpose (setsid(1), a double-forking daemon) escapes all
// three, as it escapes a terminal's hangup; systemd's unit (KillMode=control-group) still stops it
// with the agent's service.
import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import fs from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import type { StateDir } from "../state-dir.js";

const REGISTRY = "remote-processes.json";
/** between the polite signal and SIGKILL */
export const GRACE_MS = 2000;

// Reads session ids (one per line) until end of file, then SIGKILLs every process whose session
// or process group is one of them. POSIX sh only: the device needs no procps.
const WATCHDOG = `trap '' HUP INT TERM QUIT
ids=""
while read -r id; do ids="$ids $id"; done
for pass in 1 2; do
  for s in /proc/[0-9]*/stat; do
    read -r l < "$s" 2>/dev/null || continue
    r=\${l##*") "}
    set -- $r
    for id in $ids; do
      if [ "$4" = "$id" ] || [ "$3" = "$id" ]; then p=\${s#/proc/}; kill -KILL "\${p%/stat}" 2>/dev/null; fi
    done
  done
done`;

interface RegistryFile {
  bootId: string;
  sessions: number[];
}

function bootId(): string {
  try {
    return fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return "";
  }
}

/** The session and process group of a process, from /proc/<pid>/stat (null: gone). */
export function processIds(pid: number, procRoot = "/proc"): { ppid: number; pgrp: number; session: number; ttyNr: number } | null {
  try {
    const stat = fs.readFileSync(`${procRoot}/${pid}/stat`, "utf8");
    // the command name may hold spaces and parentheses: the fields start after its last ")"
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), pgrp: Number(fields[2]), session: Number(fields[3]), ttyNr: Number(fields[4]) };
  } catch {
    return null;
  }
}

/** Every process (but this one) whose session or process group is one of `ids`. */
export async function membersOf(ids: Iterable<number>, procRoot = "/proc"): Promise<number[]> {
  const wanted = new Set(ids);
  if (wanted.size === 0) return [];
  const found: number[] = [];
  for (const entry of await fsp.readdir(procRoot)) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const ids = processIds(Number(entry), procRoot);
    if (ids && (wanted.has(ids.session) || wanted.has(ids.pgrp))) found.push(Number(entry));
  }
  return found;
}

/** Signals every process of those sessions; answers the pids signalled. */
export async function signalMembers(ids: Iterable<number>, signal: NodeJS.Signals): Promise<number[]> {
  const pids = await membersOf(ids);
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/** The processes of every remote session, with their watchdogs and the registry in the state directory. */
export class SessionProcesses {
  private readonly live = new Set<number>();

  constructor(private readonly state: StateDir | null) {}

  /** At the agent's start: SIGKILLs what a previous run's sessions left (same boot only: session ids do not survive a reboot). Answers how many. */
  async killLeftovers(): Promise<number> {
    const saved = this.state?.readJson<RegistryFile>(REGISTRY);
    if (!saved || saved.bootId !== bootId() || !Array.isArray(saved.sessions) || saved.sessions.length === 0) {
      this.save();
      return 0;
    }
    // twice: a fork between the first look and its kill is caught by the second
    const killed = new Set<number>();
    for (let pass = 0; pass < 2; pass++) for (const pid of await signalMembers(saved.sessions, "SIGKILL")) killed.add(pid);
    this.save();
    return killed.size;
  }

  /** Spawns `command` in a session of its own, guarded by a watchdog. */
  spawn(command: string, args: string[], options: SpawnOptions): GuardedProcess {
    const child = spawn(command, args, { ...options, detached: true });
    const guarded = new GuardedProcess(child, this);
    if (child.pid) guarded.track(child.pid);
    return guarded;
  }

  register(session: number) {
    this.live.add(session);
    this.save();
  }

  forget(sessions: number[]) {
    for (const session of sessions) this.live.delete(session);
    this.save();
  }

  private save() {
    this.state?.writeJson(REGISTRY, { bootId: bootId(), sessions: [...this.live] } satisfies RegistryFile);
  }
}

export class GuardedProcess {
  readonly sessions: number[] = [];
  private readonly watchdog: ChildProcess;
  private finished = false;
  /** resolves when the process exited: its code, or 128 + the signal's number (a shell's convention) */
  readonly exited: Promise<number>;

  constructor(
    readonly child: ChildProcess,
    private readonly registry: SessionProcesses,
  ) {
    this.watchdog = spawn("/bin/sh", ["-c", WATCHDOG], { stdio: ["pipe", "ignore", "ignore"], detached: true });
    this.watchdog.stdin!.on("error", () => undefined);
    this.watchdog.on("error", () => undefined);
    this.watchdog.unref();
    this.exited = new Promise((resolve) => {
      child.once("error", () => resolve(127));
      child.once("exit", (code, signal) => resolve(code ?? 128 + (signal ? signalNumber(signal) : 0)));
    });
  }

  /** Adds a session id (or process group) whose processes end with this one. */
  track(id: number) {
    if (this.sessions.includes(id)) return;
    this.sessions.push(id);
    this.watchdog.stdin?.write(`${id}\n`);
    this.registry.register(id);
  }

  /**
   * Ends everything of this process's sessions: `signal` first, SIGKILL (by the watchdog) after
   * `graceMs`. Resolves once nothing of them is left.
   */
  async end(signal: NodeJS.Signals = "SIGTERM", graceMs = GRACE_MS): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    if (signal !== "SIGKILL" && (await signalMembers(this.sessions, signal)).length > 0) {
      const deadline = Date.now() + graceMs;
      while (Date.now() < deadline && (await membersOf(this.sessions)).length > 0) await sleep(50);
    }
    // the watchdog's end of file: it SIGKILLs whatever is left, then exits
    this.watchdog.stdin?.end();
    await new Promise<void>((resolve) => (this.watchdog.exitCode !== null || this.watchdog.signalCode !== null ? resolve() : this.watchdog.once("exit", () => resolve())));
    // and once more from here, should the watchdog have been unable to (it never is, but the
    // registry must only forget what is gone)
    for (let pass = 0; pass < 2 && (await signalMembers(this.sessions, "SIGKILL")).length > 0; pass++) await sleep(20);
    this.registry.forget(this.sessions);
  }
}

function signalNumber(signal: NodeJS.Signals): number {
  return os.constants.signals[signal] ?? 0;
}

function sleep(ms: number) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
