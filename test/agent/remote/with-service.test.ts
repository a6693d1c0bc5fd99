// The agent's remote access (agent/src/remote/remote-access.ts: the long-poll, the handlers, the
// refusal) against the real service in this process (test/support/harness.ts: PGlite, or
// PostgreSQL with DATABASE_URL): a session opened through the API reaches the agent by the real
// GET /agent/remote/wait, its device leg joins the real relay, and what the user reads and the
// service stores is what the device did. The heartbeat's remoteAccess is given to the agent
// here (onHeartbeat) rather than read from a heartbeat.
import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RemoteAccess } from "../../../agent/src/remote/remote-access.js";
import { createHarness, type Harness } from "../../support/harness.js";
import { CH, connect, openSession, remoteTenant, sessionWhen, wait, wsUrl, type RemoteTenant } from "../../http/remote-sessions/support.js";
import { alive, testConfig } from "./harness.js";

let h: Harness;
let acme: RemoteTenant;
let remote: RemoteAccess;

beforeAll(async () => {
  h = await createHarness();
  acme = await remoteTenant(h, { enabled: true, maxSessionsPerDevice: 20, maxSessionsPerUser: 20 });
  remote = new RemoteAccess({
    serviceUrl: h.url, authorization: async () => `Bearer ${await acme.device.token()}`, state: null, log: () => undefined,
    config: testConfig((c) => (c.files.write = false)),
  });
  remote.onHeartbeat({ enabled: true });
});
afterAll(async () => {
  await remote?.stop();
  await h?.close();
});

async function open(body: Record<string, unknown>) {
  const opened = await openSession(h, acme.key, { deviceId: acme.device.deviceId, ...body });
  const user = await connect(wsUrl(h.url, opened.streamUrl));
  return { opened, user };
}

describe("the agent with the service", () => {
  it("exec: the long-poll brings the session, the user reads stdout and stderr apart and the exit code; the service stores it", async () => {
    const { opened, user } = await open({ kind: "exec", command: ["sh", "-c", "echo out; echo err >&2; exit 3"] });
    await user.until(() => user.statuses().some((s) => "exitCode" in s), "the exit code");
    expect(user.on(CH.stdout).toString()).toBe("out\n");
    expect(user.on(CH.stderr).toString()).toBe("err\n");
    expect(user.statuses()).toEqual([{ exitCode: 3 }]);
    const stored = await sessionWhen(h, opened.session.id, (s) => s.state === "ended");
    expect(stored).toMatchObject({ endReason: "completed", exitCode: 3 });
  });

  it("exec: 0 and 127", async () => {
    for (const [command, code] of [[["true"], 0], [["no-such-command-47"], 127]] as const) {
      const { opened, user } = await open({ kind: "exec", command });
      await user.until(() => user.statuses().some((s) => "exitCode" in s), "the exit code");
      expect(user.statuses()).toEqual([{ exitCode: code }]);
      expect(await sessionWhen(h, opened.session.id, (s) => s.state === "ended")).toMatchObject({ exitCode: code });
    }
  });

  it("run (POST /remote-sessions/run, for clients without a WebSocket): stdin in, the exit code, stdout and stderr apart in the answer; the session stored and audited", async () => {
    const res = await h.api("POST", "/api/v1/remote-sessions/run", {
      key: acme.key, body: { deviceId: acme.device.deviceId, command: ["sh", "-c", "cat; echo err >&2; exit 3"], stdin: "hello device", reason: "check the sensor" },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      exitCode: 3, stdout: "hello device", stderr: "err\n", stdoutBytes: 12, stderrBytes: 4, truncated: false, timedOut: false, error: null,
      session: { kind: "exec", state: "ended", endReason: "completed", exitCode: 3, reason: "check the sensor", command: ["sh", "-c", "cat; echo err >&2; exit 3"] },
    });
    const stored = await h.services.prisma.remoteSession.findUniqueOrThrow({ where: { id: res.body.session.id } });
    expect({ exitCode: stored.exitCode, toDevice: Number(stored.bytesToDevice), fromDevice: Number(stored.bytesFromDevice) }).toEqual({ exitCode: 3, toDevice: 12, fromDevice: 16 });
    const audit = await h.services.prisma.auditEntry.findMany({ where: { entityId: res.body.session.id }, select: { action: true } });
    expect(audit.map((a) => a.action).sort()).toEqual(["remote-session.ended", "remote-session.requested", "remote-session.started"]);
  });

  it("run: output past 1 MiB is counted and cut; a command still running at timeoutSeconds is stopped by the device (124, timedOut)", async () => {
    const long = await h.api("POST", "/api/v1/remote-sessions/run", { key: acme.key, body: { deviceId: acme.device.deviceId, command: ["head", "-c", "3000000", "/dev/zero"] } });
    expect(long.status, long.text).toBe(200);
    expect(long.body).toMatchObject({ exitCode: 0, stdoutBytes: 3_000_000, truncated: true });
    expect(long.body.stdout.length).toBe(1024 * 1024);
    const slow = await h.api("POST", "/api/v1/remote-sessions/run", { key: acme.key, body: { deviceId: acme.device.deviceId, command: ["sleep", "30"], timeoutSeconds: 1 } });
    expect(slow.status, slow.text).toBe(200);
    expect(slow.body).toMatchObject({ exitCode: 124, timedOut: true, session: { state: "ended", exitCode: 124 } });
    // bad input: the field named, nothing opened
    const before = await h.services.prisma.remoteSession.count();
    const bad = await h.api("POST", "/api/v1/remote-sessions/run", { key: acme.key, body: { deviceId: acme.device.deviceId, command: [], timeoutSeconds: 301 } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("command");
    expect(bad.text).toContain("timeoutSeconds");
    expect(await h.services.prisma.remoteSession.count()).toBe(before);
  });

  it("shell: what is typed runs under the pty, a resize reaches it", async () => {
    const { opened, user } = await open({ kind: "shell", cols: 100, rows: 30 });
    user.send(CH.stdin, "echo hello-$((6*7)); stty size\n");
    await user.until(() => /hello-42\r\n30 100\r\n/.test(user.on(CH.stdout).toString()), "the echo");
    user.send(CH.resize, JSON.stringify({ cols: 120, rows: 40 }));
    user.send(CH.stdin, `sh -c 'trap "echo SIZE-\\$(stty size); exit 0" WINCH; echo RE""ADY; while :; do sleep 1; done'\n`);
    await user.until(() => user.on(CH.stdout).toString().includes("READY"), "ready");
    user.send(CH.resize, JSON.stringify({ cols: 132, rows: 43 }));
    await user.until(() => user.on(CH.stdout).toString().includes("SIZE-43 132"), "the resize");
    user.send(CH.stdin, "exit 4\n");
    await user.until(() => user.statuses().some((s) => "exitCode" in s), "the exit code");
    expect(await sessionWhen(h, opened.session.id, (s) => s.state === "ended")).toMatchObject({ exitCode: 4 });
  });

  it("port-forward to a TCP server on the device's loopback: bytes both ways", async () => {
    const server = net.createServer({ allowHalfOpen: true }, (socket) => {
      const chunks: Buffer[] = [];
      socket.on("data", (c) => chunks.push(c));
      socket.on("end", () => socket.end(Buffer.concat([Buffer.from("echo:"), ...chunks])));
    }).listen(0, "127.0.0.1");
    await once(server, "listening");
    const { user } = await open({ kind: "port-forward", target: { port: (server.address() as net.AddressInfo).port } });
    user.send(CH.stdin, "ping");
    user.send(CH.close, Buffer.from([CH.stdin]));
    await user.until(() => user.on(CH.stdout).toString() === "echo:ping", "the answer");
    server.close();
  });

  it("the device's word wins: a file write it switched off ends the session device-refused, the user reads why", async () => {
    const { opened, user } = await open({ kind: "file-write", path: "/tmp/remote-47-refused", size: 1, sha256: "0".repeat(64) });
    await user.until(() => user.statuses().some((s) => "error" in s), "the refusal");
    expect(user.statuses().find((s) => "error" in s)).toMatchObject({ error: "the device's configuration switches file writing off (remoteAccess.files.write: false)" });
    expect(await sessionWhen(h, opened.session.id, (s) => s.state === "ended")).toMatchObject({ endReason: "device-refused" });
  });

  it("kill -9 of the agent mid-session: the service ends the session, nothing of it keeps running on the device", async () => {
    // a second device, so the in-process agent above does not take this offer
    const other = await remoteTenant(h, { enabled: true });
    const opened = await openSession(h, other.key, { deviceId: other.device.deviceId, kind: "exec", command: ["sh", "-c", "sleep 3000 & echo $!; wait"] });
    const user = await connect(wsUrl(h.url, opened.streamUrl));
    const offers = (await wait(h, other.device)).offers.filter((o) => o.sessionId === opened.session.id);
    fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
    const stateDir = fs.mkdtempSync("/dev/shm/fleet-tests/remote-kill-service-");
    const agent = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "fixtures/serve-offers.ts"), wsUrl(h.url, ""), stateDir], {
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, FIXTURE_OFFERS: JSON.stringify(offers), FIXTURE_AUTHORIZATION: `Bearer ${await other.device.token()}` },
    });
    await user.until(() => /^\d+\n/.test(user.on(CH.stdout).toString()), "the background job's pid");
    const background = Number(user.on(CH.stdout).toString().trim());
    expect(alive(background)).toBe(true);
    agent.kill("SIGKILL");
    await user.waitClosed();
    expect(await sessionWhen(h, opened.session.id, (s) => s.state === "ended")).toMatchObject({ endReason: "device-disconnected" });
    await expect.poll(() => alive(background), { timeout: 20_000, interval: 100 }).toBe(false);
    fs.rmSync(stateDir, { recursive: true, force: true });
  });
});
