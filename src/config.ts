// Every setting is an environment variable, validated once at start-up. A bad value stops
// the process with a message naming the variable (never its value: it may be a secret).
import { z } from "zod";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  HOST: z.string().min(1).default("0.0.0.0"),
  PORT: int(0, 65535).default(3000),
  DATA_DIR: z.string().min(1).default("./data"),
  /** PostgreSQL connection string; when absent the embedded PGlite database in DATA_DIR is used */
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_SIZE: int(1, 200).default(10),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** 32 bytes as 64 hex characters or base64; generated into DATA_DIR/encryption.key when absent */
  ENCRYPTION_KEY: z.string().optional(),
  /** secret for signing access tokens (HS256); generated into DATA_DIR/jwt.key when absent */
  JWT_SECRET: z.string().min(32).optional(),
  ACCESS_TOKEN_TTL_SECONDS: int(60, 86_400).default(900),
  REFRESH_TOKEN_TTL_DAYS: int(1, 365).default(30),
  BODY_LIMIT_BYTES: int(1024, 50 * 1024 * 1024).default(1024 * 1024),
  BOOTSTRAP_ADMIN_EMAIL: z.string().email().default("admin@example.com"),
  BOOTSTRAP_ADMIN_PASSWORD: z.string().min(8).optional(),
  BOOTSTRAP_API_KEY: z.string().min(32).optional(),
  /** comma-separated list of allowed browser origins; empty = CORS closed */
  CORS_ORIGINS: z.string().default(""),
  /** refuse outbound requests to loopback and private ranges (set false on shared installations) */
  OUTBOUND_ALLOW_PRIVATE_NETWORKS: bool.default(true),
  /** trust X-Forwarded-For from this many proxies (express "trust proxy") */
  TRUST_PROXY_HOPS: int(0, 10).default(0),
});

export type Config = z.infer<typeof schema>;

export class ConfigError extends Error {}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // Empty strings in .env files mean "unset".
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ""));
  const parsed = schema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
