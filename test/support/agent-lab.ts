// A lab for the real fleet agent (test/agent/agent-e2e.test.ts, bench/agent.ts): the service
// started as `npm start` starts it, real Podman (runc) with a busybox image in a local OCI
// registry (test/support/podman.ts), compose packages of an application `web-demo` in that
// registry (version 3.0.0's container exits), the application's manifests in a Git registry,
// and `fleet-agent` processes run from agent/bin. The agent reaches the service through a TCP
// proxy on loopback that counts the bytes and can take the service away (an outage).
// Everything on loopback.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { startGitServer, type GitServer } from "./git-server/index.js";
import { freePort, startOciRegistry, type OciRegistryServer } from "./oci-registry.js";
import { startDockerHarness, type DockerHarness } from "./docker.js";
import { startPodmanHarness, type PodmanHarness } from "./podman.js";
import { eventually, ROOT, spawnService, type ServerProcess } from "./server-process.js";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.js";

const runFile = promisify(execFile);
export const LAB_KEY = "fm_" + "A".repeat(40);
export const LAB_ADMIN = { email: "admin@agent.test", password: "agent-admin-password-1" };
const COMPOSE_LAYER = "application/vnd.fleet.compose.v1+yaml";
export const AGENT_BIN = path.join(ROOT, "agent/bin/fleet-agent.js");
export const LAB_APP = "web-demo";
/** versions of web-demo whose packages are in the registry; 3.0.0's container exits with code 3 */
export const LAB_VERSIONS = ["1.0.0", "2.0.0", "3.0.0"] as const;
/** with `privateRegistry`: the version whose image is in the private registry */
export const LAB_PRIVATE_VERSION = "4.0.0";
/** with `privateRegistry`: the version whose compose file pins the private image by digest (image: host/repo@sha256:...) */
export const LAB_PRIVATE_DIGEST_VERSION = "5.0.0";
/** the service's JWT_SECRET (a test signs pull grants with the key derived from it: src/modules/agent/pull-grant.ts) */
export const LAB_JWT_SECRET = "agent-lab-jwt-secret-".padEnd(48, "x");

export interface AgentLabOptions {
  /** compose components of the application (each a busybox httpd on a port of its own); default 1 */
  components?: number;
  /** the service's heartbeat interval; default 5 s */
  heartbeatSeconds?: number;
  /** the agent's environment on top of the engine's (FLEET_AGENT_TELEMETRY_SECONDS, ...) */
  agentEnv?: Record<string, string>;
  /** the agent's program (node runs it); default agent/bin/fleet-agent.js (the sources); a bundle made by `npm run build:agent` as a device runs it */
  agentProgram?: string;
  /**
   * also a private registry (htpasswd BASIC) holding the busybox image, added to the organization
   * with its credential, and version LAB_PRIVATE_VERSION whose compose file names that image
   */
  privateRegistry?: boolean;
  /** "migrated": the service on this test phase's database (PostgreSQL on the run with DATABASE_URL); default an empty PGlite */
  database?: "migrated";
  /**
   * the engine the agent runs its deployments on (`fleet-agent run --engine`); default podman.
   * "docker": a Docker daemon of the lab's own (test/support/docker.ts); Podman still prepares
   * the images and the registries
   */
  engine?: "podman" | "docker";
}

export interface AgentLab {
  service: ServerProcess;
  podman: PodmanHarness;
  /** with engine "docker": the lab's Docker daemon */
  docker: DockerHarness | null;
  proxy: TcpProxy;
  /** with `privateRegistry`: the registry, its credential, its id at the service, the image in it (by tag) and its manifest's digest */
  privateRegistry: { server: OciRegistryServer; credential: string; id: string; image: string; digest: string } | null;
  /** the address the agent is enrolled with (the proxy) */
  agentUrl: string;
  stateDir: string;
  applicationId: string;
  deviceId: string;
  /** the component names and the loopback port each one's page answers on */
  components: Array<{ name: string; port: number }>;
  /** the lines the running agent printed */
  agentOutput: string[];
  agent: ChildProcess | null;
  /** the REST API as the admin's key (throws on anything but 2xx) */
  call<T = any>(method: string, p: string, body?: unknown): Promise<T>;
  api: ServerProcess["api"];
  /** fleet-agent enroll with a new enrollment token; answers what it printed */
  enroll(args?: string[], tokenBody?: Record<string, unknown>): Promise<string>;
  startAgent(): ChildProcess;
  stopAgent(signal?: NodeJS.Signals): Promise<void>;
  /** kill -9 of the running agent in the same tick as it prints a line that `match` accepts; resolves once it exited */
  killAgentWhen(match: (line: string) => boolean, timeoutMs?: number): Promise<void>;
  /** creates and starts a deployment of a version to the lab's device; its id */
  deploy(version: string, parameters?: Record<string, unknown>): Promise<string>;
  deviceState(deploymentId: string): Promise<{ state: string; message: string | null } | undefined>;
  /** the device's state of a deployment once it is `state` (fails at once on an unexpected failure) */
  waitForState(deploymentId: string, state: string, timeoutMs?: number): Promise<{ state: string; message: string | null }>;
  /** a component's page, trimmed, or null when nothing answers */
  page(component?: string): Promise<string | null>;
  /** names of the containers of a component's compose project, any state */
  projectContainers(component?: string): Promise<string[]>;
  close(): Promise<void>;
}

export async function startAgentLab(options: AgentLabOptions = {}): Promise<AgentLab> {
  const podman = await startPodmanHarness();
  const docker = options.engine === "docker" ? await startDockerHarness() : null;
  /** the engine the agent runs on, for assertions */
  const engineCli = (args: string[]) => (docker ? docker.docker(args) : podman.podman(args));
  const components = await Promise.all(
    Array.from({ length: options.components ?? 1 }, async (_, i) => ({ name: i === 0 ? "web" : `web${i + 1}`, port: await freePort() })),
  );
  const host = new URL(podman.registry.url).host;
  let privateServer: OciRegistryServer | null = null;
  let privateImage = "";
  let privateDigest = "";
  const privateCredential = { username: "lab-puller", password: `lab-${Math.random().toString(36).slice(2)}-secret` };
  if (options.privateRegistry) {
    privateServer = await startOciRegistry({ basic: privateCredential });
    const privateHost = new URL(privateServer.url).host;
    privateImage = `${privateHost}/fleet-private/busybox:1`;
    // the harness's image, copied into the private registry (and then only there)
    await podman.podman(["pull", "--quiet", "--tls-verify=false", podman.image]);
    await podman.podman(["tag", podman.image, privateImage]);
    await podman.podman(["push", "--quiet", "--tls-verify=false", "--creds", `${privateCredential.username}:${privateCredential.password}`, privateImage]);
    await podman.podman(["rmi", "--force", podman.image, privateImage]);
    const head = await fetch(`${privateServer.url}/v2/fleet-private/busybox/manifests/1`, {
      method: "HEAD", headers: { accept: "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json", authorization: privateServer.authorization! },
    });
    privateDigest = head.headers.get("docker-content-digest") ?? "";
    if (!head.ok || !/^sha256:[0-9a-f]{64}$/.test(privateDigest)) throw new Error(`the private image's manifest: ${head.status} ${privateDigest}`);
    fs.appendFileSync(podman.env.CONTAINERS_REGISTRIES_CONF, `[[registry]]\nlocation = "${privateHost}"\ninsecure = true\n`);
  }
  const versions: readonly string[] = options.privateRegistry ? [...LAB_VERSIONS, LAB_PRIVATE_VERSION, LAB_PRIVATE_DIGEST_VERSION] : LAB_VERSIONS;

  const composeFile = (component: { name: string; port: number }, version: string, exits: boolean) => {
    const script = exits
      ? `echo "version ${version} cannot start: missing configuration" >&2; exit 3`
      // httpd in the background and a TERM trap: a shell as PID 1 ignores SIGTERM, and every
      // `down` would wait out the engine's 10 s stop timeout ($$ is a literal $ to compose)
      : `echo "version ${version} says $$GREETING" > /tmp/index.html; echo "serving version ${version}"; httpd -f -p 8080 -h /tmp & trap "kill $$!; exit 0" TERM; wait`;
    const image = version === LAB_PRIVATE_VERSION ? privateImage
      : version === LAB_PRIVATE_DIGEST_VERSION ? `${privateImage.replace(/:1$/, "")}@${privateDigest}`
      : podman.image;
    return stringify({ services: { web: { image, command: ["/bin/sh", "-c", script], ports: [`127.0.0.1:${component.port}:8080`] } } });
  };
  for (const version of versions) {
    for (const component of components) {
      const repository = `fleet-test/${component.name}-compose`;
      const config = await podman.registry.pushBlob(repository, "{}", "application/vnd.oci.empty.v1+json");
      const layer = await podman.registry.pushBlob(repository, composeFile(component, version, version === "3.0.0"), COMPOSE_LAYER);
      await podman.registry.pushManifest(repository, version, {
        schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json", artifactType: "application/vnd.fleet.compose.v1", config, layers: [layer],
      });
    }
  }
  const appYaml = (version: string) => stringify({
    apiVersion: "fleet.app/v1alpha1",
    kind: "ApplicationManifest",
    metadata: { id: LAB_APP, name: "Web demo", version },
    deploymentProfiles: [{
      id: "compose", type: "compose",
      components: components.map((c) => ({ name: c.name, properties: { repository: `oci://${host}/fleet-test/${c.name}-compose`, revision: version, timeout: "1m0s" } })),
    }],
    parameters: { greeting: { value: "hello", targets: [{ pointer: "GREETING", components: components.map((c) => c.name) }] } },
  });
  const git: GitServer = await startGitServer();
  const repo = await git.createRepo("fleet-apps", Object.fromEntries(versions.map((v) => [`apps/${v}/app.yaml`, appYaml(v)])));

  const service = await spawnService("agent-lab", {
    BOOTSTRAP_ADMIN_EMAIL: LAB_ADMIN.email, BOOTSTRAP_ADMIN_PASSWORD: LAB_ADMIN.password, BOOTSTRAP_API_KEY: LAB_KEY,
    HEARTBEAT_INTERVAL_SECONDS: String(options.heartbeatSeconds ?? 5), JWT_SECRET: LAB_JWT_SECRET,
  }, { defaultKey: LAB_KEY, database: options.database });
  const serviceUrl = new URL(service.url);
  const proxy = await startTcpProxy(serviceUrl.hostname, Number(serviceUrl.port));
  // The agent pulls private images from the service's registry proxy, here plain HTTP on loopback.
  if (options.privateRegistry) fs.appendFileSync(podman.env.CONTAINERS_REGISTRIES_CONF, `[[registry]]\nlocation = "127.0.0.1:${proxy.port}"\ninsecure = true\n`);
  const call = async <T = any>(method: string, p: string, body?: unknown): Promise<T> => {
    const res = await service.api<T>(method, p, { body });
    if (res.status >= 300) throw new Error(`${method} ${p} answered ${res.status}: ${res.text}`);
    return res.body;
  };
  await call("POST", "/api/v1/ca-certificates/generate", { name: "agent-lab-ca", commonName: "Agent Lab CA" });
  // The compose packages' registry: the service reads them for the device with its credential.
  await call("POST", "/api/v1/registries/oci", { name: "compose packages", url: podman.registry.url, syncIntervalMinutes: 0 });
  const privateRegistry = privateServer
    ? {
      server: privateServer, credential: `${privateCredential.username}:${privateCredential.password}`, image: privateImage, digest: privateDigest,
      id: (await call<{ id: string }>("POST", "/api/v1/registries/oci", {
        name: "private images", url: privateServer.url, authType: "BASIC", credential: `${privateCredential.username}:${privateCredential.password}`, syncIntervalMinutes: 0,
      })).id,
    }
    : null;
  const registry = await call<{ id: string }>("POST", "/api/v1/registries/git", { name: "fleet apps", url: repo.url, syncIntervalMinutes: 0 });
  const sync = await call<{ applicationsImported: number }>("POST", `/api/v1/registries/git/${registry.id}/sync`);
  if (sync.applicationsImported !== versions.length) throw new Error(`the Git registry's sync imported ${sync.applicationsImported} versions`);
  const apps = await call<{ items: Array<{ id: string; name: string }> }>("GET", "/api/v1/applications?limit=50");
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-agent-state-"));
  const agentEnv = { ...process.env, ...podman.env, ...docker?.env, ...options.agentEnv };
  let deployments = 0;
  const program = options.agentProgram ?? AGENT_BIN;

  const lab: AgentLab = {
    service, podman, docker, proxy, stateDir, components, privateRegistry,
    agentUrl: `http://127.0.0.1:${proxy.port}`,
    applicationId: apps.items.find((a) => a.name === "Web demo")!.id,
    deviceId: "",
    agentOutput: [],
    agent: null,
    call,
    api: service.api,
    async enroll(args = [], tokenBody = {}) {
      const token = await call<{ token: string }>("POST", "/api/v1/enrollment-tokens", { name: "agent lab", ...tokenBody });
      const { stdout } = await runFile(process.execPath, [program, "enroll", "--url", lab.agentUrl, "--token", token.token, "--state-dir", stateDir, ...args], { env: agentEnv, timeout: 60_000 });
      lab.deviceId = JSON.parse(fs.readFileSync(path.join(stateDir, "identity.json"), "utf8")).deviceId;
      return stdout;
    },
    startAgent() {
      lab.agentOutput = [];
      const agent = spawn(process.execPath, [program, "run", "--state-dir", stateDir, ...(docker ? ["--engine", "docker"] : [])], { env: agentEnv, stdio: ["ignore", "pipe", "pipe"] });
      for (const stream of [agent.stdout, agent.stderr]) stream.on("data", (chunk: Buffer) => lab.agentOutput.push(...chunk.toString("utf8").split("\n").filter(Boolean)));
      lab.agent = agent;
      return agent;
    },
    async stopAgent(signal = "SIGTERM") {
      const agent = lab.agent;
      if (!agent || agent.exitCode !== null || agent.signalCode !== null) return;
      const exited = new Promise((resolve) => agent.once("exit", resolve));
      agent.kill(signal);
      await exited;
    },
    killAgentWhen(match, timeoutMs = 120_000) {
      const agent = lab.agent;
      if (!agent || agent.exitCode !== null || agent.signalCode !== null) return Promise.reject(new Error("the agent is not running"));
      return new Promise((resolve, reject) => {
        let killed = false;
        const onData = (chunk: Buffer) => {
          if (killed || !chunk.toString("utf8").split("\n").some(match)) return;
          killed = agent.kill("SIGKILL");
        };
        const timer = setTimeout(() => agent.kill("SIGKILL"), timeoutMs);
        for (const stream of [agent.stdout!, agent.stderr!]) stream.on("data", onData);
        agent.once("exit", () => {
          clearTimeout(timer);
          for (const stream of [agent.stdout!, agent.stderr!]) stream.off("data", onData);
          if (killed) resolve();
          else reject(new Error(`the agent exited without printing the line awaited (within ${timeoutMs} ms)`));
        });
      });
    },
    async deploy(version, parameters = {}) {
      const created = await call<{ id: string }>("POST", "/api/v1/deployments", {
        name: `${LAB_APP}-${version}-${++deployments}`, applicationId: lab.applicationId, version, profileId: "compose", parameters, target: { deviceIds: [lab.deviceId] },
      });
      await call("POST", `/api/v1/deployments/${created.id}/start`);
      return created.id;
    },
    async deviceState(deploymentId) {
      const page = await call<{ items: Array<{ deviceId: string; state: string; message: string | null }> }>("GET", `/api/v1/deployments/${deploymentId}/devices?limit=10`);
      return page.items.find((i) => i.deviceId === lab.deviceId);
    },
    waitForState(deploymentId, state, timeoutMs = 120_000) {
      return eventually(async () => {
        const current = await lab.deviceState(deploymentId);
        if (current?.state === state) return current;
        if (current?.state === "failed" && state !== "failed") throw new Error(`the device failed: ${current.message}\n${lab.agentOutput.join("\n")}`);
        return undefined;
      }, timeoutMs, `device state ${state} of ${deploymentId}`);
    },
    async page(component = "web") {
      const port = components.find((c) => c.name === component)!.port;
      const res = await fetch(`http://127.0.0.1:${port}/index.html`).catch(() => null);
      return res && res.ok ? (await res.text()).trim() : null;
    },
    async projectContainers(component = "web") {
      const project = `fleet-${lab.applicationId}-${component}`;
      const out = await engineCli(["ps", "-a", "--filter", `label=com.docker.compose.project=${project}`, "--format", "{{.Names}} {{.State}}"]);
      return out.trim().split("\n").filter(Boolean);
    },
    async close() {
      await lab.stopAgent("SIGKILL");
      // only this lab's projects: other test files may run containers at the same time
      for (const component of components) {
        const names = (await lab.projectContainers(component.name).catch(() => [])).map((line) => line.split(" ")[0]);
        if (names.length) await engineCli(["rm", "-f", ...names]).catch(() => undefined);
      }
      await proxy.close();
      await service.stop();
      await git.close();
      await podman.podman(["rmi", "--force", "--ignore", privateImage || podman.image]).catch(() => undefined);
      // the private images as the agent pulled them: named at the service's registry proxy
      if (privateRegistry) {
        const proxied = `127.0.0.1:${proxy.port}/${privateRegistry.id}/fleet-private/busybox`;
        await podman.podman(["rmi", "--force", "--ignore", `${proxied}:1`, `${proxied}@${privateDigest}`]).catch(() => undefined);
      }
      await privateServer?.close();
      await podman.close();
      await docker?.close();
      fs.rmSync(stateDir, { recursive: true, force: true });
    },
  };
  return lab;
}
