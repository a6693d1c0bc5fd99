// The container engine the agent runs compose deployments on, behind one interface: Podman
// (podman-compose, or `podman compose`) or Docker (`docker compose`, or `docker-compose`). A project is one compose
// file in a directory, run under a project name; everything the engine creates for it carries
// the label com.docker.compose.project=NAME, so a project is found, listed and removed by its
// name alone (after a crash, the directory may be gone).
//
// Engine settings (runtime, ulimits, registries) are the engine's own configuration: the agent
// passes none of them; a test or an operator gives them through the environment
// (CONTAINERS_CONF, CONTAINERS_REGISTRIES_CONF, DOCKER_HOST), which `env` adds to. Engine
// commands see only such variables of the agent's environment (exec.ts, engineEnvironment).
import { DockerComposeEngine } from "./docker.js";
import { EngineError, goDuration } from "./exec.js";
import { PodmanComposeEngine } from "./podman.js";

export { EngineError } from "./exec.js";

export interface ProjectContainer {
  id: string;
  name: string;
  /** the compose service it runs (label com.docker.compose.service) */
  service: string;
  /** running, exited, created, paused, restarting, ... as the engine says */
  state: string;
  /** null: the service declares no health check */
  health: "healthy" | "unhealthy" | "starting" | null;
  /** set once the container exited */
  exitCode: number | null;
  /** the directory of the compose file it was made from (label com.docker.compose.project.working_dir) */
  workingDir: string | null;
}

export interface LogLine {
  /** UTC, RFC 3339 with nine fraction digits (2026-11-27T13:43:05.100000000Z): sorts as text */
  timestamp: string;
  stream: "stdout" | "stderr";
  message: string;
}

export interface ComposeProject {
  /** the project name: [a-z0-9][a-z0-9_-]* */
  name: string;
  /** holds compose.yaml (and the .env beside it) */
  dir: string;
}

export interface EngineOptions {
  /** added to the environment of every engine command (CONTAINERS_CONF, DOCKER_HOST, ...) */
  env?: Record<string, string>;
  /** per command, milliseconds; pulls get `pullTimeoutMs` */
  timeoutMs?: number;
  pullTimeoutMs?: number;
}

export interface PullAuth {
  /** a directory holding config.json with the pull credential ({"auths": {host: {auth}}}, the format both engines read; mode 0600) */
  authDir: string;
}

export interface DownOptions {
  /** also the project's volumes (named and anonymous); default false */
  volumes?: boolean;
  /** how long a container may take to stop after SIGTERM before it is killed; default 10 (as compose) */
  stopTimeoutSeconds?: number;
}

export interface ComposeEngine {
  readonly kind: "podman" | "docker";
  /** the engine's and its compose program's version; rejects with a clear message when either is missing */
  version(): Promise<string>;
  /** pulls every image the project's compose file names (the "downloading" step); rejects with the engine's own message */
  pull(project: ComposeProject): Promise<void>;
  /**
   * pulls one image as it is named (by tag or by digest: the engine checks a digest itself); with
   * `auth`, with the credential of `auth.authDir`/config.json (the service's registry proxy)
   */
  pullImage(image: string, auth?: PullAuth): Promise<void>;
  /**
   * compose up -d of dir/compose.yaml under the project's name; rejects with the engine's message
   * when the file is refused or a service's container could not be created or started. An
   * existing container of the same name is kept, not recreated: take the project down first to
   * apply a changed file.
   */
  up(project: ComposeProject): Promise<void>;
  /** removes the project's containers and networks (volumes only when asked), found by label: works when dir is gone */
  down(project: { name: string; dir?: string }, options?: DownOptions): Promise<void>;
  /** the project's containers (label com.docker.compose.project=NAME), in every state */
  containers(projectName: string): Promise<ProjectContainer[]>;
  /** the containers of several projects, in one engine command (the idle loop's one look) */
  containersOf(projectNames: readonly string[]): Promise<ProjectContainer[]>;
  /**
   * the file the engine writes a container's log to (podman k8s-file, docker json-file), whose
   * size and time tell without an engine command whether the container wrote; null when its log
   * driver keeps no such file (journald)
   */
  logFile(containerName: string): Promise<string | null>;
  /** names of every project with a container or network here whose name starts with prefix (leftovers after a crash) */
  projects(prefix: string): Promise<string[]>;
  /** a container's log lines since a time, both streams, oldest first; `tail` keeps the last N */
  logs(containerName: string, since: Date, options?: { tail?: number }): Promise<LogLine[]>;
  /**
   * runs a container's health check once now. Podman schedules health checks with systemd
   * timers, so on a host without systemd (a container, a minimal image) nothing runs them but
   * this; docker's daemon runs them itself (a no-op there).
   */
  runHealthCheck(containerName: string): Promise<void>;
}

export type EngineKind = ComposeEngine["kind"];

/**
 * The engine to use: the preferred one when given (and only it), else Podman (podman-compose,
 * else `podman compose`), then Docker (`docker compose`, else `docker-compose`). Rejects naming what is missing.
 */
export async function detectEngine(preferred?: EngineKind, options: EngineOptions = {}): Promise<ComposeEngine> {
  const kinds: EngineKind[] = preferred ? [preferred] : ["podman", "docker"];
  const problems: string[] = [];
  for (const kind of kinds) {
    try {
      if (kind === "podman") return await PodmanComposeEngine.detect(options);
      return await DockerComposeEngine.detect(options);
    } catch (error) {
      problems.push(`${kind}: ${(error as Error).message}`);
    }
  }
  throw new EngineError(`no usable container engine (${problems.join("; ")})`);
}

export interface WaitOptions {
  /** between two looks at the containers; default 500 ms */
  pollMs?: number;
  /**
   * how long every container must have been seen running (and healthy) before the project
   * counts as running; default 1 s: a container that crashes right after its start is caught
   */
  steadyMs?: number;
  /** log lines quoted when a container exited; default 3 */
  logLines?: number;
}

/**
 * Resolves with the project's containers once every one of them runs (and is healthy where a
 * health check is declared) and stayed so for `steadyMs`. Rejects as soon as a container exited
 * (its exit code and the last lines of its log) or is unhealthy, or when `timeoutMs` passed
 * ("not running after 5m0s", naming the containers that are not).
 */
export async function waitUntilRunning(engine: ComposeEngine, projectName: string, timeoutMs: number, options: WaitOptions = {}): Promise<ProjectContainer[]> {
  const pollMs = options.pollMs ?? 500;
  const steadyMs = options.steadyMs ?? 1000;
  const deadline = Date.now() + timeoutMs;
  // The set of container ids first seen all ready, and when: a replaced container starts over.
  let readyIds = "";
  let readyAt = 0;
  for (;;) {
    const containers = await engine.containers(projectName);
    for (const container of containers) {
      if (container.state === "exited" || container.state === "dead") throw await exitedError(engine, container, options.logLines ?? 3);
      if (container.health === "unhealthy") throw await unhealthyError(engine, container, options.logLines ?? 3);
    }
    const waitingFor = containers.filter((c) => c.state !== "running" || c.health === "starting");
    const now = Date.now();
    if (containers.length && !waitingFor.length) {
      const ids = containers.map((c) => c.id).sort().join(",");
      if (readyIds !== ids) [readyIds, readyAt] = [ids, now];
      // At the deadline, containers that all run count even if they have not for steadyMs yet.
      if (now - readyAt >= steadyMs || now >= deadline) return containers;
    } else {
      readyIds = "";
    }
    if (now >= deadline) {
      const which = containers.length ? waitingFor.map(describe).join(", ") : "the project has no container";
      throw new EngineError(`not running after ${goDuration(timeoutMs)}: ${which}`);
    }
    // Podman without systemd runs no health check by itself: run the pending ones now. A slow
    // check does not hold the wait past its deadline (it goes on; the next look sees its result).
    const checks = Promise.all(waitingFor.filter((c) => c.state === "running" && c.health === "starting").map((c) => engine.runHealthCheck(c.name)));
    await settledWithin(checks, Math.max(0, deadline - Date.now()));
    await sleep(Math.min(pollMs, Math.max(0, deadline - Date.now())));
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits for a promise to settle, or at most ms (no timer left behind either way). */
async function settledWithin(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function describe(container: ProjectContainer): string {
  return `${container.name} is ${container.state}${container.health === "starting" ? " (health check not passed yet)" : ""}`;
}

async function lastLogLines(engine: ComposeEngine, container: ProjectContainer, count: number): Promise<string> {
  try {
    const lines = await engine.logs(container.name, new Date(0), { tail: count });
    return lines.map((line) => line.message).join("\n");
  } catch {
    return "";
  }
}

async function exitedError(engine: ComposeEngine, container: ProjectContainer, count: number): Promise<EngineError> {
  const log = await lastLogLines(engine, container, count);
  return new EngineError(`container ${container.name} (service ${container.service}) exited with code ${container.exitCode ?? "unknown"}${log ? `: ${log}` : ""}`);
}

async function unhealthyError(engine: ComposeEngine, container: ProjectContainer, count: number): Promise<EngineError> {
  const log = await lastLogLines(engine, container, count);
  return new EngineError(`container ${container.name} (service ${container.service}) is unhealthy${log ? `: ${log}` : ""}`);
}
