// deploy/compose.yaml and deploy/compose.replicas.yaml brought up with podman-compose, as an
// operator does from deploy/ with a .env: the service's image (test/deploy/service-image.ts),
// PostgreSQL and, for the replicas, nginx. No image can be pulled here, so POSTGRES_IMAGE and
// PROXY_IMAGE name a local stand-in for the official images (test/deploy/stand-in-images.ts:
// Debian's PostgreSQL 15 and nginx behind the official postgres image's entrypoint contract);
// the compose files' defaults stay the official images. Published ports on loopback only
// (FLEET_PORT=127.0.0.1:PORT). Skips without Podman (and podman-compose) or mmdebstrap.
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsonClient, VirtualDevice } from "../../src/simulator/index.js";
import { freePort } from "../support/oci-registry.js";
import { onPath, peersAvailable, requirePeer } from "../support/peers.js";
import { restClient } from "../support/rest-client.js";
import { composeSettings, DEPLOY, enrollThrough, expectRecordsKept, signIn, waitReady } from "./compose-support.js";
import { buildServiceImage, writeContainersConf } from "./service-image.js";
import { ensureStandInImage } from "./stand-in-images.js";

const run = promisify(execFile);
/** podman-compose's stop grace (`down -t`): the compose files' stop_grace_period, which podman-compose 1.0 does not read */
const STOP_GRACE_SECONDS = "30";

describe.skipIf(!peersAvailable("podman", "mmdebstrap"))("the compose files on podman-compose", () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const numbers: Record<string, string> = {};
  const projects: string[] = [];

  const podman = async (args: string[], timeout = 120_000) =>
    (await run(requirePeer("podman"), args, { env, timeout, maxBuffer: 64 * 1024 * 1024 })).stdout;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-compose-up-"));
    const engine = writeContainersConf(dir);
    env = engine;
    const [build, standIn] = await Promise.all([buildServiceImage(podman), ensureStandInImage((args) => podman(args, 25 * 60_000))]);
    numbers.build = `${build.seconds} s`;
    // the .env an operator writes from compose.env.example
    env = { ...engine, ...composeSettings(standIn.ref) };
  }, 40 * 60_000);

  afterAll(async () => {
    if (!env) return;
    for (const project of projects) {
      await podman(["ps", "--all", "--quiet", "--filter", `label=io.podman.compose.project=${project}`])
        .then((ids) => ids.trim() && podman(["rm", "--force", "--time", "5", ...ids.trim().split("\n")]))
        .catch(() => undefined);
      const volumes = (await podman(["volume", "ls", "--quiet", "--filter", `label=io.podman.compose.project=${project}`]).catch(() => "")).trim();
      if (volumes) await podman(["volume", "rm", "--force", ...volumes.split("\n")]).catch(() => undefined);
      await podman(["network", "rm", "--force", `${project}_default`]).catch(() => undefined);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    console.log(`compose on podman-compose: ${Object.entries(numbers).map(([k, v]) => `${k} ${v}`).join(", ")}`);
  });

  /** A compose project of its own per test: podman-compose in deploy/ with `file`, publishing on `port` of the loopback. */
  function project(file: string, port: number) {
    const name = `fleet-compose-${process.pid}-${projects.length}`;
    projects.push(name);
    const compose = async (args: string[], timeout = 300_000) =>
      run(onPath("podman-compose")!, ["--project-name", name, "--file", path.join(DEPLOY, file), ...args], {
        cwd: DEPLOY, env: { ...env, FLEET_PORT: `127.0.0.1:${port}` }, timeout, maxBuffer: 64 * 1024 * 1024, encoding: "buffer",
      }).then(({ stdout }) => stdout);
    return { name, compose, container: (service: string) => `${name}_${service}_1` };
  }

  async function memory(container: string): Promise<string> {
    return (await podman(["stats", "--no-stream", "--format", "{{.MemUsage}}", container])).trim().split(" / ")[0];
  }

  /** A request to the service from inside its own container (the replicas publish no port): status and body. */
  async function inside(container: string, method: string, urlPath: string, token: string, body?: unknown): Promise<{ status: number; body: any }> {
    const script = `fetch("http://127.0.0.1:3000" + process.argv[1], { method: process.argv[2], headers: { authorization: "Bearer " + process.argv[3], "content-type": "application/json" }, body: process.argv[4] || undefined })
      .then(async (r) => console.log(JSON.stringify({ status: r.status, body: await r.json() })))`;
    const out = await podman(["exec", container, "node", "-e", script, urlPath, method, token, body === undefined ? "" : JSON.stringify(body)]);
    return JSON.parse(out);
  }

  it("compose.yaml: the service on PostgreSQL comes up, signs the admin in, enrolls a device, keeps everything across down and up, and pg_dump backs it up", async () => {
    const port = await freePort();
    const { compose, container } = project("compose.yaml", port);
    const api = restClient(`http://127.0.0.1:${port}`, null);

    let started = Date.now();
    await compose(["up", "--detach", "--no-build"]);
    await waitReady(port);
    numbers["first up to ready (PostgreSQL created, every migration)"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    // read-only root, not root, PostgreSQL's health check passes
    await expect(podman(["exec", container("fleet-manager"), "sh", "-c", "echo x > /app/x"])).rejects.toThrow(/Read-only file system/);
    expect((await podman(["exec", container("fleet-manager"), "id", "-u"])).trim()).toBe("10001");
    expect(await podman(["healthcheck", "run", container("postgres")]).then(() => "healthy", (err: Error) => err.message)).toBe("healthy");

    const token = await signIn(api);
    const device = await enrollThrough(api, token, port, "compose device", "compose-device-1");

    await new Promise((resolve) => setTimeout(resolve, 5000));
    numbers["idle memory: service"] = await memory(container("fleet-manager"));
    numbers["idle memory: PostgreSQL"] = await memory(container("postgres"));

    // down removes the containers and keeps the volumes; up again finds every record
    await compose(["down", "--timeout", STOP_GRACE_SECONDS]);
    expect((await podman(["ps", "--all", "--quiet", "--filter", `name=${container("fleet-manager")}`])).trim()).toBe("");
    started = Date.now();
    await compose(["up", "--detach", "--no-build"]);
    await waitReady(port);
    numbers["up again to ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;
    await expectRecordsKept(api, token, device, "compose device");

    // Backup (docs/install.md): pg_dump's custom format from the container (`podman exec`:
    // podman-compose 1.0's `exec` writes its own command lines into the same output), then
    // restored into a new database of the same server, where the device is.
    const { stdout: dump } = await run(requirePeer("podman"), ["exec", container("postgres"), "pg_dump", "-U", "fleet", "-Fc", "fleet"], { env, encoding: "buffer", maxBuffer: 256 * 1024 * 1024 });
    expect(dump.subarray(0, 5).toString()).toBe("PGDMP");
    // what podman-compose 1.0's exec would have given: its command line before the dump
    expect((await compose(["exec", "-T", "postgres", "pg_dump", "-U", "fleet", "-Fc", "fleet"])).subarray(0, 5).toString()).not.toBe("PGDMP");
    numbers["pg_dump"] = `${(dump.length / 1024).toFixed(0)} KiB`;
    fs.writeFileSync(path.join(dir, "fleet.dump"), dump);
    await podman(["exec", container("postgres"), "createdb", "-U", "fleet", "fleet_restored"]);
    await podman(["cp", path.join(dir, "fleet.dump"), `${container("postgres")}:/tmp/fleet.dump`]);
    await podman(["exec", container("postgres"), "pg_restore", "-U", "fleet", "--no-owner", "-d", "fleet_restored", "/tmp/fleet.dump"]);
    expect((await podman(["exec", container("postgres"), "psql", "-U", "fleet", "-d", "fleet_restored", "-tAc", `SELECT name FROM "Device"`])).trim()).toBe("compose-device-1");

    // the service stops on SIGTERM with exit code 0, well within the grace time
    started = Date.now();
    await podman(["stop", "--time", STOP_GRACE_SECONDS, container("fleet-manager")]);
    numbers["stop"] = `${Date.now() - started} ms`;
    expect((await podman(["inspect", "--format", "{{.State.ExitCode}}", container("fleet-manager")])).trim()).toBe("0");
    await compose(["down", "--timeout", STOP_GRACE_SECONDS]);
  }, 15 * 60_000);

  it("compose.replicas.yaml: two replicas behind nginx on one PostgreSQL act as one service", async () => {
    const port = await freePort();
    const { compose, container } = project("compose.replicas.yaml", port);
    const api = restClient(`http://127.0.0.1:${port}`, null);
    const [one, two] = [container("fleet-manager-1"), container("fleet-manager-2")];

    // PostgreSQL first: podman-compose 1.0 starts a service without waiting for the health
    // check its depends_on names (docs/install.md); Docker Compose waits by itself.
    const started = Date.now();
    await compose(["up", "--detach", "--no-build", "postgres"]);
    await expect.poll(() => podman(["healthcheck", "run", container("postgres")]).then(() => "healthy", (err: Error) => err.message), { timeout: 120_000, interval: 1000 }).toBe("healthy");
    await compose(["up", "--detach", "--no-build"]);
    await waitReady(port);
    // both replicas are ready on their own (the image's health check is GET /readyz)
    for (const replica of [one, two]) {
      await expect.poll(() => podman(["healthcheck", "run", replica]).then(() => "healthy", (err: Error) => err.message), { timeout: 240_000, interval: 1000 }).toBe("healthy");
    }
    numbers["replicas: up to both ready"] = `${((Date.now() - started) / 1000).toFixed(0)} s`;

    // a token from a sign-in through the proxy is taken by each replica (one JWT_SECRET, one database)
    const token = await signIn(api);
    const created = await inside(one, "POST", "/api/v1/enrollment-tokens", token, { name: "made on replica 1" });
    expect(created.status).toBe(201);
    const listed = await inside(two, "GET", "/api/v1/enrollment-tokens", token);
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((t: { name: string }) => t.name)).toContain("made on replica 1");

    // The CA made on replica 1 (its private key sealed with the shared ENCRYPTION_KEY) signs the
    // certificates of two devices enrolling through the one port: nginx alternates, so each
    // replica enrolls one and opens the key the other sealed.
    expect((await inside(one, "POST", "/api/v1/ca-certificates/generate", token, { name: "replicas CA", commonName: "Replicas Fleet CA" })).status).toBe(201);
    const devices = ["replica-device-1", "replica-device-2"].map((name) => new VirtualDevice(name, new JsonClient(`http://127.0.0.1:${port}`)));
    for (const device of devices) {
      const enrolled = await device.enroll(created.body.token);
      expect(enrolled.status, JSON.stringify(enrolled.body)).toBe(200);
    }
    for (let i = 0; i < 4; i++) for (const device of devices) expect((await device.heartbeat(i === 0)).status).toBe(200);
    // nginx passed them to both replicas (round robin): its log names the replica that answered
    const { stdout: proxyLog } = await run(requirePeer("podman"), ["logs", container("proxy")], { env, maxBuffer: 64 * 1024 * 1024 });
    const upstreams = new Set(proxyLog.split("\n").filter((line) => line.includes("/api/v1/agent/")).map((line) => /upstream=(\S+)/.exec(line)?.[1]));
    expect(upstreams.size).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 5000));
    numbers["idle memory per replica"] = `${await memory(one)}, ${await memory(two)}`;

    // one replica stopped (SIGTERM, exit 0): the service still answers through the port
    await podman(["stop", "--time", STOP_GRACE_SECONDS, one]);
    expect((await podman(["inspect", "--format", "{{.State.ExitCode}}", one])).trim()).toBe("0");
    for (let i = 0; i < 4; i++) for (const device of devices) expect((await device.heartbeat()).status).toBe(200);
    const fleet = await api("GET", "/api/v1/devices", { token });
    expect(fleet.status).toBe(200);
    expect(fleet.body.items.map((d: { name: string }) => d.name).sort()).toEqual(["replica-device-1", "replica-device-2"]);
    await compose(["down", "--timeout", STOP_GRACE_SECONDS]);
  }, 15 * 60_000);
});
