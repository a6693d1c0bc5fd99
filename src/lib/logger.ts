// Structured JSON logs. Anything that looks like a credential is redacted by path, and
// request logs carry the path without its query string (tickets and tokens travel there).
//
// Written to stdout synchronously, a line at a time: nothing is left in a buffer for an exit
// handler to flush. pino's default (an asynchronous SonicBoom flushed by an exit handler) hangs
// the process when stdout is a pipe whose reader is gone (`npm start | tee log` after Ctrl-C
// stopped tee): the flush retries the write that fails with EPIPE forever, inside process.exit,
// and no signal but SIGKILL ends it. In this mode a failing write stops the logging instead
// (pino's destination turns the stream into a no-op on EPIPE) and the service stops as asked
// (test/http/faults/closed-pipe.test.ts).
import { pino, type Logger } from "pino";

export type { Logger };

const SECRET_KEYS = [
  "password", "currentPassword", "newPassword", "token", "accessToken", "refreshToken", "key",
  "apiKey", "secret", "credential", "privateKey", "privateKeyPem", "authorization", "cookie",
  "x-api-key", "enrollmentToken",
];

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      base: undefined,
      redact: {
        paths: [...SECRET_KEYS, ...SECRET_KEYS.map((k) => `*.${k}`), ...SECRET_KEYS.map((k) => `*.*.${k}`)],
        censor: "[redacted]",
      },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}
