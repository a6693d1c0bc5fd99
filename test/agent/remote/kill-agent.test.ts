// kill -9 of the agent mid-session leaves nothing of its sessions running: the sessions'
// watchdogs end them at once; what a watchdog could not (it was killed too) the agent's next
// start ends from the registry in its state directory.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SessionProcesses } from "../../../agent/src/remote/processes.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { alive } from "./harness.js";
import { StreamServer } from "./stream-server.js";

let server: StreamServer;
fs.mkdirSync("/dev/shm/fleet-tests", { recursive: true });
const work = fs.mkdtempSync("/dev/shm/fleet-tests/remote-kill-");
beforeAll(async () => {
  server = await StreamServer.start();
});
afterAll(async () => {
  await server.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe("kill -9 of the agent", () => {
  it("ends a shell's processes (one ignoring SIGHUP too) and an exec's at once, and the streams close", async () => {
    const shell = server.expect("shell-token");
    const exec = server.expect("exec-token");
    const agent = spawn(process.execPath, ["--import", "tsx", path.join(import.meta.dirname, "fixtures/serve-offers.ts"), server.url, path.join(work, "state"),
      "shell:shell-token", "exec:exec-token:sh:-c:sleep 3000 & echo $!; wait"], { stdio: ["ignore", "pipe", "inherit"] });
    const [shellUser, execUser] = await Promise.all([shell.user, exec.user]);
    shellUser.type("sleep 3001 & echo BG-$!-\"\"END; (trap '' HUP; exec sleep 3002) & echo NOHUP-$!-\"\"END\n");
    await shellUser.until(() => /BG-\d+-END/.test(shellUser.stdout) && /NOHUP-\d+-END/.test(shellUser.stdout));
    await execUser.until(() => /^\d+\n/.test(execUser.stdout));
    const pids = [Number(/BG-(\d+)-END/.exec(shellUser.stdout)![1]), Number(/NOHUP-(\d+)-END/.exec(shellUser.stdout)![1]), Number(execUser.stdout.trim())];
    expect(pids.map(alive)).toEqual([true, true, true]);

    agent.kill("SIGKILL");
    await Promise.all([shellUser.closed, execUser.closed]);
    await expect.poll(() => pids.filter(alive), { timeout: 20_000, interval: 100 }).toEqual([]);
  });

  it("at the next start, the registry's leftovers (a watchdog killed as well) are ended", async () => {
    const state = new StateDir(path.join(work, "restart"));
    state.ensure();
    const leftover = spawn("sleep", ["3004"], { detached: true, stdio: "ignore" });
    const bootId = fs.readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    state.writeJson("remote-processes.json", { bootId, sessions: [leftover.pid] });
    expect(alive(leftover.pid!)).toBe(true);
    const exited = new Promise((resolve) => leftover.once("exit", (_code, signal) => resolve(signal)));
    expect(await new SessionProcesses(state).killLeftovers()).toBe(1);
    expect(await exited).toBe("SIGKILL");
    expect(state.readJson("remote-processes.json")).toEqual({ bootId, sessions: [] });
  });
});
