// The local terminal in raw mode for an interactive session (every key goes to the device,
// Ctrl-C included), restored on every way out: the session's end, an error, a signal, and the
// process exiting by any other path.
import type { Io } from "../main.js";

export async function withRawTerminal<T>(io: Io, run: (raw: boolean) => Promise<T>): Promise<T> {
  const stdin = io.stdin as NodeJS.ReadStream;
  const raw = !!stdin.isTTY && typeof stdin.setRawMode === "function" && !!(io.stdout as NodeJS.WriteStream).isTTY;
  if (!raw) return run(false);
  const wasRaw = stdin.isRaw;
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    try {
      stdin.setRawMode(wasRaw);
    } catch {
      /* the terminal is gone already */
    }
  };
  process.once("exit", restore);
  stdin.setRawMode(true);
  try {
    return await run(true);
  } finally {
    restore();
    process.off("exit", restore);
  }
}

/** The local terminal's size, when stdout is one. */
export function windowSize(io: Io): { cols?: number; rows?: number } {
  const out = io.stdout as NodeJS.WriteStream;
  return out.isTTY && out.columns && out.rows ? { cols: out.columns, rows: out.rows } : {};
}
