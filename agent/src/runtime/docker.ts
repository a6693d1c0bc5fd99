// Docker with the compose plugin (`docker compose`). Written against the documented command
// line (`docker compose -p NAME -f FILE pull|up -d`, `docker compose -p NAME down`, `docker ps
// --format '{{json .}}'`); only Podman is installed on the machines the tests run on, so this
// engine is not exercised by them. docker compose fails with a non-zero exit on its own, so no
// output needs reading beyond its stderr.
import path from "node:path";
import { containerLogs, exitCodeFromStatus, healthFromStatus, PROJECT_LABEL, SERVICE_LABEL, WORKING_DIR_LABEL } from "./cli-output.js";
import type { ComposeEngine, ComposeProject, DownOptions, EngineOptions, LogLine, ProjectContainer, ProxiedPull } from "./engine.js";
import { runCommand } from "./exec.js";

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

export class DockerComposeEngine implements ComposeEngine {
  readonly kind = "docker" as const;
  private readonly docker: string;
  private readonly env: Record<string, string>;
  private readonly timeoutMs: number;
  private readonly pullTimeoutMs: number;

  constructor(options: EngineOptions & { docker?: string } = {}) {
    this.docker = options.docker ?? "docker";
    this.env = options.env ?? {};
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.pullTimeoutMs = options.pullTimeoutMs ?? 600_000;
  }

  private run(args: string[], timeoutMs = this.timeoutMs, cwd?: string) {
    return runCommand(this.docker, args, { env: this.env, timeoutMs, cwd });
  }

  private composeArgs(project: ComposeProject, args: string[]) {
    return ["compose", "-p", project.name, "-f", path.join(project.dir, "compose.yaml"), ...args];
  }

  async version(): Promise<string> {
    const docker = (await this.run(["--version"])).stdout.trim();
    const compose = (await this.run(["compose", "version"])).stdout.trim();
    return `${docker}; ${compose}`;
  }

  async pull(project: ComposeProject): Promise<void> {
    await this.run(this.composeArgs(project, ["pull"]), this.pullTimeoutMs, project.dir);
  }

  async pullImage(reference: string, via?: ProxiedPull): Promise<void> {
    if (!via) return void (await this.run(["pull", "--quiet", reference], this.pullTimeoutMs));
    await this.run(["--config", via.authDir, "pull", "--quiet", via.image], this.pullTimeoutMs);
    await this.run(["tag", via.image, reference]);
    await this.run(["rmi", via.image]); // only this name: the image keeps `reference`
  }

  async up(project: ComposeProject): Promise<void> {
    await this.run(this.composeArgs(project, ["up", "-d"]), this.timeoutMs, project.dir);
  }

  async down(project: { name: string; dir?: string }, options: DownOptions = {}): Promise<void> {
    // Without -f, docker compose finds the project's containers, networks and volumes by label.
    const stopSeconds = String(options.stopTimeoutSeconds ?? 10);
    await this.run(["compose", "-p", project.name, "down", "--remove-orphans", "--timeout", stopSeconds, ...(options.volumes ? ["--volumes"] : [])]);
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
