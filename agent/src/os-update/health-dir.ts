// The device's own health checks of a new system (docs/os-updates.md, "trial"): every executable
// file in a directory (FLEET_AGENT_HEALTH_DIR, default /etc/fleet-agent/health.d) must exit 0
// before the new slot is marked good. The same convention as greenboot's `check/required.d`,
// which FlightCtl's users know: a check is a script the system image brings (an image whose own
// check fails is never committed) or that the device configuration writes (config layers,
// docs/configuration.md). A check that hangs counts as failed after its timeout.
import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

export const DEFAULT_HEALTH_DIR = "/etc/fleet-agent/health.d";
/** how long one check may run before it counts as failed */
const CHECK_TIMEOUT_MS = 60_000;
/** the check's last words kept in the reason */
const OUTPUT_CHARS = 300;

export function healthDirFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.FLEET_AGENT_HEALTH_DIR || DEFAULT_HEALTH_DIR;
}

/** The executable files of `dir`, by name (a missing directory has none). Hidden files and `*.disabled` are skipped. */
function checksIn(dir: string): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  return names.filter((name) => !name.startsWith(".") && !name.endsWith(".disabled")).sort().filter((name) => {
    try {
      const stat = fs.statSync(path.join(dir, name));
      return stat.isFile() && (stat.mode & 0o111) !== 0;
    } catch {
      return false;
    }
  });
}

function run(file: string, timeoutMs: number): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(file, [], { timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 256 * 1024 }, (error, stdout, stderr) => {
      if (!error) return resolve(null);
      // what it said last on stderr (where a check says what is wrong), else on stdout
      const lastLine = (text: string) => text.trim().split("\n").filter(Boolean).pop();
      const said = (lastLine(stderr) ?? lastLine(stdout))?.slice(0, OUTPUT_CHARS);
      const how = error.killed ? `did not finish within ${Math.round(timeoutMs / 1000)} s`
        : typeof error.code === "number" ? `exited ${error.code}` : `could not run (${error.code ?? error.message})`;
      resolve(`${path.basename(file)} ${how}${said ? `: ${said}` : ""}`);
    });
  });
}

/**
 * Runs every check of `dir` one after the other; null when all pass (or there are none),
 * else the failures, each named with its exit and last line of output.
 */
export async function runHealthDir(dir: string, timeoutMs = CHECK_TIMEOUT_MS): Promise<string | null> {
  const failures: string[] = [];
  for (const name of checksIn(dir)) {
    const failure = await run(path.join(dir, name), timeoutMs);
    if (failure) failures.push(failure);
  }
  return failures.length ? failures.join(", ") : null;
}
