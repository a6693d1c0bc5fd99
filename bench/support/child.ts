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
}

/** Runs bench/support/<script>.ts; resolves with what it prints as `READY {json}`. */
export function startChild(script: string, env: Record<string, string>, timeoutMs = 600_000, nodeArgs: string[] = []): Promise<Child> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", path.join(dir, script)], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "inherit"],
    });
    let buffer = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${script} did not start within ${timeoutMs} ms`));
    }, timeoutMs);
    child.stdout!.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      const match = /READY (\{.*\})\n/.exec(buffer);
      if (!match) return;
      clearTimeout(timer);
      resolve({
        info: JSON.parse(match[1]),
        process: child,
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
