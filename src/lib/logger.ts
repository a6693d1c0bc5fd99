// Structured JSON logs. Anything that looks like a credential is redacted by path, and
// request logs carry the path without its query string (tickets and tokens travel there).
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
    destination,
  );
}
