// A shell's or a command's standard streams over a session's stream: stdin to channel 0 (its
// end as [255, 0]), channels 1 and 2 to stdout and stderr apart, the window size on channel 4
// when the local side is a terminal, and the exit status from channel 3. Back-pressure both
// ways: stdin pauses while the WebSocket holds more than the high watermark, and the
// WebSocket stops being read while stdout's buffer is full.
import type { ApiClient } from "../client.js";
import type { Io } from "../main.js";
import { CHANNEL } from "./framing.js";
import { EscapeFilter } from "./escape.js";
import { endedSession, endReasonText, EXIT_SESSION_LOST, openSessionStream, readStatus, type Opened, type RemoteStream } from "./session.js";

export interface StdioOptions {
  /** `~.` at a line start leaves (ssh) */
  escape: boolean;
  /** what `~.` says on leaving */
  leaving?: string;
  /** messages end with \r\n (the local terminal is in raw mode) */
  raw: boolean;
  /** send the window size on channel 4 when the local terminal's changes */
  resize: boolean;
}

type Tty = NodeJS.WriteStream & { columns?: number; rows?: number; isTTY?: boolean };

export async function pipeStdio(client: ApiClient, opened: Opened, io: Io, options: StdioOptions): Promise<number> {
  let exitCode: number | undefined;
  let refusal: string | undefined;
  let left = false;
  const stdout = io.stdout as Tty;
  const eol = options.raw ? "\r\n" : "\n";

  const stream: RemoteStream = await openSessionStream(client, opened, (frame) => {
    if (frame.channel === CHANNEL.stdout || frame.channel === CHANNEL.stderr) {
      const target = frame.channel === CHANNEL.stdout ? io.stdout : io.stderr;
      if (!target.write(frame.payload)) {
        stream.pauseReading();
        target.once("drain", () => stream.resumeReading());
      }
      return;
    }
    const status = readStatus(frame);
    if (status?.exitCode !== undefined) {
      exitCode = status.exitCode;
      stream.closeSoon();
    }
    if (status?.error !== undefined) refusal = status.error;
  });

  const stdin = io.stdin as NodeJS.ReadStream;
  const escape = options.escape ? new EscapeFilter() : null;
  const onData = (chunk: Buffer | string) => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    const { forward, leave } = escape ? escape.push(bytes) : { forward: bytes, leave: false };
    if (forward.length) {
      if (!stream.send(CHANNEL.stdin, forward)) {
        stdin.pause();
        void stream.drained().then(() => stdin.resume());
      }
    }
    if (leave) {
      left = true;
      stream.close(1000, "closed-by-user");
    }
  };
  const onEnd = () => {
    if (stream.open) stream.halfClose(CHANNEL.stdin);
  };
  stdin.on("data", onData);
  stdin.once("end", onEnd);
  stdin.resume();

  const onResize = () => {
    if (stdout.columns && stdout.rows) stream.sendJson(CHANNEL.resize, { cols: stdout.columns, rows: stdout.rows });
  };
  if (options.resize && stdout.isTTY) {
    onResize();
    stdout.on("resize", onResize); // Node's own SIGWINCH handling for a TTY stream
  }

  // Ending the local side ends the session: a signal or the terminal going away
  const onSignal = () => {
    left = true;
    stream.close(1000, "closed-by-user");
  };
  const signals: NodeJS.Signals[] = ["SIGTERM", "SIGHUP"];
  for (const signal of signals) process.on(signal, onSignal);

  const closed = await stream.closed;
  stdin.off("data", onData);
  stdin.off("end", onEnd);
  stdin.pause();
  stdout.off("resize", onResize);
  for (const signal of signals) process.off(signal, onSignal);

  if (left) {
    // the service ends a session when its user leg closes; saying so is cheap and certain
    await client.request("POST", `/remote-sessions/${opened.session.id}/close`).catch(() => undefined);
    if (options.leaving) io.stderr.write(`${eol}${options.leaving}${eol}`);
    return exitCode ?? 0;
  }
  if (exitCode !== undefined) return exitCode;
  if (refusal !== undefined) {
    io.stderr.write(`${eol}error: ${endReasonText("device-refused", refusal)}${eol}`);
    return EXIT_SESSION_LOST;
  }
  const session = await endedSession(client, opened.session.id);
  if (session?.exitCode != null) return session.exitCode;
  io.stderr.write(`${eol}error: ${endReasonText(session?.endReason ?? (closed.reason || null))}${eol}`);
  return EXIT_SESSION_LOST;
}
