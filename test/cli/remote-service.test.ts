// fleet exec, cp and ssh as a user runs them (the CLI as a subprocess) against the real service
// (its build, as `npm start` runs it: PGlite, or PostgreSQL with DATABASE_URL) and the real
// fleet agent on loopback (test/support/remote-agent.ts: enroll + run, sessions as `nobody`).
// The contract alone is test/cli/remote.test.ts; this is the whole path, and what the service
// stores of it: the session rows (kind, exit code, bytes, end reason) and their audit entries.
// Then what goes wrong on the device's side: kill -9 of the agent mid-shell (the CLI says so,
// the row ends, the shell's background job is gone), the device offline (answered at once),
// and the device's certificate revoked under a live shell.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alive } from "../agent/remote/harness.js";
import { startConsoleService, type ConsoleService } from "../support/console-service.js";
import { missingPeerLine, peerAvailable } from "../support/peers.js";
import { currentCertificateId, remoteOperator, startRemoteAgent, turnOnRemoteAccess, type RemoteAgent, type RemoteOperator } from "../support/remote-agent.js";
import { fleetEnv, FLEET_BIN, runFleet, startFleet } from "../support/fleet-cli.js";
import { eventually } from "../support/server-process.js";

const tmuxPresent = peerAvailable("tmux");
if (!tmuxPresent) console.warn(missingPeerLine("tmux"));

interface Session {
  id: string;
  kind: string;
  state: string;
  reason: string | null;
  exitCode: number | null;
  endReason: string | null;
  bytesToDevice: number;
  bytesFromDevice: number;
  command: string[];
  path: string | null;
  userId: string;
}

let service: ConsoleService;
let agent: RemoteAgent;
let owner: RemoteOperator;
let work: string;

function cliEnv(token: string): Record<string, string> {
  return fleetEnv(work, { FLEET_URL: service.url, FLEET_TOKEN: token });
}

const start = (args: string[], input?: Buffer | string | null, token = owner.token) => startFleet(cliEnv(token), args, input);
const fleet = (args: string[], input?: Buffer | string, token = owner.token) => runFleet(cliEnv(token), args, input);

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");
const asOwner = () => ({ token: owner.token, key: null });

async function sessions(query: string): Promise<Session[]> {
  return (await service.call<{ items: Session[] }>("GET", `/api/v1/remote-sessions?deviceId=${agent.deviceId}&${query}&limit=100`, asOwner())).items;
}

async function ended(id: string): Promise<Session> {
  return eventually(async () => {
    const s = await service.call<Session>("GET", `/api/v1/remote-sessions/${id}`, asOwner());
    return s.state === "ended" && s;
  }, 20_000, `session ${id} ended`);
}

/** The audit actions of a session, sorted (the started entry is written beside the relay: polled). */
async function auditActions(id: string, expected: string[]): Promise<string[]> {
  return eventually(async () => {
    const { items } = await service.call<{ items: { action: string; outcome: string }[] }>("GET", `/api/v1/audit/entity/remote-session/${id}?limit=50`);
    const actions = items.map((a) => a.action).sort();
    return expected.every((a) => actions.includes(a)) && actions;
  }, 20_000, `the audit entries of ${id}: ${expected.join(", ")}`);
}

beforeAll(async () => {
  fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
  work = fs.mkdtempSync("/dev/shm/fleet-tests/cli-remote-service-");
  // heartbeats every 5 s: the device goes offline 15 s after the agent is gone
  service = await startConsoleService({ HEARTBEAT_INTERVAL_SECONDS: "5" });
  [agent, owner] = await Promise.all([startRemoteAgent(service, "cli-remote"), remoteOperator(service)]);
  expect((await fleet(["--version"])).code).toBe(0);
}, 180_000);

afterAll(async () => {
  await agent?.stop();
  agent?.remove();
  await service?.close();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe("fleet exec, cp and ssh with the real agent and service", () => {
  it("exec: says remote access is off until an owner turns it on; then exit codes 0, 3 and 127 with stdout and stderr apart, stored and audited", async () => {
    const off = await fleet(["exec", agent.name, "--", "true"]);
    expect(off.code).toBe(6);
    expect(off.stderr).toMatch(/remote access is off for this organization/i);
    await turnOnRemoteAccess(service, owner, { maxSessionsPerDevice: 20, maxSessionsPerUser: 20 });

    const [ok, three, missing] = await Promise.all([
      fleet(["exec", agent.name, "--", "id", "-un"]),
      fleet(["exec", agent.deviceId, "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3"]),
      fleet(["exec", agent.name, "--", "no-such-program-47"]),
    ]);
    expect([ok.code, ok.stdout, ok.stderr]).toEqual([0, "nobody\n", ""]);
    expect([three.code, three.stdout, three.stderr]).toEqual([3, "to-out\n", "to-err\n"]);
    expect([missing.code, missing.stdout]).toEqual([127, ""]);
    expect(missing.stderr).toContain("no-such-program-47: command not found");

    const rows = await sessions("kind=exec");
    const byCommand = (first: string) => rows.find((s) => s.command[0] === first)!;
    for (const [first, exitCode] of [["id", 0], ["sh", 3], ["no-such-program-47", 127]] as const) {
      const row = await ended(byCommand(first).id);
      expect(row).toMatchObject({ kind: "exec", state: "ended", endReason: "completed", exitCode, userId: owner.id });
      expect(await auditActions(row.id, ["remote-session.requested", "remote-session.started", "remote-session.ended"])).toEqual(
        ["remote-session.ended", "remote-session.requested", "remote-session.started"],
      );
    }
    // what came back: "to-out\n" and "to-err\n" (each framed with its channel byte on the wire)
    expect((await ended(byCommand("sh").id)).bytesFromDevice).toBeGreaterThanOrEqual(14);
  });

  it("cp: a file to the device and back, checked by SHA-256; a path outside the device's roots refused naming the rule, nothing written", async () => {
    const deviceDir = fs.mkdtempSync("/tmp/fleet-cp-device-");
    const local = path.join(work, "payload.bin");
    const data = randomBytes(3 * 1024 * 1024 + 5);
    fs.writeFileSync(local, data, { mode: 0o640 });
    try {
      const up = await fleet(["cp", local, `${agent.name}:${deviceDir}/`]);
      expect(up.code, up.stderr).toBe(0);
      const onDevice = path.join(deviceDir, "payload.bin");
      expect(sha256(fs.readFileSync(onDevice))).toBe(sha256(data));
      expect(fs.statSync(onDevice).mode & 0o777).toBe(0o640);

      const back = fs.mkdtempSync(path.join(work, "back-"));
      const down = await fleet(["cp", `${agent.name}:${onDevice}`, back]);
      expect(down.code, down.stderr).toBe(0);
      expect(sha256(fs.readFileSync(path.join(back, "payload.bin")))).toBe(sha256(data));

      const refused = await fleet(["cp", `${agent.name}:/etc/hostname`, back]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain("/etc/hostname is outside the device's allowed roots (remoteAccess.files.roots: /var/log, /tmp)");
      expect(fs.readdirSync(back)).toEqual(["payload.bin"]);

      const write = (await sessions("kind=file-write")).find((s) => s.path === onDevice)!;
      expect(await ended(write.id)).toMatchObject({ state: "ended", endReason: "completed" });
      expect((await ended(write.id)).bytesToDevice).toBeGreaterThanOrEqual(data.length);
      const reads = await sessions("kind=file-read");
      const read = reads.find((s) => s.path === onDevice)!;
      expect(await ended(read.id)).toMatchObject({ endReason: "completed" });
      expect((await ended(read.id)).bytesFromDevice).toBeGreaterThanOrEqual(data.length);
      const refusedRow = reads.find((s) => s.path === "/etc/hostname")!;
      expect(await ended(refusedRow.id)).toMatchObject({ endReason: "device-refused", bytesFromDevice: 0 });
      await auditActions(refusedRow.id, ["remote-session.requested", "remote-session.refused"]);
    } finally {
      fs.rmSync(deviceDir, { recursive: true, force: true });
    }
  });

  it.skipIf(!tmuxPresent)("ssh in a real terminal (tmux): a typed command's output on the screen, ~. leaves; the shell's row is stored and audited", async () => {
    const socket = path.join(work, "tmux.sock");
    const tmux = (...args: string[]) => spawnSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
    const screen = () => tmux("capture-pane", "-p", "-t", "ssh").stdout;
    expect(tmux("new-session", "-d", "-s", "ssh", "-x", "100", "-y", "30", "sh").status).toBe(0);
    try {
      const env = Object.entries(cliEnv(owner.token)).map(([k, v]) => `${k}=${v}`).join(" ");
      tmux("send-keys", "-t", "ssh", `env ${env} ${process.execPath} ${FLEET_BIN} ssh ${agent.name} --reason tmux-47; echo "left with $?"`, "Enter");
      const row = await eventually(async () => (await sessions("kind=shell")).find((s) => s.reason === "tmux-47" && s.state === "active"), 30_000, "the shell active");
      // the prompt may come a moment after the session is active: type once the shell runs
      tmux("send-keys", "-t", "ssh", "echo typed-$((6*7)) as $(id -un); stty size", "Enter");
      await eventually(async () => /typed-42 as nobody\s*\n\s*30 100/.test(screen()), 20_000, `the output on the screen:\n${screen()}`);
      tmux("send-keys", "-t", "ssh", "Enter");
      tmux("send-keys", "-t", "ssh", "-l", "~.");
      await eventually(async () => screen().includes("left with 0"), 20_000, `fleet ssh left:\n${screen()}`);
      const stored = await ended(row.id);
      expect(stored).toMatchObject({ kind: "shell", endReason: "closed-by-user", reason: "tmux-47" });
      expect(stored.bytesToDevice).toBeGreaterThan(0);
      expect(stored.bytesFromDevice).toBeGreaterThan(0);
      await auditActions(row.id, ["remote-session.requested", "remote-session.started", "remote-session.ended"]);
    } finally {
      tmux("kill-server");
    }
  });

  it("a viewer's key is refused for want of remote:exec, and no session is opened for them", async () => {
    const viewer = await service.createUser("viewer");
    const refused = await fleet(["exec", agent.name, "--", "true"], "", await service.bearer(viewer));
    expect(refused.code).toBe(4);
    expect(refused.stderr).toContain("needs the remote:exec permission");
    expect((await service.call<{ items: Session[] }>("GET", `/api/v1/remote-sessions?userId=${viewer.id}`, asOwner())).items).toEqual([]);
  });
});

describe("the device side going away", () => {
  it("kill -9 of the agent mid-shell: fleet ssh says the device disconnected, the row ends, the shell's background job is gone", async () => {
    const run = start(["ssh", agent.name, "--reason", "kill-47"], null);
    run.child.stdin!.write("sleep 3047 & echo BG-$!-\"\"END\n");
    await eventually(async () => /BG-\d+-END/.test(run.out()), 30_000, "the background job's pid");
    const background = Number(/BG-(\d+)-END/.exec(run.out())![1]);
    expect(alive(background)).toBe(true);
    const row = (await sessions("kind=shell")).find((s) => s.reason === "kill-47")!;

    await agent.stop("SIGKILL");
    expect(await run.exited).toBe(255);
    expect(run.err()).toContain("error: the device disconnected");
    expect(await ended(row.id)).toMatchObject({ endReason: "device-disconnected" });
    await expect.poll(() => alive(background), { timeout: 20_000, interval: 100 }).toBe(false);
  });

  it("the device offline: fleet exec answers at once with when it was last seen", async () => {
    await eventually(async () => (await service.call<{ status: string }>("GET", `/api/v1/devices/${agent.deviceId}`)).status === "offline", 90_000, "the device offline");
    const offline = await fleet(["exec", agent.name, "--", "true"]);
    expect(offline.code).toBe(6);
    expect(offline.stderr).toMatch(/the device is offline \(last seen \d{4}-\d\d-\d\dT/i);
  }, 120_000);

  it("revoking the device's certificate ends a live shell at once: fleet ssh says why, the row ends certificate-revoked", async () => {
    agent.start();
    await eventually(async () => (await service.call<{ status: string }>("GET", `/api/v1/devices/${agent.deviceId}`)).status === "online", 60_000, "the device online again");
    const run = start(["ssh", agent.name, "--reason", "revoke-47"], null);
    run.child.stdin!.write("echo shell-$((40+7))\n");
    await eventually(async () => run.out().includes("shell-47"), 30_000, "the shell's output");
    const row = (await sessions("kind=shell")).find((s) => s.reason === "revoke-47")!;

    const certificateId = await currentCertificateId(service, agent.deviceId);
    await service.call("POST", `/api/v1/devices/${agent.deviceId}/certificates/${certificateId}/revoke`, { body: { reason: "Key compromise" } });
    expect(await run.exited).toBe(255);
    expect(run.err()).toContain("error: the device's certificate was revoked");
    expect(await ended(row.id)).toMatchObject({ endReason: "certificate-revoked" });
  });
});
