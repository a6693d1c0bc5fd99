// A real server process: the service's build (dist/service/main.js, what `npm start` runs;
// test/support/global-setup.ts builds it when a source changed) started as a child process, on
// its own temporary DATA_DIR (PGlite on disk unless env names DATABASE_URL) and a free loopback
// port. Used by the scale-out and fault tests (test/http/scale-out/processes.ts adds the keys
// several processes share) and by the browser tests (test/support/console-service.ts).
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";
import { restClient, type ApiResponse, type CallOptions } from "./rest-client.js";
import type { SecretWatch } from "./secret-watch.js";
import { newPostgresDatabase } from "./postgres-database.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

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

export interface ServerProcessOptions {
  /** sent as X-API-Key by `api` unless a call names another (or null) */
  defaultKey?: string | null;
  /** records what `api` sends and receives, for the leak check at the end */
  watch?: SecretWatch;
  /** how long the start may take (a first start on PGlite creates the database) */
  startTimeoutMs?: number;
  /**
   * "fresh" (default): an empty DATA_DIR, so PGlite creates the database and applies every
   * migration, as on a newcomer's first start. "migrated": DATA_DIR starts as migratedDataDir
   * makes it, for the tests that are about something else than the first start.
   */
  database?: "fresh" | "migrated";
  /** what runs instead of SERVICE_COMMAND (START_COMMAND: `npm start`'s script, which builds first when the build is stale) */
  command?: readonly string[];
  /**
   * Where the service's stdout goes instead of a pipe to the test (and its stderr too with
   * `stderrToo`): `fd`, a descriptor of the test process (the write end of a real pipe, as
   * `npm start | tee log` has), and `lines`, the stream the test reads that output from (the
   * reader's own output). stderr otherwise still comes to the test.
   */
  stdout?: { fd: number; lines: NodeJS.ReadableStream; stderrToo?: boolean };
}

/**
 * A new temporary directory to use as DATA_DIR, holding the embedded database as the
 * migrations leave it (a copy of the one global-setup.ts built; nothing else: the service
 * still bootstraps its admin and generates its keys there). Starting from it saves PGlite's
 * initdb and every migration, ~10 s of CPU per process on a 2-core machine.
 */
export function migratedDataDir(prefix = "fleet-proc-"): string {
  const template = inject("pgliteDataDir");
  if (!template) throw new Error("no migrated PGlite data directory: it is made by test/support/global-setup.ts for the run without DATABASE_URL");
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.cpSync(template, dataDir, { recursive: true });
  return dataDir;
}

/** The service as `npm start` runs it: its build, by node alone (scripts/build-service.mjs). */
export const SERVICE_COMMAND = [process.execPath, path.join(ROOT, "dist", "service", "main.js")] as const;

/** `npm start` (package.json's start): scripts/start.mjs, which builds the service first only when its build is stale. */
export const START_COMMAND = [process.execPath, "--max-semi-space-size=8", path.join(ROOT, "scripts", "start.mjs")] as const;

/**
 * Starts the service (SERVICE_COMMAND) with `env` on top of a minimal environment (PORT 0: any free port,
 * HOST 127.0.0.1, a DATA_DIR of its own removed when the process exits: empty, or holding the
 * migrated database with `database: "migrated"`, which on the run with DATABASE_URL is a
 * migrated PostgreSQL database of its own, dropped at the exit) and resolves once it logged "ready".
 */
export async function spawnService(name: string, env: Record<string, string>, options: ServerProcessOptions = {}): Promise<ServerProcess> {
  // On the run with DATABASE_URL, "migrated" is a database of its own cloned from the run's
  // migrated template (unless `env` names a database itself); DATA_DIR then holds only the keys.
  const onPostgres = options.database === "migrated" && process.env.DATABASE_URL && !env.DATABASE_URL;
  const database = onPostgres ? await newPostgresDatabase(process.env.DATABASE_URL!, inject("postgresTemplate")) : null;
  const dataDir = options.database === "migrated" && !onPostgres ? migratedDataDir(`fleet-proc-${name}-`) : fs.mkdtempSync(path.join(os.tmpdir(), `fleet-proc-${name}-`));
  const startTimeoutMs = options.startTimeoutMs ?? 90_000;
  const [command, ...args] = options.command ?? SERVICE_COMMAND;
  const stdout = options.stdout;
  const child = spawn(command, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? os.tmpdir(),
      HOST: "127.0.0.1",
      PORT: "0",
      DATA_DIR: dataDir,
      LOG_LEVEL: "info",
      ...(database ? { DATABASE_URL: database.url.toString() } : {}),
      ...env,
    },
    stdio: ["ignore", stdout?.fd ?? "pipe", stdout?.stderrToo ? stdout.fd : "pipe"],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  void exited.then(async () => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  });
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
    for (const stream of [stdout?.lines ?? child.stdout, child.stderr]) stream?.on("data", onData);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${name} did not start within ${startTimeoutMs / 1000} s:\n${output.join("\n")}`));
    }, startTimeoutMs);
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
    api: restClient(url, options.defaultKey ?? null, options.watch),
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
