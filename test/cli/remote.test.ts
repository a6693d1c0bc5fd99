// fleet ssh, exec, port-forward and cp as a user runs them (the CLI as a subprocess) against a
// loopback server speaking remote access's contract, whose "device" is this machine
// (test/support/remote-contract-double.ts): exit codes and stderr apart, stdin forwarded,
// port forwarding with many connections at once and large transfers both ways checked by
// hash, a file round trip by hash and mode, the refusals each said clearly, `~.` over a pipe,
// and `fleet ssh` in a real terminal (tmux): raw mode, resize, `~.`, the terminal restored.
import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startContractDouble, type ContractDouble } from "../support/remote-contract-double.js";
import { eventually } from "../support/server-process.js";
import { missingPeerLine, peerAvailable } from "../support/peers.js";
import { FLEET_BIN, fleetEnv, runFleet, startFleet, type RunningFleet } from "../support/fleet-cli.js";

const BIN = FLEET_BIN;
const KEY = "fm_remote_double_key";
const NO_PERMISSION_KEY = "fm_remote_double_viewer";
const DEVICE = { id: "6f1c2a52-8a4e-4b8e-9a39-1d2f6a1b7c01", name: "gw-remote-01", status: "online" as const };
const OFFLINE = { id: "6f1c2a52-8a4e-4b8e-9a39-1d2f6a1b7c02", name: "gw-remote-02", status: "offline" as const };

let double: ContractDouble;
let off: ContractDouble;
let work: string;

function start(url: string, args: string[], input?: Buffer | string | null, key = KEY): RunningFleet {
  return startFleet(fleetEnv(work, { FLEET_URL: url, FLEET_API_KEY: key }), args, input);
}

function fleet(args: string[], input?: Buffer | string, url = double.url, key = KEY) {
  return runFleet(fleetEnv(work, { FLEET_URL: url, FLEET_API_KEY: key }), args, input);
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-cli-remote-"));
  [double, off] = await Promise.all([
    startContractDouble({ apiKey: KEY, keyWithoutPermission: NO_PERMISSION_KEY, devices: [DEVICE, OFFLINE], refusedPrefix: "/etc/" }),
    startContractDouble({ apiKey: KEY, devices: [DEVICE], remoteAccess: false }),
  ]);
  expect((await fleet(["--version"])).code).toBe(0); // builds cli/dist once, before the tests run it in parallel
});

afterAll(async () => {
  await double?.close();
  await off?.close();
});

describe("fleet exec", () => {
  it("exits with the command's exit code, stdout and stderr apart", async () => {
    const [ok, three, missing] = await Promise.all([
      fleet(["exec", DEVICE.name, "--", "uname", "-s"]),
      fleet(["exec", DEVICE.id, "--", "sh", "-c", "echo to-out; echo to-err >&2; exit 3"]),
      fleet(["exec", DEVICE.name, "--", "no-such-program-here"]),
    ]);
    expect([ok.code, ok.stdout, ok.stderr]).toEqual([0, `${os.type()}\n`, ""]);
    expect([three.code, three.stdout, three.stderr]).toEqual([3, "to-out\n", "to-err\n"]);
    expect(missing.code).toBe(127);
    const sessions = [...double.sessions.values()].filter((s) => s.kind === "exec");
    expect(sessions.map((s) => s.command)).toEqual(expect.arrayContaining([["uname", "-s"], ["sh", "-c", "echo to-out; echo to-err >&2; exit 3"]]));
    expect(sessions.every((s) => s.tty === false)).toBe(true);
  });

  it("forwards stdin to the command, 8 MB of it, and its end", async () => {
    const input = randomBytes(8 * 1024 * 1024);
    const run = await fleet(["exec", DEVICE.name, "--", "sha256sum"], input);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.split(" ")[0]).toBe(sha256(input));
  });

  it("carries 20 MB of output whole (the command's stdout by hash)", async () => {
    const run = start(double.url, ["exec", DEVICE.name, "--", "head", "-c", String(20 * 1024 * 1024), "/dev/zero"]);
    const chunks: Buffer[] = [];
    run.child.stdout!.on("data", (c: Buffer) => chunks.push(c));
    expect(await run.exited).toBe(0);
    expect(sha256(Buffer.concat(chunks))).toBe(sha256(Buffer.alloc(20 * 1024 * 1024)));
  });

  it("says why it cannot run: permission, remote access off, device offline, no command, unknown device", async () => {
    const [noPermission, isOff, offline, noCommand, unknown] = await Promise.all([
      fleet(["exec", DEVICE.name, "--", "true"], "", double.url, NO_PERMISSION_KEY),
      fleet(["exec", DEVICE.name, "--", "true"], "", off.url),
      fleet(["exec", OFFLINE.name, "--", "true"]),
      fleet(["exec", DEVICE.name]),
      fleet(["exec", "no-such-device", "--", "true"]),
    ]);
    expect(noPermission.code).toBe(4);
    expect(noPermission.stderr).toContain("needs the remote:exec permission");
    expect(isOff.code).toBe(6);
    expect(isOff.stderr).toContain("remote access is off for this organization");
    expect(isOff.stderr).toContain("Organization settings, Remote access");
    expect(offline.code).toBe(6);
    expect(offline.stderr).toContain("the device is offline (last seen");
    expect(noCommand.code).toBe(2);
    expect(unknown.code).toBe(5);
    expect(unknown.stderr).toContain('no device named "no-such-device"');
  });
});

describe("fleet ssh over a pipe", () => {
  it("runs what is typed, leaves on ~. after a newline, and the session is closed", async () => {
    const run = start(double.url, ["ssh", DEVICE.name, "--reason", "ticket 4711"], null);
    run.child.stdin!.write("echo remote-$((40+2))\n");
    await eventually(async () => expect(run.out()).toContain("remote-42"), 20_000);
    run.child.stdin!.write("~.");
    expect(await run.exited).toBe(0);
    expect(run.err()).toContain(`Connection to ${DEVICE.name} closed.`);
    const session = [...double.sessions.values()].find((s) => s.kind === "shell" && s.reason === "ticket 4711")!;
    expect(session).toMatchObject({ state: "ended", endReason: "closed-by-user", tty: true });
  });

  it("says why a session ended that it did not end itself", async () => {
    const run = start(double.url, ["ssh", DEVICE.name, "--reason", "force-close me"], null);
    await eventually(async () => expect([...double.sessions.values()].find((s) => s.reason === "force-close me")?.state).toBe("active"), 20_000);
    double.forceClose([...double.sessions.values()].find((s) => s.reason === "force-close me")!.id);
    expect(await run.exited).toBe(255);
    expect(run.err()).toContain("an administrator closed the session");
  });
});

/** An HTTP server on loopback: GET /bytes/N answers N deterministic bytes, POST /hash answers the body's SHA-256. */
async function httpTarget(): Promise<{ port: number; close: () => Promise<void> }> {
  const block = randomBytes(1024 * 1024);
  const server = http.createServer((req, res) => {
    if (req.method === "GET" && req.url?.startsWith("/bytes/")) {
      let left = Number(req.url.slice(7));
      res.writeHead(200, { "content-length": left });
      const pump = () => {
        while (left > 0) {
          const chunk = block.subarray(0, Math.min(left, block.length));
          left -= chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      return pump();
    }
    const hash = createHash("sha256");
    req.on("data", (c: Buffer) => hash.update(c));
    req.on("end", () => res.end(hash.digest("hex")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return { port: (server.address() as net.AddressInfo).port, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) };
}

function expectedBytes(n: number, block: Buffer): Buffer {
  const out = Buffer.alloc(n);
  for (let at = 0; at < n; at += block.length) block.copy(out, at, 0, Math.min(block.length, n - at));
  return out;
}

async function fetchVia(port: number, pathname: string, body?: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: pathname, method: body ? "POST" : "GET", agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve(Buffer.concat(chunks)));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

describe("fleet port-forward", () => {
  it("carries many connections at once and 50 MB each way, checked by hash; each connection is a stream of its own", async () => {
    const target = await httpTarget();
    const run = start(double.url, ["port-forward", DEVICE.name, `0:${target.port}`], null);
    try {
      await eventually(async () => expect(run.out()).toMatch(/Forwarding from 127\.0\.0\.1:\d+/), 20_000);
      const local = Number(/127\.0\.0\.1:(\d+)/.exec(run.out())![1]);
      // the server's block is random per start: learn it from one small answer first
      const first = await fetchVia(local, `/bytes/${1024 * 1024}`);
      const parallel = await Promise.all(Array.from({ length: 24 }, (_, i) => fetchVia(local, `/bytes/${(i + 1) * 37_000}`)));
      parallel.forEach((body, i) => expect(sha256(body)).toBe(sha256(expectedBytes((i + 1) * 37_000, first))));
      const big = await fetchVia(local, `/bytes/${50 * 1024 * 1024}`);
      expect(big.length).toBe(50 * 1024 * 1024);
      expect(sha256(big)).toBe(sha256(expectedBytes(50 * 1024 * 1024, first)));
      const upload = randomBytes(50 * 1024 * 1024);
      expect((await fetchVia(local, "/hash", upload)).toString()).toBe(sha256(upload));
      const session = [...double.sessions.values()].find((s) => s.kind === "port-forward" && s.target?.port === target.port)!;
      expect(session.target).toEqual({ host: "127.0.0.1", port: target.port });
      expect(session.streams).toBe(1 + 24 + 1 + 1);
      run.child.kill("SIGINT");
      expect(await run.exited).toBe(0);
      expect(session.state).toBe("ended");
    } finally {
      run.child.kill("SIGKILL");
      await target.close();
    }
  });

  it("refuses a malformed forward before asking the service, and names HOST for the device's network", async () => {
    const bad = await fleet(["port-forward", DEVICE.name, "80"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("LOCAL:REMOTE or LOCAL:HOST:REMOTE");
    const run = start(double.url, ["port-forward", DEVICE.name, "0:10.0.0.5:8080"], null);
    await eventually(async () => expect(run.out()).toContain("-> 10.0.0.5:8080"), 20_000);
    run.child.kill("SIGINT");
    expect(await run.exited).toBe(0);
    expect([...double.sessions.values()].some((s) => s.target?.host === "10.0.0.5" && s.target.port === 8080)).toBe(true);
  });
});

describe("fleet cp", () => {
  it("copies a file to the device and back, size, mode and SHA-256 checked", async () => {
    const dir = fs.mkdtempSync(path.join(work, "cp-"));
    const deviceDir = fs.mkdtempSync(path.join(work, "device-"));
    const local = path.join(dir, "fix.conf");
    const data = randomBytes(6 * 1024 * 1024 + 17);
    fs.writeFileSync(local, data, { mode: 0o640 });
    fs.chmodSync(local, 0o640);
    const up = await fleet(["cp", local, `${DEVICE.name}:${deviceDir}/`]);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stderr).toContain(`sha256 ${sha256(data)}`);
    const onDevice = path.join(deviceDir, "fix.conf");
    expect(sha256(fs.readFileSync(onDevice))).toBe(sha256(data));
    expect(fs.statSync(onDevice).mode & 0o777).toBe(0o640);

    const back = fs.mkdtempSync(path.join(work, "back-"));
    const down = await fleet(["cp", `${DEVICE.name}:${onDevice}`, back]);
    expect(down.code, down.stderr).toBe(0);
    const copy = path.join(back, "fix.conf");
    expect(sha256(fs.readFileSync(copy))).toBe(sha256(data));
    expect(fs.statSync(copy).mode & 0o777).toBe(0o640);
    expect(fs.readdirSync(back)).toEqual(["fix.conf"]);
  });

  it("names the device's rule for a refused path, and leaves nothing behind", async () => {
    const back = fs.mkdtempSync(path.join(work, "refused-"));
    const refused = await fleet(["cp", `${DEVICE.name}:/etc/hostname`, path.join(back, "hostname")]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("the device refused: /etc/hostname is outside the allowed roots");
    expect(fs.readdirSync(back)).toEqual([]);
    const usage = await fleet(["cp", "a", "b"]);
    expect(usage.code).toBe(2);
  });

  it("says the device's reason when it refused before this side connected (not the spent ticket)", async () => {
    const refusing = await startContractDouble({ apiKey: KEY, devices: [DEVICE], refuseBeforeJoin: "exec is switched off on this device (remote.exec: false)" });
    try {
      const run = await fleet(["exec", DEVICE.name, "--", "uname", "-a"], "", refusing.url);
      expect(run.code).toBe(6); // conflict, as for an organization that has remote access off
      expect(run.stderr).toContain("the device refused: exec is switched off on this device (remote.exec: false)");
      expect(run.stderr).not.toMatch(/ticket/i);
    } finally {
      await refusing.close();
    }
  });

  it("refuses a copy whose SHA-256 does not match, keeping the old file and no partial one", async () => {
    const tampered = await startContractDouble({ apiKey: KEY, devices: [DEVICE], tamperReads: true });
    try {
      const dir = fs.mkdtempSync(path.join(work, "tamper-"));
      const source = path.join(dir, "source.bin");
      fs.writeFileSync(source, randomBytes(300_000));
      const target = path.join(dir, "target.bin");
      fs.writeFileSync(target, "the old content");
      const run = await fleet(["cp", `${DEVICE.name}:${source}`, target], "", tampered.url);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/does not match, nothing written to .*target\.bin: SHA-256: [0-9a-f]{64} arrived, the device's is 0{64}/);
      expect(fs.readFileSync(target, "utf8")).toBe("the old content");
      expect(fs.readdirSync(dir).sort()).toEqual(["source.bin", "target.bin"]);
    } finally {
      await tampered.close();
    }
  });
});

const tmuxPresent = peerAvailable("tmux");
if (!tmuxPresent) console.warn(missingPeerLine("tmux"));

describe.skipIf(!tmuxPresent)("fleet ssh in a real terminal (tmux)", () => {
  it("runs in raw mode, sends the window size and its changes, leaves on ~. and restores the terminal", async () => {
    const socket = path.join(work, "tmux.sock");
    const tmux = (...args: string[]) => spawnSync("tmux", ["-S", socket, ...args], { encoding: "utf8" });
    const screen = () => tmux("capture-pane", "-p", "-t", "ssh").stdout;
    const env = `FLEET_URL=${double.url} FLEET_API_KEY=${KEY} HOME=${work} XDG_CONFIG_HOME=${path.join(work, ".config")}`;
    expect(tmux("new-session", "-d", "-s", "ssh", "-x", "100", "-y", "30", "sh").status).toBe(0);
    try {
      tmux("send-keys", "-t", "ssh", `env ${env} ${process.execPath} ${BIN} ssh ${DEVICE.name} --reason tmux; echo "left with $?"; stty -a | grep -o -- '-\\?icanon' | head -1`, "Enter");
      await eventually(async () => expect([...double.sessions.values()].find((s) => s.reason === "tmux")?.state).toBe("active"), 20_000);
      const session = [...double.sessions.values()].find((s) => s.reason === "tmux")!;
      expect(session.resizes[0]).toEqual({ cols: 100, rows: 30 });
      tmux("send-keys", "-t", "ssh", "echo typed-$((6*7))", "Enter");
      await eventually(async () => expect(screen()).toContain("typed-42"), 20_000);
      // Ctrl-C goes to the device (raw mode): the local fleet keeps running
      const sleeping = () => spawnSync("pgrep", ["-f", "sleep 31.5"]).status === 0;
      tmux("send-keys", "-t", "ssh", "sleep 31.5", "Enter");
      await eventually(async () => expect(sleeping()).toBe(true), 20_000);
      tmux("send-keys", "-t", "ssh", "C-c");
      // sleep is interrupted on the device (its terminal echoes ^C) and the local fleet goes on
      await eventually(async () => expect(sleeping()).toBe(false), 20_000);
      await eventually(async () => expect(screen()).toMatch(/sleep 31\.5\s*\n\^C/), 20_000);
      tmux("send-keys", "-t", "ssh", "echo still-$((1+1))", "Enter");
      await eventually(async () => expect(screen()).toContain("still-2"), 20_000);
      tmux("resize-window", "-t", "ssh", "-x", "120", "-y", "40");
      await eventually(async () => expect(session.resizes).toContainEqual({ cols: 120, rows: 40 }), 20_000);
      tmux("send-keys", "-t", "ssh", "Enter");
      tmux("send-keys", "-t", "ssh", "-l", "~.");
      await eventually(async () => expect(screen()).toContain("left with 0"), 20_000);
      // the terminal is back in canonical mode: icanon, not -icanon
      await eventually(async () => expect(screen()).toMatch(/left with 0\s*\n\s*icanon/), 20_000);
      expect(screen()).toContain(`Connection to ${DEVICE.name} closed.`);
      expect(session).toMatchObject({ state: "ended", endReason: "closed-by-user" });
    } finally {
      tmux("kill-server");
    }
  });
});
