// What the process holds once it has started: configuration, database, logger and keys.
// Passed explicitly (no module-level singletons) so tests can run several apps side by side.
import type { Config } from "./config.js";
import type { Database, Db } from "./db/client.js";
import type { Logger } from "./lib/logger.js";
import { SecretBox } from "./lib/crypto.js";
import { loadOrCreateKeyFile, parseKey } from "./lib/key-files.js";
import { createRateLimiters, type RateLimiters } from "./lib/rate-limit.js";
import { AdmissionGate } from "./lib/admission.js";

export interface Services {
  config: Config;
  database: Database;
  prisma: Db;
  logger: Logger;
  /** encrypts secrets at rest (registry credentials, CA private keys) */
  secrets: SecretBox;
  /** HS256 key for access tokens */
  jwtKey: Uint8Array;
  rateLimits: RateLimiters;
  /** the per-process turns of telemetry and log ingest (src/http/ingest-admission.ts) */
  ingestGate: AdmissionGate;
}

export function createServices(config: Config, database: Database, logger: Logger): Services {
  const encryptionKey = config.ENCRYPTION_KEY
    ? parseKey(config.ENCRYPTION_KEY, "ENCRYPTION_KEY")
    : loadOrCreateKeyFile(config.DATA_DIR, "encryption.key");
  const jwtKey = config.JWT_SECRET
    ? new TextEncoder().encode(config.JWT_SECRET)
    : loadOrCreateKeyFile(config.DATA_DIR, "jwt.key");
  const rateLimits = createRateLimiters(
    { perSource: config.RATE_LIMIT_PER_SOURCE, perCredential: config.RATE_LIMIT_PER_CREDENTIAL, perDevice: config.RATE_LIMIT_PER_DEVICE, loginFailures: config.RATE_LIMIT_LOGIN_FAILURES },
    database.opened.pool,
  );
  const ingestGate = new AdmissionGate({
    concurrency: config.INGEST_CONCURRENCY, queueLength: config.INGEST_QUEUE_LENGTH, queueTimeoutMs: config.INGEST_QUEUE_TIMEOUT_MS,
  });
  return { config, database, prisma: database.prisma, logger, secrets: new SecretBox(encryptionKey), jwtKey, rateLimits, ingestGate };
}
