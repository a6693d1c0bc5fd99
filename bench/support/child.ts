// Starting a helper process for a benchmark (the service under test, a bare baseline server)
// so that the load generator and the server do not share one event loop.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const dir = path.dirname(fileURLToPath(import.meta.url));

export interface Child {
  /** the JSON the child printed on its READY line */
  info: Record<string, any>;
  process: ChildProcess;
  stop(): Promise<void>;
  /** sends one line to the child's stdin; resolves with the JSON of its next `DONE {json}` line */
  command(line: string): Promise<Record<string, any>>;
}

/** Runs bench/support/<script>.ts; resolves with what it prints as `READY {json}`. */
export function startChild(script: string, env: Record<string, string>, timeoutMs = 600_000, nodeArgs: string[] = []): Promise<Child> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join(dir, script)], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "inherit"],
    });
    let buffer = "";
    let waiting: ((info: Record<string, any>) => void) | null = null;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const done = /DONE (\{.*\})\n/.exec(buffer);
      if (done && waiting) {
        buffer = buffer.slice(done.index + done[0].length);
        const w = waiting;
        waiting = null;
        w(JSON.parse(done[1]));
        return;
      }
      if (buffer.includes("READY-SENT")) return;
      const match = /READY (\{.*\})\n/.exec(buffer);
      if (!match) return;
      clearTimeout(timer);
      buffer = "READY-SENT";
      resolve({
        info: JSON.parse(match[1]),
        process: child,
        command: (line) =>
          new Promise((done) => {
            waiting = done;
            child.stdin!.write(`${line}\n`);
          }),
        stop: () =>
          new Promise<void>((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.kill("SIGTERM");
          }),
      });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with ${code} before it was ready:\n${buffer}`));
    });
  });
}

/** CPU time (user + system, µs) a child used between two of its `command` answers (`cpu` in them). */
export function cpuMicrosUsed(before: Record<string, any>, after: Record<string, any>): number {
  return after.cpu.user - before.cpu.user + (after.cpu.system - before.cpu.system);
}

/** The same, per request. */
export function cpuMicrosPerRequest(before: Record<string, any>, after: Record<string, any>, requests: number): number {
  return requests > 0 ? cpuMicrosUsed(before, after) / requests : NaN;
}

/** The child's CPU time so far (serve.ts and bare-server.ts answer any command with it). */
export const cpuOf = (child: Child) => child.command("cpu");
