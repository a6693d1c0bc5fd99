// Engine commands a previous life of the agent left running. `kill -9` of the agent kills the
// agent alone: a `podman-compose up` it started goes on, and would race the restarted agent's
// own `down` and `up` of the same project (a container of the old run holding the port the new
// one needs). systemd kills what is left in the unit's cgroup before a restart, but the agent
// must converge without it too (a container, a terminal). The engine commands run with their
// working directory in the agent's releases directory (agent/src/runtime), which nothing else
// does: those are stopped. conmon, which keeps a container (not a command) alive, is left alone;
// the project's `down` deals with containers.
import fs from "node:fs/promises";

/** SIGKILLs every process (but this one and conmon) whose working directory is below `dir`; resolves once they are gone. */
export async function stopOrphanedCommands(dir: string, procRoot = "/proc"): Promise<number[]> {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  const stopped: number[] = [];
  for (const entry of await fs.readdir(procRoot)) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cwd = await fs.readlink(`${procRoot}/${entry}/cwd`);
      if (!`${cwd}/`.startsWith(prefix)) continue;
      if ((await fs.readFile(`${procRoot}/${entry}/comm`, "utf8")).trim() === "conmon") continue;
      process.kill(Number(entry), "SIGKILL");
      stopped.push(Number(entry));
    } catch {
      /* gone meanwhile, or not ours to read */
    }
  }
  const deadline = Date.now() + 10_000;
  while (stopped.some((pid) => alive(pid)) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  return stopped;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
