// Running a container engine's command line: execFile (never a shell, arguments as an array),
// a timeout on every call, and failures turned into an EngineError whose message is what the
// engine itself said (the last lines of its stderr, without the noise it prints on a host
// without systemd), never a Node stack.
import { execFile } from "node:child_process";

/** A failure the engine reported; `message` is the engine's own words. */
export class EngineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "EngineError";
    // The message is what a device reports: no stack trace goes with it.
    this.stack = `${this.name}: ${message}`;
  }
}

/**
 * The agent's environment variables an engine command sees: the engine's own settings (podman's
 * CONTAINERS_*, DOCKER_*, proxies, locale, PATH, HOME). Nothing else: a compose file's
 * `${NAME}` interpolation must not read the agent's other variables (a token given to the
 * agent would otherwise reach a container); its values come from the .env file beside it.
 */
const ENGINE_VARIABLES =
  /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_[A-Z]+|TZ|TMPDIR|XDG_[A-Z_]+|DBUS_SESSION_BUS_ADDRESS|CONTAINERS_[A-Z_]+|CONTAINER_HOST|CONTAINER_CONNECTION|REGISTRY_AUTH_FILE|PODMAN_[A-Z_]+|BUILDAH_[A-Z_]+|DOCKER_[A-Z_]+|COMPOSE_[A-Z_]+|SSL_CERT_FILE|SSL_CERT_DIR|(?:HTTP|HTTPS|NO|ALL)_PROXY|(?:http|https|no|all)_proxy)$/;

/** The environment of an engine command: the engine's variables of this process, then `extra`. */
export function engineEnvironment(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && ENGINE_VARIABLES.test(name)) env[name] = value;
  return { ...env, ...extra };
}

export interface RunOptions {
  /** added to the engine's variables of this process (CONTAINERS_CONF and the like): engineEnvironment */
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs: number;
}

export interface RunResult {
  stdout: string;
  stderr: string;
}

/** The longest message an EngineError carries (a device report's message holds 2,000). */
const MESSAGE_LIMIT = 1000;

/**
 * Lines engines print on stderr that say nothing about the failure at hand: podman on a host
 * without systemd logs that it cannot schedule health-check timers or reach syslog.
 */
const NOISE = [/unable to get systemd connection/, /failed to connect to syslog/, /level=(warning|info|debug)/, /^\s*$/];

/**
 * What the engine said, for an error message: its "Error: ..." lines when it printed any (podman
 * and docker start every failure with one), else the last lines of its output; of a Python
 * traceback (podman-compose) only its last line, the exception's message.
 */
export function engineMessage(output: string, lines = 3): string {
  const meaningful = output.split(/\r?\n/).map((line) => line.trim()).filter((line) => !NOISE.some((noise) => noise.test(line)));
  // A Python compose program's traceback: its last line is the exception and its message.
  if (meaningful.some((line) => line.startsWith("Traceback (most recent call last)"))) return meaningful[meaningful.length - 1].slice(0, MESSAGE_LIMIT);
  const errors = [...new Set(meaningful.filter((line) => /^Error[:\s]/.test(line)))];
  const chosen = (errors.length ? errors : meaningful).slice(-lines).join("\n");
  return chosen.length > MESSAGE_LIMIT ? `…${chosen.slice(-MESSAGE_LIMIT)}` : chosen;
}

/** Runs one engine command; rejects with an EngineError carrying the engine's message. */
export function runCommand(file: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      file,
      args,
      { env: engineEnvironment(options.env), cwd: options.cwd, timeout: options.timeoutMs, killSignal: "SIGKILL", maxBuffer: 32 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        if (!error) return resolve({ stdout, stderr });
        const command = [file, ...args.slice(0, 2)].join(" ");
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return reject(new EngineError(`${file} is not installed (not found on PATH)`));
        if (error.killed) return reject(new EngineError(`${command} did not finish within ${Math.round(options.timeoutMs / 1000)} s${stderr.trim() ? `: ${engineMessage(stderr)}` : ""}`));
        const said = engineMessage(stderr) || engineMessage(stdout);
        reject(new EngineError(said || `${command} failed with exit code ${String(code)}`));
      },
    );
  });
}

/**
 * The first engine whose version() answers, tried in order (a compose program and its
 * alternative); rejects with the first one's error, which names what is missing.
 */
export async function firstAnswering<T extends { version(): Promise<string> }>(candidates: T[]): Promise<T> {
  let first: unknown;
  for (const candidate of candidates) {
    try {
      await candidate.version();
      return candidate;
    } catch (error) {
      first ??= error;
    }
  }
  throw first;
}

/** A duration the way compose and the manifest write it: 5m0s, 30s, 1h0m0s. */
export function goDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  if (hours) return `${hours}h${minutes}m${seconds}s`;
  if (minutes) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}
