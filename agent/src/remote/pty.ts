// A pseudo-terminal without a native module (docs/remote-access.md, "On the device", why):
// util-linux script(1) opens the pty, makes it the controlling terminal of a new session for
// the command and relays between the pty and its own stdin/stdout, which are our pipes:
//   script -q -f -e -c '<command>' /dev/null
// (-q no banner, -f flush at once, -e the command's exit code, /dev/null: no typescript kept).
// The window size is set inside the pty before the command starts (`stty rows R cols C`) and
// changed later with `stty -F /dev/pts/N`, N read from the command's /proc/<pid>/stat (tty_nr):
// the kernel then sends SIGWINCH to the terminal's foreground process group, as for any
// terminal. Chosen over node-pty (a native addon built with node-gyp on the device, or prebuilt
// binaries only for some platforms and Node ABIs) because every Debian, Ubuntu, Fedora and
// Alpine (util-linux) device has script and stty already, and the agent ships as one file.
import { execFile } from "node:child_process";
import fs from "node:fs";
import { promisify } from "node:util";
import { processIds } from "./processes.js";

const run = promisify(execFile);

/** Quotes one word for sh: the argv reaches the command unchanged, never read as shell syntax. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

export function clampSize(cols: unknown, rows: unknown): { cols: number; rows: number } {
  const fit = (value: unknown, fallback: number) => (Number.isInteger(value) && (value as number) > 0 ? Math.min(value as number, 1000) : fallback);
  return { cols: fit(cols, 80), rows: fit(rows, 24) };
}

/** script(1)'s arguments for `argv` under a pty of `size`; `env` exported inside (script itself runs /bin/sh). */
export function scriptArgs(argv: string[], size: { cols: number; rows: number }, env: Record<string, string> = {}): string[] {
  const exports = Object.entries(env).map(([key, value]) => `${key}=${shellQuote(value)}; export ${key}; `).join("");
  const inner = `${exports}stty rows ${size.rows} cols ${size.cols} 2>/dev/null; exec ${argv.map(shellQuote).join(" ")}`;
  return ["-q", "-f", "-e", "-c", inner, "/dev/null"];
}

/** Whether script(1) and stty are here (util-linux and coreutils). */
export function ptyAvailable(): boolean {
  const dirs = (process.env.PATH ?? "/usr/bin:/bin").split(":");
  return ["script", "stty"].every((tool) => dirs.some((dir) => fs.existsSync(`${dir}/${tool}`)));
}

/** The pid of script's child (the command under the pty), once it exists; null after `timeoutMs`. */
export async function ptyChild(scriptPid: number, timeoutMs = 3000): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const children = fs.readFileSync(`/proc/${scriptPid}/task/${scriptPid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
      for (const child of children) {
        const ids = processIds(child);
        // script's child has made its own session with the pty as its terminal
        if (ids && ids.session === child && ids.ttyNr !== 0) return child;
      }
    } catch {
      return null; // script is gone
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return null;
}

/** /dev/pts/N of a process's controlling terminal (null: none, or not a pts). */
export function ptsOf(pid: number): string | null {
  const ids = processIds(pid);
  if (!ids || ids.ttyNr === 0) return null;
  const major = (ids.ttyNr >> 8) & 0xfff;
  const minor = (ids.ttyNr & 0xff) | ((ids.ttyNr >> 12) & 0xfff00);
  // Unix98 ptys: majors 136-143
  if (major < 136 || major > 143) return null;
  return `/dev/pts/${(major - 136) * 256 + minor}`;
}

/** Sets the window size of a pty (the foreground process group gets SIGWINCH). */
export async function resizePty(pts: string, size: { cols: number; rows: number }): Promise<void> {
  await run("stty", ["-F", pts, "rows", String(size.rows), "cols", String(size.cols)], { timeout: 5000 });
}
