// deploy/compose.yaml brought up by Docker Compose on Docker, as an operator on a Docker host does
// from deploy/ with a .env (compose-up.test.ts does the same with podman-compose). Docker here is
// a daemon of the test's own (test/support/docker.ts); the images are the ones the Podman tests
// build (the service's from the Containerfile, the local stand-in for the official postgres
// image: nothing can be pulled here), handed to Docker as `podman save` archives, as a team
// moves images between engines without a registry. Docker, unlike podman-compose 1.0, waits for
// PostgreSQL's health check (depends_on: service_healthy) and runs the image's own HEALTHCHECK.
// Skips without Docker (docker.io, docker-compose), Podman or mmdebstrap.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDockerHarness, type DockerHarness } from "../support/docker.js";
import { freePort } from "../support/oci-registry.js";
import { onPath, peersAvailable, requirePeer } from "../support/peers.js";
import { restClient } from "../support/rest-client.js";
import { composeSettings, DEPLOY, enrollThrough, expectRecordsKept, signIn, waitReady } from "./compose-support.js";
import { buildServiceImage, SERVICE_IMAGE, writeContainersConf } from "./service-image.js";
import { ensureStandInImage } from "./stand-in-images.js";

const run = promisify(execFile);

describe.skipIf(!peersAvailable("dockerd", "podman", "mmdebstrap"))("compose.yaml on Docker Compose", () => {
  let dir: string;
  let docker: DockerHarness;
  let settings: Record<string, string>;
  const project = `fleet-compose-docker-${process.pid}`;
  const numbers: Record<string, string> = {};

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-compose-docker-"));
    const podmanEnv = writeContainersConf(dir);
    const podman = async (args: string[], timeout = 25 * 60_000) => (await run(requirePeer("podman"), args, { env: podmanEnv, timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;
    const [, standIn] = await Promise.all([buildServiceImage(podman), ensureStandInImage(podman)]);
    docker = await startDockerHarness();
    const started = Date.now();
    for (const image of [SERVICE_IMAGE, standIn.ref]) {
      const archive = path.join(dir, "image.tar");
      await podman(["save", "--format", "docker-archive", "--output", archive, image]);
      await docker.docker(["load", "--quiet", "--input", archive]);
      fs.rmSync(archive);
    }
    numbers["images handed to Docker"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    settings = composeSettings(standIn.ref);
  }, 40 * 60_000);

  afterAll(async () => {
    if (docker) {
      await compose(["down", "--volumes", "--timeout", "5"]).catch(() => undefined);
      await docker.close();
    }
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    console.log(`compose on Docker Compose: ${Object.entries(numbers).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  });

  let port = 0;
  const compose = (args: string[], timeout = 300_000) =>
    run(onPath("docker-compose")!, ["--project-name", project, "--file", path.join(DEPLOY, "compose.yaml"), ...args], {
      cwd: DEPLOY, env: { ...process.env, ...docker.env, ...settings, FLEET_PORT: `127.0.0.1:${port}` }, timeout, maxBuffer: 64 * 1024 * 1024,
    }).then(({ stdout }) => stdout);
  const container = (service: string) => `${project}_${service}_1`;
  const health = async (name: string) => (await docker.docker(["inspect", "--format", "{{.State.Health.Status}}", name])).trim();

  it("comes up after PostgreSQL is healthy, reports healthy itself, enrolls a device, keeps every record across down and up, and stops on SIGTERM with 0", async () => {
    port = await freePort();
    const api = restClient(`http://127.0.0.1:${port}`, null);
    let started = Date.now();
    await compose(["up", "--detach", "--no-build"]);
    await waitReady(port);
    numbers["first up to ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    // Docker waited for PostgreSQL's health check before starting the service, and runs the image's
    expect(await health(container("postgres"))).toBe("healthy");
    await expect.poll(() => health(container("fleet-manager")), { timeout: 120_000, interval: 1000 }).toBe("healthy");
    // read-only root, not root
    await expect(docker.docker(["exec", container("fleet-manager"), "sh", "-c", "echo x > /app/x"])).rejects.toThrow(/Read-only file system/);
    expect((await docker.docker(["exec", container("fleet-manager"), "id", "-u"])).trim()).toBe("10001");

    const token = await signIn(api);
    const device = await enrollThrough(api, token, port, "docker device", "docker-device-1");

    // down removes the containers and keeps the volumes; up again finds every record
    await compose(["down", "--timeout", "30"]);
    expect((await docker.docker(["ps", "--all", "--quiet", "--filter", `name=${container("fleet-manager")}`])).trim()).toBe("");
    started = Date.now();
    await compose(["up", "--detach", "--no-build"]);
    await waitReady(port);
    numbers["up again to ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    await expectRecordsKept(api, token, device, "docker device");

    // SIGTERM (the compose file's stop_grace_period, which Docker Compose reads): exit code 0
    started = Date.now();
    await compose(["stop", "fleet-manager"]);
    numbers["stop"] = `${Date.now() - started} ms`;
    expect((await docker.docker(["inspect", "--format", "{{.State.ExitCode}}", container("fleet-manager")])).trim()).toBe("0");
  }, 15 * 60_000);
});
