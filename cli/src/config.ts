// Contexts: the servers and organizations `fleet` signs in to, in
// $XDG_CONFIG_HOME/fleet/config.yaml (default ~/.config/fleet/config.yaml). The file holds
// secrets (an API key, or a session's access and refresh tokens), so it is written with mode
// 0600 in a 0700 directory, through a temporary file and a rename (a crash never leaves half a
// file). FLEET_URL with FLEET_API_KEY (or FLEET_TOKEN) is a context of its own that needs no
// file: what a CI job sets.
import fs from "node:fs";
import path from "node:path";
import { parse, stringify } from "yaml";
import { CliError, EXIT } from "./errors.js";
import { configDir } from "./paths.js";

export interface Context {
  server: string;
  /** the organization requests act in (an API key's own; a session's, switched with --org) */
  organization?: { id: string; slug: string; name?: string };
  user?: string;
  apiKey?: string;
  accessToken?: string;
  refreshToken?: string;
  expiresAt?: string;
}

export interface Config {
  currentContext?: string;
  contexts: Record<string, Context>;
}

export { configDir };

export const configPath = (env: NodeJS.ProcessEnv = process.env) => path.join(configDir(env), "config.yaml");

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const file = configPath(env);
  if (!fs.existsSync(file)) return { contexts: {} };
  const parsed = parse(fs.readFileSync(file, "utf8")) as Partial<Config> | null;
  return { currentContext: parsed?.currentContext, contexts: parsed?.contexts ?? {} };
}

export function writeConfig(config: Config, env: NodeJS.ProcessEnv = process.env): void {
  const dir = configDir(env);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = configPath(env);
  const temp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(temp, stringify(config), { mode: 0o600 });
  fs.chmodSync(temp, 0o600);
  fs.renameSync(temp, file);
}

/** Sleeps the thread (the lock below is taken by short synchronous sections). */
const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Reads, changes and writes the file under a lock file (created exclusively), so that fleet
 * processes running at once (a script signing in to two contexts, several refreshing a
 * token) do not lose each other's changes. A lock older than 10 s is a crashed process's.
 */
export function updateConfig(change: (config: Config) => void, env: NodeJS.ProcessEnv = process.env): Config {
  fs.mkdirSync(configDir(env), { recursive: true, mode: 0o700 });
  const lock = `${configPath(env)}.lock`;
  for (let waited = 0; ; waited += 20) {
    try {
      fs.closeSync(fs.openSync(lock, "wx", 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const age = Date.now() - (fs.statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 10_000 || waited > 15_000) fs.rmSync(lock, { force: true });
      else sleepSync(20);
    }
  }
  try {
    const config = readConfig(env);
    change(config);
    writeConfig(config, env);
    return config;
  } finally {
    fs.rmSync(lock, { force: true });
  }
}

/** The context a command runs in: the environment's (FLEET_URL), --context, or the current one. */
export interface Resolved {
  name: string;
  context: Context;
  /** false for the environment's context: nothing of it is saved */
  stored: boolean;
}

export function resolveContext(config: Config, requested: string | undefined, env: NodeJS.ProcessEnv = process.env): Resolved {
  if (!requested && env.FLEET_URL) {
    const context: Context = { server: env.FLEET_URL.replace(/\/+$/, "") };
    if (env.FLEET_API_KEY) context.apiKey = env.FLEET_API_KEY;
    else if (env.FLEET_TOKEN) context.accessToken = env.FLEET_TOKEN;
    return { name: "(environment)", context, stored: false };
  }
  const name = requested ?? env.FLEET_CONTEXT ?? config.currentContext;
  if (!name) throw new CliError(EXIT.auth, "not signed in: run `fleet login URL` (or set FLEET_URL and FLEET_API_KEY)");
  const context = config.contexts[name];
  if (!context) throw new CliError(EXIT.usage, `no context named ${name} (fleet context list shows them)`);
  // An API key in the environment signs in to the chosen context's server.
  if (env.FLEET_API_KEY && !context.apiKey) return { name, context: { server: context.server, apiKey: env.FLEET_API_KEY }, stored: false };
  return { name, context, stored: true };
}
