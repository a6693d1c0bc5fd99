// The shell and exec handlers with real processes under a real pty (util-linux script), joined
// to a loopback stream: what an operator relies on in `fleet ssh` and `fleet exec`.
import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STDIN } from "../../../agent/src/remote/frames.js";
import { alive, joined, refused, testConfig } from "./harness.js";
import { StreamServer } from "./stream-server.js";

let server: StreamServer;
fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
const work = fs.mkdtempSync("/dev/shm/fleet-tests/remote-proc-");
beforeAll(async () => {
  server = await StreamServer.start();
});
afterAll(async () => {
  await server.close();
  fs.rmSync(work, { recursive: true, force: true });
});

const asRoot = process.getuid?.() === 0;

describe("shell", () => {
  it("runs an interactive shell under a pty as the unprivileged user, echoes what is typed and ends with exit's code", async () => {
    const { user, done } = await joined(server, { kind: "shell", cols: 100, rows: 30 });
    user.type("echo hello-$((6*7)) $(id -un) $(tty)\n");
    await user.until(() => /hello-42 \S+ \/dev\/pts\/\d+/.test(user.stdout));
    const [, name] = /hello-42 (\S+) /.exec(user.stdout)!;
    expect(name).toBe(asRoot ? "nobody" : (await import("node:os")).userInfo().username);
    user.type("stty size\n");
    await user.until(() => /[\r\n]30 100\r\n/.test(user.stdout));
    user.type("exit 7\n");
    await done;
    expect(user.statuses.at(-1)).toEqual({ exitCode: 7 });
    expect(await user.closed).toBe(1000);
  });

  it("a resize changes the window size inside the shell (the foreground program gets SIGWINCH)", async () => {
    const { user, done } = await joined(server, { kind: "shell", cols: 80, rows: 24 });
    // the typed line is echoed too: the words looked for are split in it ("RE""ADY")
    user.type(`sh -c 'trap "echo SIZE-\\$(stty size); exit 0" WINCH; echo RE""ADY; while :; do sleep 1; done'\n`);
    await user.until(() => user.stdout.includes("READY"));
    user.resize(132, 43);
    await user.until(() => user.stdout.includes("SIZE-43 132"));
    user.type("stty size; exit\n");
    await done;
    expect(user.stdout).toMatch(/[\r\n]43 132\r\n/);
  });

  it("ends the shell and what it started when the user leaves", async () => {
    const { user, done } = await joined(server, { kind: "shell" });
    user.type("sleep 3000 & echo BG-$!-\"\"END\n");
    await user.until(() => /BG-\d+-END/.test(user.stdout));
    const pid = Number(/BG-(\d+)-END/.exec(user.stdout)![1]);
    expect(alive(pid)).toBe(true);
    user.socket.close();
    await done;
    expect(alive(pid)).toBe(false);
  });

  it("is refused when the device switches it off, or its user does not exist", async () => {
    expect(await refused(server, { kind: "shell" }, testConfig((c) => (c.shell = false)))).toBe("the device's configuration switches the shell off (remoteAccess.shell: false)");
    if (asRoot) {
      expect(await refused(server, { kind: "shell" }, testConfig((c) => (c.user = "no-such-user-47")))).toMatch(/^the user no-such-user-47 \(remoteAccess.user\) does not exist on the device/);
    }
  });
});

describe("exec", () => {
  it("exit codes 0, 3 and 127, stdout and stderr apart", async () => {
    const ok = await joined(server, { kind: "exec", command: ["uname", "-s"] });
    await ok.done;
    expect(ok.user.stdout).toBe("Linux\n");
    expect(ok.user.statuses).toEqual([{ exitCode: 0 }]);

    const three = await joined(server, { kind: "exec", command: ["sh", "-c", "echo to-out; echo to-err >&2; exit 3"] });
    await three.done;
    expect(three.user.stdout).toBe("to-out\n");
    expect(three.user.stderr).toBe("to-err\n");
    expect(three.user.statuses).toEqual([{ exitCode: 3 }]);

    const missing = await joined(server, { kind: "exec", command: ["no-such-command-47", "x"] });
    await missing.done;
    expect(missing.user.statuses).toEqual([{ exitCode: 127 }]);
    expect(missing.user.stderr).toBe("fleet-agent: no-such-command-47: command not found\n");
  });

  it("argv is not a shell string", async () => {
    const { user, done } = await joined(server, { kind: "exec", command: ["echo", "$(id)", "a;b", "'q'"] });
    await done;
    expect(user.stdout).toBe("$(id) a;b 'q'\n");
  });

  it("a command past its timeout is ended with everything it started, exit code 124", async () => {
    const { user, done } = await joined(server, { kind: "exec", command: ["sh", "-c", "sleep 3000 & echo $!; wait"], timeoutSeconds: 1 });
    await user.until(() => /^\d+\n/.test(user.stdout));
    const background = Number(user.stdout.trim());
    await done;
    expect(user.statuses).toEqual([{ exitCode: 124, timedOut: true }]);
    expect(alive(background)).toBe(false);
  });

  it("with a tty: under a pty of the size asked, exit code kept", async () => {
    const { user, done } = await joined(server, { kind: "exec", command: ["sh", "-c", "tty; stty size; exit 5"], tty: true, cols: 90, rows: 20 });
    await done;
    expect(user.stdout).toMatch(/^\/dev\/pts\/\d+\r\n20 90\r\n$/);
    expect(user.statuses).toEqual([{ exitCode: 5 }]);
  });

  it("stdin reaches the command and its end is passed on; 20 MB of output arrive whole", async () => {
    const input = randomBytes(3 * 1024 * 1024);
    const hashing = await joined(server, { kind: "exec", command: ["sha256sum"] });
    for (let at = 0; at < input.length; at += 64 * 1024) hashing.user.send(STDIN, input.subarray(at, at + 64 * 1024));
    hashing.user.endInput();
    await hashing.done;
    expect(hashing.user.stdout).toBe(`${createHash("sha256").update(input).digest("hex")}  -\n`);

    const file = path.join(work, "big.bin");
    const big = randomBytes(20 * 1024 * 1024);
    fs.writeFileSync(file, big);
    fs.chmodSync(work, 0o755);
    fs.chmodSync(file, 0o644);
    const cat = await joined(server, { kind: "exec", command: ["cat", file] });
    await cat.done;
    expect(cat.user.statuses).toEqual([{ exitCode: 0 }]);
    expect(createHash("sha256").update(Buffer.concat(cat.user.out)).digest("hex")).toBe(createHash("sha256").update(big).digest("hex"));
  });

  it("is refused when switched off or without a command", async () => {
    expect(await refused(server, { kind: "exec", command: ["true"] }, testConfig((c) => (c.exec = false)))).toBe("the device's configuration switches exec off (remoteAccess.exec: false)");
    expect(await refused(server, { kind: "exec", command: [] })).toBe("command: the argv to run, a non-empty list of strings");
    expect(await refused(server, { kind: "exec", command: ["true"] }, testConfig((c) => (c.enabled = false)))).toBe("remote access is switched off on the device (remoteAccess.enabled: false)");
  });
});

