// After a kill -9 of the agent, the engine commands it had started run on; the restarted agent
// stops them (agent/src/host/orphans.ts) before it touches their projects again.
import { spawn } from "node:child_process";
import { once } from "node:events";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { stopOrphanedCommands } from "../../../agent/src/host/orphans.js";

const dirs: string[] = [];
const children: number[] = [];
afterEach(() => {
  for (const pid of children.splice(0)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function sleeper(cwd: string) {
  const child = spawn("sleep", ["300"], { cwd, stdio: "ignore" });
  children.push(child.pid!);
  return child;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("stopping what a previous run left", () => {
  it("kills the processes working in the releases directory, and only those", async () => {
    const state = fs.mkdtempSync(path.join(os.tmpdir(), "orphans-"));
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "elsewhere-"));
    dirs.push(state, elsewhere);
    const project = path.join(state, "releases", "d1", "web");
    fs.mkdirSync(project, { recursive: true });
    const orphan = sleeper(project);
    const bystander = sleeper(elsewhere);
    const exited = new Promise((resolve) => orphan.once("exit", resolve));
    await Promise.all([once(orphan, "spawn"), once(bystander, "spawn")]); // running, in their directories

    const stopped = await stopOrphanedCommands(path.join(state, "releases"));
    expect(stopped).toEqual([orphan.pid]);
    await exited;
    expect(alive(bystander.pid!)).toBe(true);
    // nothing left: a second look finds none
    expect(await stopOrphanedCommands(path.join(state, "releases"))).toEqual([]);
  });
});
