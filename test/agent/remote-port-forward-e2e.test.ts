// fleet port-forward as an operator runs it, end to end: the CLI as a subprocess, the service
// (its build, as `npm start` runs it; PGlite, or PostgreSQL with DATABASE_URL), the real fleet
// agent (test/support/remote-agent.ts) and, on the device, a busybox httpd container on real
// Podman (runc; the image from busybox-static, test/support/podman.ts) published on the
// device's loopback, which the agent's default portForward.allow permits. Many connections at
// once and a 50 MB file beside them, each body checked by SHA-256; one session for the forward
// (a stream per connection), stored with its bytes. Skips without Podman (the run prints the one line naming
// the packages: test/support/peers.ts).
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startConsoleService, type ConsoleService } from "../support/console-service.js";
import { freePort } from "../support/oci-registry.js";
import { peersAvailable } from "../support/peers.js";
import { startPodmanHarness, type PodmanHarness } from "../support/podman.js";
import { remoteOperator, startRemoteAgent, turnOnRemoteAccess, type RemoteAgent, type RemoteOperator } from "../support/remote-agent.js";
import { fleetEnv, startFleet } from "../support/fleet-cli.js";
import { eventually } from "../support/server-process.js";

const available = peersAvailable("podman", "docker-registry");
const BIG = 50 * 1024 * 1024;
const SMALL_FILES = 24;

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** GET over a connection of its own (no keep-alive: one TCP connection, so one forwarded stream, per request). */
function get(port: number, pathname: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: pathname, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

describe.skipIf(!available)("fleet port-forward to a busybox httpd container on the device", { timeout: 240_000 }, () => {
  let podman: PodmanHarness;
  let service: ConsoleService;
  let agent: RemoteAgent;
  let owner: RemoteOperator;
  let www: string;
  let containerPort: number;
  const container = `fleet-remote-httpd-${randomBytes(4).toString("hex")}`;
  const big = randomBytes(BIG);
  const small = Array.from({ length: SMALL_FILES }, (_, i) => randomBytes(1000 + i * 997));

  beforeAll(async () => {
    fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
    www = fs.mkdtempSync("/dev/shm/fleet-tests/remote-httpd-");
    fs.chmodSync(www, 0o755);
    fs.writeFileSync(path.join(www, "big.bin"), big, { mode: 0o644 });
    small.forEach((data, i) => fs.writeFileSync(path.join(www, `small-${i}.bin`), data, { mode: 0o644 }));
    [podman, service, containerPort] = await Promise.all([startPodmanHarness(), startConsoleService({ HEARTBEAT_INTERVAL_SECONDS: "5" }), freePort()]);
    await podman.podman(["run", "-d", "--name", container, "-p", `127.0.0.1:${containerPort}:8080`, "-v", `${www}:/www:ro`, podman.image, "httpd", "-f", "-p", "8080", "-h", "/www"]);
    [agent, owner] = await Promise.all([startRemoteAgent(service, "pf-httpd"), remoteOperator(service)]);
    await turnOnRemoteAccess(service, owner, { maxSessionsPerDevice: 100, maxSessionsPerUser: 100 });
    // the container answers on the device's loopback before anything is forwarded to it
    await eventually(async () => (await get(containerPort, "/small-0.bin").catch(() => null))?.status === 200, 30_000, "httpd in the container");
  }, 240_000);

  afterAll(async () => {
    await agent?.stop();
    agent?.remove();
    await podman?.podman(["rm", "-f", container]).catch(() => undefined);
    await podman?.podman(["rmi", "--force", "--ignore", podman.image]).catch(() => undefined);
    await podman?.close();
    await service?.close();
    if (www) fs.rmSync(www, { recursive: true, force: true });
  });

  it("carries many connections at once and 50 MB beside them, each body checked by SHA-256; one session stored with every byte", async () => {
    const env = fleetEnv(www, { FLEET_URL: service.url, FLEET_TOKEN: owner.token });
    const run = startFleet(env, ["port-forward", agent.name, `0:${containerPort}`, "--reason", "httpd-47"], null);
    try {
      const local = await eventually(async () => Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(run.out())?.[1]) || undefined, 30_000, `the forward (${run.err()})`);
      const [bigAnswer, ...smallAnswers] = await Promise.all([get(local, "/big.bin"), ...small.map((_, i) => get(local, `/small-${i}.bin`))]);
      expect(bigAnswer.status).toBe(200);
      expect(bigAnswer.body.length).toBe(BIG);
      expect(sha256(bigAnswer.body)).toBe(sha256(big));
      expect(smallAnswers.map((a) => a.status)).toEqual(small.map(() => 200));
      expect(smallAnswers.map((a) => sha256(a.body))).toEqual(small.map(sha256));
      run.child.kill("SIGINT");
      expect(await run.exited).toBe(0);
      expect(run.err()).toBe("");
    } finally {
      run.child.kill("SIGKILL");
    }

    // one session for the forward, a stream (and a ticket) per connection: its counts hold every body
    const asOwner = { token: owner.token, key: null };
    const { items } = await service.call<{ items: Array<{ id: string; reason: string | null; target: { host: string; port: number } }> }>(
      "GET", `/api/v1/remote-sessions?deviceId=${agent.deviceId}&kind=port-forward&limit=100`, asOwner,
    );
    expect(items.map((s) => [s.reason, s.target])).toEqual([["httpd-47", { host: "127.0.0.1", port: containerPort }]]);
    const row = await eventually(async () => {
      const s = await service.call<{ state: string; endReason: string | null; bytesFromDevice: number; bytesToDevice: number }>("GET", `/api/v1/remote-sessions/${items[0].id}`, asOwner);
      return s.state === "ended" && s;
    }, 30_000, "the forward's session ended");
    expect(row.endReason).toBe("closed-by-user");
    expect(row.bytesFromDevice).toBeGreaterThanOrEqual(BIG + small.reduce((sum, b) => sum + b.length, 0));
    expect(row.bytesToDevice).toBeGreaterThan(0);
  });
});
