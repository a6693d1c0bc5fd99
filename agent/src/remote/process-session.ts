// shell and exec: a process (under a pty or with plain pipes) joined to the leg. stdin from
// channel 0 ([255, 0] ends it), stdout on 1, stderr on 2 (a pty merges them on 1), resize on 4,
// and at the end { exitCode } on 3 once every byte of output was sent. The process and all it
// started end with the session: when it exits (leftover background jobs), when the leg closes
// (the user left, the service ended it), on timeout (exit code 124, as timeout(1) says) and when
// the agent stops.
import type { SpawnOptions } from "node:child_process";
import { RESIZE, STDERR, STDIN, STDOUT, CLOSE } from "./frames.js";
import { pipeToLeg, writeFromLeg, type DeviceLeg } from "./leg.js";
import type { SessionContext } from "./offer.js";
import type { GuardedProcess } from "./processes.js";
import { clampSize, ptsOf, ptyChild, resizePty, scriptArgs } from "./pty.js";
import { sessionCwd, sessionEnv, type RunAs } from "./run-as.js";

export const TIMEOUT_EXIT_CODE = 124;

export interface ProcessSpec {
  argv: string[];
  tty: boolean;
  cols?: number | null;
  rows?: number | null;
  /** 0 or absent: none */
  timeoutSeconds?: number | null;
  user: RunAs;
}

/** Running sessions' processes, so the agent's stop ends them. */
export type Track = (process: GuardedProcess) => () => void;

export function spawnSpec(spec: ProcessSpec, ctx: SessionContext): GuardedProcess {
  const { user } = spec;
  const base: SpawnOptions = {
    cwd: sessionCwd(user),
    stdio: ["pipe", "pipe", "pipe"],
    ...(user.switchTo ? { uid: user.switchTo.uid, gid: user.switchTo.gid } : {}),
  };
  if (!spec.tty) return ctx.processes.spawn(spec.argv[0], spec.argv.slice(1), { ...base, env: sessionEnv(user) });
  const size = clampSize(spec.cols, spec.rows);
  // script runs its -c string with $SHELL: /bin/sh, which exports the user's SHELL inside
  return ctx.processes.spawn("script", scriptArgs(spec.argv, size, { SHELL: user.shell }), {
    ...base,
    env: sessionEnv(user, { SHELL: "/bin/sh", TERM: "xterm-256color" }),
  });
}

export async function serveProcess(spec: ProcessSpec, leg: DeviceLeg, ctx: SessionContext, track: Track): Promise<void> {
  const proc = spawnSpec(spec, ctx);
  const untrack = track(proc);
  const { child } = proc;
  let spawnError: NodeJS.ErrnoException | null = null;
  child.once("error", (error: NodeJS.ErrnoException) => (spawnError = error));
  child.stdin!.on("error", () => undefined);

  // the pty's terminal, for resizes; its session is the command's own (script made it)
  let pts: string | null = null;
  const ptyReady = spec.tty && child.pid
    ? ptyChild(child.pid).then((inner) => {
        if (inner) {
          proc.track(inner);
          pts = ptsOf(inner);
        }
      })
    : Promise.resolve();

  leg.on("frame", ({ channel, payload }) => {
    if (channel === STDIN) writeFromLeg(leg, child.stdin!, payload);
    else if (channel === CLOSE && payload[0] === STDIN) child.stdin!.end();
    else if (channel === RESIZE && spec.tty) {
      let size: { cols: number; rows: number };
      try {
        const asked = JSON.parse(payload.toString("utf8")) as { cols?: unknown; rows?: unknown };
        size = clampSize(asked.cols, asked.rows);
      } catch {
        return; // not JSON: nothing to resize to
      }
      void ptyReady.then(() => (pts ? resizePty(pts, size) : undefined)).catch((error: Error) => ctx.log("warn", `resize failed: ${error.message}`));
    }
  });

  let timedOut = false;
  const timer = spec.timeoutSeconds && spec.timeoutSeconds > 0
    ? setTimeout(() => {
        timedOut = true;
        void proc.end("SIGTERM");
      }, spec.timeoutSeconds * 1000)
    : null;
  const legClosed = leg.ended.then(() => proc.end(spec.tty ? "SIGHUP" : "SIGTERM"));

  const output = Promise.all([pipeToLeg(child.stdout!, leg, STDOUT), pipeToLeg(child.stderr!, leg, STDERR)]);
  let exitCode = await proc.exited;
  if (timer) clearTimeout(timer);
  // what the command left running in its session ends with it; its output already written stays readable
  await proc.end("SIGTERM");
  await output;
  if (spawnError) {
    const error = spawnError as NodeJS.ErrnoException;
    exitCode = error.code === "ENOENT" ? 127 : 126;
    leg.send(STDERR, `fleet-agent: ${spec.argv[0]}: ${error.code === "ENOENT" ? "command not found" : error.message}\n`);
  }
  if (timedOut) exitCode = TIMEOUT_EXIT_CODE;
  await ptyReady;
  leg.status({ exitCode, ...(timedOut ? { timedOut: true } : {}) });
  leg.close(1000, "completed");
  untrack();
  void legClosed;
}
