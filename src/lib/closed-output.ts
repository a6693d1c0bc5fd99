// stdout and stderr may be a pipe whose reader is gone: `npm start | tee log` after Ctrl-C
// (the terminal signals the whole pipeline, so tee is gone before the service writes its
// "shutting down" line). Node ignores SIGPIPE, so such a write fails with EPIPE, which Node
// reports as an 'error' event on process.stdout or process.stderr: without a listener, an
// uncaught exception with its stack trace instead of the graceful stop. The service drops
// those writes and goes on (a stop signal still stops it); the logger does likewise
// (src/lib/logger.ts).

/** The reader is gone (EPIPE), and so is anything written to the stream after that. */
const CLOSED_OUTPUT = new Set(["EPIPE", "ERR_STREAM_DESTROYED"]);

/** Writes to a stdout or stderr whose reader is gone are dropped; any other write error is thrown as before. */
export function dropWritesToClosedOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (err: NodeJS.ErrnoException) => {
      if (!CLOSED_OUTPUT.has(err.code ?? "")) throw err;
    });
  }
}
