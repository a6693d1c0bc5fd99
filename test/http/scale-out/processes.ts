// Real server processes for the scale-out and fault tests: `src/main.ts` started as a child
// process (what `npm start` runs), on a database the test names, each on its own port.
// Also a small REST client per process and a WebSocket client for the realtime channel.
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { restClient, type ApiResponse, type CallOptions, type Harness } from "../../support/harness.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** Keys every process of one installation must share (docs/scaling.md). */
export const SHARED_KEYS = {
  ENCRYPTION_KEY: "ab".repeat(32),
  JWT_SECRET: "scale-out-tests-jwt-secret-0123456789abcdef",
};

export interface ServerProcess {
  name: string;
  url: string;
  child: ChildProcess;
  /** every line the process wrote (stdout and stderr) */
  output: string[];
  api<T = any>(method: string, p: string, opts?: CallOptions): Promise<ApiResponse<T>>;
  /** SIGTERM and wait for the exit code */
  stop(): Promise<number | null>;
  /** SIGKILL (kill -9) and wait until it is gone */
  kill(): Promise<void>;
  exited: Promise<number | null>;
}

/** The database URL of the harness (PostgreSQL only). */
export function databaseUrlOf(h: Harness): string {
  return (h.services.database.opened.pool!.options as { connectionString: string }).connectionString;
}

export { restClient };

/** A harness whose `api` talks to another process (for the helpers that take a Harness). */
export function viaProcess(h: Harness, p: ServerProcess): Harness {
  return { ...h, url: p.url, api: p.api };
}

/**
 * Starts `src/main.ts` with `env` (PORT 0: any free port) and resolves once it logged "ready".
 * `defaultKey` is sent as X-API-Key by `api` unless a call names another (or null).
 */
export async function startServerProcess(name: string, env: Record<string, string>, defaultKey: string | null = null): Promise<ServerProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `fleet-proc-${name}-`));
  const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? os.tmpdir(),
      NODE_ENV: "test",
      HOST: "127.0.0.1",
      PORT: "0",
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      DATABASE_POOL_SIZE: "4",
      JOBS_POLL_INTERVAL_MS: "200",
      ...SHARED_KEYS,
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString("utf8");
      let nl: number;
      while ((nl = buffered.indexOf("\n")) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        output.push(line);
        if (line.includes('"msg":"ready"')) {
          clearTimeout(timer);
          try {
            resolve((JSON.parse(line) as { url: string }).url.replace("localhost", "127.0.0.1"));
          } catch (err) {
            reject(err);
          }
        }
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${name} did not start within 90 s:\n${output.join("\n")}`));
    }, 90_000);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready:\n${output.join("\n")}`));
    });
    child.once("error", reject);
  });
  return {
    name,
    url,
    child,
    output,
    exited,
    api: restClient(url, defaultKey),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Polls `check` until it returns a value other than undefined/false, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 30_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ""}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

export { connectRealtime, type RealtimeClient } from "../../support/realtime-client.js";
