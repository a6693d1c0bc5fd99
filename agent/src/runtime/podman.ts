// Podman with podman-compose (or `podman compose`, which hands over to a compose provider).
//
// podman-compose 1.0.3 (Debian 12) exits 0 from `pull` and `up -d` even when a `podman pull`
// or `podman run` it ran failed: it prints "exit code: N" after each podman command and goes
// on. So pull fails on any non-zero "exit code:" line, and up checks what it left behind: a
// service without a container, or a container that never started ("created"), fails with the
// podman error lines it printed. It has no `down` of a project by name and leaves networks
// behind, so down is done here by label with podman itself. Listing, logs and health checks use
// podman directly: they do not need the compose file.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { containerLogs, healthFromStatus, PROJECT_LABEL, SERVICE_LABEL, WORKING_DIR_LABEL } from "./cli-output.js";
import { composeServiceNames } from "./compose-file.js";
import type { ComposeEngine, ComposeProject, DownOptions, EngineOptions, LogLine, ProjectContainer, PullAuth } from "./engine.js";
import { EngineError, engineMessage, firstAnswering, runCommand } from "./exec.js";

interface PodmanPsEntry {
  Id: string;
  Names: string[];
  State: string;
  Status?: string;
  ExitCode?: number;
  Exited?: boolean;
  Labels?: Record<string, string> | null;
}

export interface PodmanEngineOptions extends EngineOptions {
  /** the compose program: ["podman-compose"] (default) or ["podman", "compose"] */
  compose?: string[];
  /** the podman program; default "podman" */
  podman?: string;
}

export class PodmanComposeEngine implements ComposeEngine {
  readonly kind = "podman" as const;
  private readonly compose: string[];
  private readonly podman: string;
  private readonly env: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(options: PodmanEngineOptions = {}) {
    this.compose = options.compose ?? ["podman-compose"];
    this.podman = options.podman ?? "podman";
    this.env = options.env ?? {};
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.pullTimeoutMs = options.pullTimeoutMs ?? 600_000;
  }

  /** podman-compose when installed, else `podman compose`; rejects when podman or both are missing. */
  static detect(options: EngineOptions = {}): Promise<PodmanComposeEngine> {
    return firstAnswering([new PodmanComposeEngine({ ...options, compose: ["podman-compose"] }), new PodmanComposeEngine({ ...options, compose: ["podman", "compose"] })]);
  }

  private podmanRun(args: string[], timeoutMs = this.timeoutMs) {
    return runCommand(this.podman, args, { env: this.env, timeoutMs });
  }

  private composeRun(project: ComposeProject, args: string[], timeoutMs = this.timeoutMs) {
    const [program, ...before] = this.compose;
    return runCommand(program, [...before, "-p", project.name, "-f", path.join(project.dir, "compose.yaml"), ...args], { env: this.env, cwd: project.dir, timeoutMs });
  }

  async version(): Promise<string> {
    const podman = (await this.podmanRun(["--version"])).stdout.trim();
    const [program, ...before] = this.compose;
    const { stdout } = await runCommand(program, [...before, "version"], { env: this.env, timeoutMs: this.timeoutMs }).catch((error: Error) => {
      throw new EngineError(`${this.compose.join(" ")}: ${error.message}`);
    });
    // podman-compose 1.0.3 says "podman-composer version  1.0.3"; providers say "... version vX".
    const line = stdout.split("\n").find((l) => /compose/i.test(l) && /version/i.test(l) && !l.startsWith("[")) ?? stdout.trim().split("\n")[0];
    return `${podman}; ${line.replace(/\s+/g, " ").trim()}`;
  }

  async pull(project: ComposeProject): Promise<void> {
    const { stdout, stderr } = await this.composeRun(project, ["pull"], this.pullTimeoutMs);
    if (failedCommand(stdout)) throw new EngineError(engineMessage(stderr) || "pulling an image failed");
  }

  async pullImage(image: string, auth?: PullAuth): Promise<void> {
    await this.podmanRun(["pull", "--quiet", ...(auth ? ["--authfile", path.join(auth.authDir, "config.json")] : []), image], this.pullTimeoutMs);
  }

  async up(project: ComposeProject): Promise<void> {
    const services = composeServiceNames(await readFile(path.join(project.dir, "compose.yaml"), "utf8"));
    const { stderr } = await this.composeRun(project, ["up", "-d"]);
    const containers = await this.containers(project.name);
    const missing = services.filter((service) => !containers.some((c) => c.service === service));
    const notStarted = containers.filter((c) => c.state === "created");
    if (missing.length || notStarted.length) {
      const which = [...missing.map((s) => `service ${s} has no container`), ...notStarted.map((c) => `${c.name} did not start`)].join(", ");
      const said = engineMessage(withoutRetryNoise(stderr));
      throw new EngineError(said ? `${said} (${which})` : which);
    }
  }

  async down(project: { name: string; dir?: string }, options: DownOptions = {}): Promise<void> {
    const filter = `label=${PROJECT_LABEL}=${project.name}`;
    const ids = (await this.podmanRun(["ps", "-a", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
    const stopSeconds = String(options.stopTimeoutSeconds ?? 10);
    if (ids.length) await this.podmanRun(["rm", "-f", "-t", stopSeconds, ...(options.volumes ? ["-v"] : []), ...ids]);
    const networks = (await this.podmanRun(["network", "ls", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
    if (networks.length) await this.podmanRun(["network", "rm", "-f", ...networks]);
    if (options.volumes) {
      const volumes = (await this.podmanRun(["volume", "ls", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
      if (volumes.length) await this.podmanRun(["volume", "rm", "-f", ...volumes]);
    }
  }

  private async ps(filter: string): Promise<PodmanPsEntry[]> {
    const { stdout } = await this.podmanRun(["ps", "-a", "--filter", filter, "--format", "json"]);
    return stdout.trim() ? (JSON.parse(stdout) as PodmanPsEntry[]) : [];
  }

  async containers(projectName: string): Promise<ProjectContainer[]> {
    return (await this.ps(`label=${PROJECT_LABEL}=${projectName}`)).map(projectContainer);
  }

  async containersOf(projectNames: readonly string[]): Promise<ProjectContainer[]> {
    if (!projectNames.length) return [];
    const wanted = new Set(projectNames);
    return (await this.ps(`label=${PROJECT_LABEL}`)).filter((entry) => wanted.has(entry.Labels?.[PROJECT_LABEL] ?? "")).map(projectContainer);
  }

  async logFile(containerName: string): Promise<string | null> {
    // k8s-file (podman's default without systemd) has a file; journald and none have not
    const { stdout } = await this.podmanRun(["container", "inspect", "--format", "{{.HostConfig.LogConfig.Type}} {{.HostConfig.LogConfig.Path}}", containerName]);
    const [type, file] = stdout.trim().split(" ");
    return type === "k8s-file" && file ? file : null;
  }

  async projects(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    for (const entry of await this.ps(`label=${PROJECT_LABEL}`)) names.add(entry.Labels?.[PROJECT_LABEL] ?? "");
    const { stdout } = await this.podmanRun(["network", "ls", "--filter", `label=${PROJECT_LABEL}`, "--format", "json"]);
    for (const network of (stdout.trim() ? JSON.parse(stdout) : []) as Array<{ labels?: Record<string, string> }>) names.add(network.labels?.[PROJECT_LABEL] ?? "");
    return [...names].filter((name) => name && name.startsWith(prefix)).sort();
  }

  logs(containerName: string, since: Date, options: { tail?: number } = {}): Promise<LogLine[]> {
    return containerLogs((args) => this.podmanRun(args), containerName, since, options.tail);
  }

  async runHealthCheck(containerName: string): Promise<void> {
    // Exit 1 means the check failed: podman recorded it, and containers() shows the outcome.
    await this.podmanRun(["healthcheck", "run", containerName]).catch(() => undefined);
  }
}

function projectContainer(entry: PodmanPsEntry): ProjectContainer {
  return {
    id: entry.Id,
    name: entry.Names[0],
    service: entry.Labels?.[SERVICE_LABEL] ?? "",
    workingDir: entry.Labels?.[WORKING_DIR_LABEL] ?? null,
    state: entry.State,
    health: healthFromStatus(entry.Status ?? ""),
    exitCode: entry.State === "exited" ? (entry.ExitCode ?? null) : null,
  };
}

/**
 * When `podman run` failed, podman-compose tries `podman start` of the container that was never
 * made and podman says there is no such container: true, and not the cause.
 */
function withoutRetryNoise(stderr: string): string {
  const lines = stderr.split("\n");
  const kept = lines.filter((line) => !/^Error: no container with name or ID ".*" found/.test(line.trim()));
  return kept.some((line) => line.trim().startsWith("Error")) ? kept.join("\n") : stderr;
}

/** podman-compose prints "exit code: N" after every podman command it ran. */
function failedCommand(stdout: string): boolean {
  return [...stdout.matchAll(/^exit code: (-?\d+)$/gm)].some((match) => match[1] !== "0");
}
