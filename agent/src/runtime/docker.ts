// Docker with its compose program: the compose plugin (`docker compose`), else the standalone
// `docker-compose` (Compose v1, what Debian 12 packages; the plugin is not in its archive). Both
// read the same file and put the same labels on what they create. Only `pull` and `up -d` go
// through the compose program (`-p NAME -f FILE`); both fail with a non-zero exit on their own,
// so nothing beyond their stderr is read. Everything else is docker itself, by label, so it works
// when the compose file is gone (after a crash) and whichever compose program made the project:
// down (`docker stop -t`, `docker rm -v`, `docker network rm`; Compose v1 has no down without
// its file), listing (`docker ps -a --filter label=... --format '{{json .}}'`: one JSON object a
// line, labels as one "k=v,k=v" text, the exit code only in the status "Exited (3) ..."), logs,
// and the log file (`docker inspect`).
import path from "node:path";
import { containerLogs, exitCodeFromStatus, healthFromStatus, PROJECT_LABEL, SERVICE_LABEL, WORKING_DIR_LABEL } from "./cli-output.js";
import type { ComposeEngine, ComposeProject, DownOptions, EngineOptions, LogLine, ProjectContainer, PullAuth } from "./engine.js";
import { EngineError, firstAnswering, runCommand } from "./exec.js";

interface DockerPsLine {
  ID: string;
  Names: string;
  State: string;
  Status: string;
  /** "key=value,key=value" */
  Labels: string;
}

/** One label out of docker's "k=v,k=v" text (the compose labels hold no comma). */
function label(labels: string, key: string): string | undefined {
  for (const pair of labels.split(",")) {
    const at = pair.indexOf("=");
    if (at > 0 && pair.slice(0, at) === key) return pair.slice(at + 1);
  }
  return undefined;
}

function jsonLines<T>(text: string): T[] {
  return text.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line) as T);
}

export interface DockerEngineOptions extends EngineOptions {
  /** the compose program: ["docker", "compose"] (default) or ["docker-compose"] */
  compose?: string[];
  /** the docker program; default "docker" */
  docker?: string;
}

export class DockerComposeEngine implements ComposeEngine {
  readonly kind = "docker" as const;
  private readonly docker: string;
  private readonly compose: string[];
  private readonly env: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(options: DockerEngineOptions = {}) {
    this.docker = options.docker ?? "docker";
    this.compose = options.compose ?? [this.docker, "compose"];
    this.env = options.env ?? {};
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.pullTimeoutMs = options.pullTimeoutMs ?? 600_000;
  }

  /** `docker compose` when the plugin is there, else `docker-compose`; rejects when docker or both are missing. */
  static detect(options: DockerEngineOptions = {}): Promise<DockerComposeEngine> {
    return firstAnswering([new DockerComposeEngine({ ...options, compose: undefined }), new DockerComposeEngine({ ...options, compose: ["docker-compose"] })]);
  }

  private run(args: string[], timeoutMs = this.timeoutMs) {
    return runCommand(this.docker, args, { env: this.env, timeoutMs });
  }

  private composeRun(project: ComposeProject, args: string[], timeoutMs = this.timeoutMs) {
    const [program, ...before] = this.compose;
    return runCommand(program, [...before, "-p", project.name, "-f", path.join(project.dir, "compose.yaml"), ...args], { env: this.env, cwd: project.dir, timeoutMs });
  }

  async version(): Promise<string> {
    const docker = (await this.run(["--version"])).stdout.trim();
    const [program, ...before] = this.compose;
    const { stdout } = await runCommand(program, [...before, "version"], { env: this.env, timeoutMs: this.timeoutMs }).catch((error: Error) => {
      throw new EngineError(`${this.compose.join(" ")}: ${error.message}`);
    });
    // "Docker Compose version v2.29.1"; docker-compose 1.x: "docker-compose version 1.29.2, build unknown" and more lines
    return `${docker}; ${stdout.trim().split("\n")[0].trim()}`;
  }

  async pull(project: ComposeProject): Promise<void> {
    await this.composeRun(project, ["pull"], this.pullTimeoutMs);
  }

  async pullImage(image: string, auth?: PullAuth): Promise<void> {
    await this.run([...(auth ? ["--config", auth.authDir] : []), "pull", "--quiet", image], this.pullTimeoutMs);
  }

  async up(project: ComposeProject): Promise<void> {
    await this.composeRun(project, ["up", "-d"]);
  }

  async down(project: { name: string; dir?: string }, options: DownOptions = {}): Promise<void> {
    const filter = `label=${PROJECT_LABEL}=${project.name}`;
    const ids = (await this.run(["ps", "-a", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
    if (ids.length) {
      await this.run(["stop", "--time", String(options.stopTimeoutSeconds ?? 10), ...ids]);
      await this.run(["rm", "--force", ...(options.volumes ? ["--volumes"] : []), ...ids]);
    }
    const networks = (await this.run(["network", "ls", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
    if (networks.length) await this.run(["network", "rm", ...networks]);
    if (options.volumes) {
      const volumes = (await this.run(["volume", "ls", "-q", "--filter", filter])).stdout.split("\n").filter(Boolean);
      if (volumes.length) await this.run(["volume", "rm", "--force", ...volumes]);
    }
  }

  async containers(projectName: string): Promise<ProjectContainer[]> {
    return this.list(`label=${PROJECT_LABEL}=${projectName}`);
  }

  async containersOf(projectNames: readonly string[]): Promise<ProjectContainer[]> {
    if (!projectNames.length) return [];
    const wanted = new Set(projectNames);
    return (await this.list(`label=${PROJECT_LABEL}`, true)).filter((c) => wanted.has(c.project ?? "")).map(({ project: _, ...c }) => c);
  }

  async logFile(containerName: string): Promise<string | null> {
    // json-file and local have a file docker writes; journald and the rest have not
    const { stdout } = await this.run(["inspect", "--format", "{{.HostConfig.LogConfig.Type}} {{.LogPath}}", containerName]);
    const [type, file] = stdout.trim().split(" ");
    return (type === "json-file" || type === "local") && file ? file : null;
  }

  private async list(filter: string, withProject = false): Promise<Array<ProjectContainer & { project?: string }>> {
    const { stdout } = await this.run(["ps", "-a", "--filter", filter, "--format", "{{json .}}"]);
    return jsonLines<DockerPsLine>(stdout).map((line) => ({
      ...(withProject ? { project: label(line.Labels, PROJECT_LABEL) } : {}),
      id: line.ID,
      name: line.Names.split(",")[0],
      service: label(line.Labels, SERVICE_LABEL) ?? "",
      workingDir: label(line.Labels, WORKING_DIR_LABEL) ?? null,
      state: line.State,
      health: healthFromStatus(line.Status),
      exitCode: line.State === "exited" ? exitCodeFromStatus(line.Status) : null,
    }));
  }

  async projects(prefix: string): Promise<string[]> {
    const names = new Set<string>();
    const containers = await this.run(["ps", "-a", "--filter", `label=${PROJECT_LABEL}`, "--format", "{{json .}}"]);
    for (const line of jsonLines<DockerPsLine>(containers.stdout)) names.add(label(line.Labels, PROJECT_LABEL) ?? "");
    const networks = await this.run(["network", "ls", "--filter", `label=${PROJECT_LABEL}`, "--format", "{{json .}}"]);
    for (const line of jsonLines<{ Labels: string }>(networks.stdout)) names.add(label(line.Labels, PROJECT_LABEL) ?? "");
    return [...names].filter((name) => name && name.startsWith(prefix)).sort();
  }

  logs(containerName: string, since: Date, options: { tail?: number } = {}): Promise<LogLine[]> {
    return containerLogs((args) => this.run(args), containerName, since, options.tail);
  }

  async runHealthCheck(): Promise<void> {
    // dockerd runs health checks on their own schedule.
  }
}
