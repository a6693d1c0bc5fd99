// deploy/systemd/fleet-manager.service as systemd reads it: `systemd-analyze verify` parses
// every key and checks the program it starts; it exits 0 on an unknown key or a bad value too,
// so the test asks for no output at all. Skips without systemd-analyze (Debian's systemd).
import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { peersAvailable, requirePeer } from "../support/peers.js";
import { ROOT } from "../support/server-process.js";

const run = promisify(execFile);
const UNIT = path.join(ROOT, "deploy", "systemd", "fleet-manager.service");

describe.skipIf(!peersAvailable("systemd-analyze"))("the systemd unit", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-unit-"));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function verify(text: string): Promise<{ code: number; output: string }> {
    const file = path.join(dir, "fleet-manager.service");
    fs.writeFileSync(file, text);
    return run(requirePeer("systemd-analyze"), ["verify", file], { cwd: dir }).then(
      ({ stdout, stderr }) => ({ code: 0, output: (stdout + stderr).trim() }),
      (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, output: (err.stdout + err.stderr).trim() }),
    );
  }

  it("passes systemd-analyze verify without a warning", async () => {
    // The unit starts /usr/bin/node (Debian's and NodeSource's); verify checks that it is
    // executable, so on a machine whose Node.js is elsewhere the copy names that one.
    const unit = fs.readFileSync(UNIT, "utf8").replace("/usr/bin/node ", `${process.execPath} `);
    expect(await verify(unit)).toEqual({ code: 0, output: "" });
  });

  it("runs as its own user, writes only its state directory and restarts on failure", () => {
    const keys = new Map<string, string>();
    for (const line of fs.readFileSync(UNIT, "utf8").split("\n")) {
      const m = /^(\w+)=(.*)$/.exec(line);
      if (m) keys.set(m[1], m[2]);
    }
    expect(Object.fromEntries(["DynamicUser", "StateDirectory", "ProtectSystem", "NoNewPrivileges", "Restart", "KillSignal"].map((k) => [k, keys.get(k)]))).toEqual({
      DynamicUser: "yes", StateDirectory: "fleet-manager", ProtectSystem: "strict", NoNewPrivileges: "yes", Restart: "on-failure", KillSignal: "SIGTERM",
    });
    // the data directory is the state directory; settings come from the environment file
    expect(keys.get("Environment")).toContain("DATA_DIR=/var/lib/fleet-manager");
    expect(keys.get("EnvironmentFile")).toBe("-/etc/fleet-manager/fleet-manager.env");
  });

  it("the check finds a mistake (a bad value)", async () => {
    const broken = fs.readFileSync(UNIT, "utf8").replace("/usr/bin/node ", `${process.execPath} `).replace("ProtectSystem=strict", "ProtectSystem=strictt");
    expect((await verify(broken)).output).toContain("Failed to parse protect system value");
  });

  it("systemd-analyze security rates its exposure at most 2.0 of 10 (1.7 now)", async () => {
    // systemd's own score of the sandbox (offline: the unit file alone). What is left exposed is
    // what a network service on Node needs: the network, AF_UNIX (the backup socket), writable
    // and executable memory (V8's JIT). --threshold counts in tenths: exit 1 above 20.
    const file = path.join(dir, "fleet-manager.service");
    fs.writeFileSync(file, fs.readFileSync(UNIT, "utf8").replace("/usr/bin/node ", `${process.execPath} `));
    const { stdout } = await run(requirePeer("systemd-analyze"), ["security", "--offline=yes", "--threshold=20", "--no-pager", file], { cwd: dir });
    expect(stdout).toMatch(/Overall exposure level for fleet-manager\.service: [0-2]\.\d /);
  });
});
