// A Docker daemon of the test's own for the fleet agent's Docker tests (test/agent/agent-docker-e2e.test.ts):
// Debian's dockerd (docker.io) started on a socket, data and run directories in a temporary
// directory, and stopped (its own process id) by close. Settings that keep it from touching the
// shared machine's network: no iptables rules and no default bridge (`--iptables=false
// --bridge=none`); compose projects get networks of their own, and a port published on 127.0.0.1
// is served by docker-proxy. vfs storage: no overlay mount is needed. Docker pulls from
// registries on 127.0.0.0/8 over plain HTTP by default, so the local registry needs no setting.
// Tests that use it skip without the peer: describe.skipIf(!peersAvailable("dockerd", ...)).
import { execFile, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { requirePeer } from "./peers.js";
import { eventually } from "./server-process.js";

const run = promisify(execFile);

export interface DockerHarness {
  /** for the engine: DOCKER_HOST of this daemon */
  env: Record<string, string>;
  /** docker with the harness's environment (for assertions: `docker ps -a ...`) */
  docker(args: string[]): Promise<string>;
  close(): Promise<void>;
}

export async function startDockerHarness(): Promise<DockerHarness> {
  const dockerd = requirePeer("dockerd");
  const dir = await mkdtemp(path.join(os.tmpdir(), "docker-harness-"));
  const env = { DOCKER_HOST: `unix://${path.join(dir, "docker.sock")}` };
  const daemon = spawn(dockerd, [
    "--data-root", path.join(dir, "data"), "--exec-root", path.join(dir, "run"), "--pidfile", path.join(dir, "docker.pid"),
    "--host", env.DOCKER_HOST, "--storage-driver", "vfs", "--iptables=false", "--ip6tables=false", "--bridge=none",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  const said: string[] = [];
  daemon.stderr!.on("data", (chunk: Buffer) => said.push(...chunk.toString("utf8").split("\n").filter(Boolean).slice(-20)));
  const exited = new Promise<void>((resolve) => daemon.once("exit", () => resolve()));
  const docker = async (args: string[]) => (await run("docker", args, { env: { ...process.env, ...env }, timeout: 120_000 })).stdout;
  try {
    await eventually(async () => {
      if (daemon.exitCode !== null) throw new Error(`dockerd exited (${daemon.exitCode}): ${said.slice(-5).join("\n")}`);
      return (await docker(["version", "--format", "{{.Server.Version}}"]).catch(() => "")).trim() || undefined;
    }, 60_000, "dockerd answering on its socket");
  } catch (error) {
    daemon.kill("SIGKILL");
    await exited;
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    env,
    docker,
    close: async () => {
      if (daemon.exitCode === null) {
        const stopped = setTimeout(() => daemon.kill("SIGKILL"), 30_000);
        daemon.kill("SIGTERM");
        await exited;
        clearTimeout(stopped);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
