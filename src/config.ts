// Every setting is an environment variable, validated once at start-up. A bad value stops
// the process with a message naming the variable (never its value: it may be a secret).
import { z } from "zod";

const bool = z.enum(["true", "false", "1", "0"]).transform((v) => v === "true" || v === "1");
const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

/** http(s)://host[:port] with nothing after it but an optional "/". */
function isOrigin(value: string): boolean {
  try {
    const url = new URL(value);
    return /^https?:$/.test(url.protocol) && url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
  } catch {
    return false;
  }
}

const schema = z.object({
  NODE_ENV: z.enum(["development", "production", "test"]).default("development"),
  HOST: z.string().min(1).default("0.0.0.0"),
  PORT: int(0, 65535).default(3000),
  DATA_DIR: z.string().min(1).default("./data"),
  /** PostgreSQL connection string; when absent the embedded PGlite database in DATA_DIR is used */
  DATABASE_URL: z.string().url().optional(),
  DATABASE_POOL_SIZE: int(1, 200).default(10),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /**
   * a request that took at least this many milliseconds is logged at warn (0: never); every
   * other request is logged at debug, and a 5xx at warn
   */
  LOG_SLOW_REQUEST_MS: int(0, 3_600_000).default(1000),
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
  /** requests per minute from one source address without a valid credential (0 = no limit) */
  RATE_LIMIT_PER_SOURCE: int(0, 10_000_000).default(6000),
  /** requests per minute of one API key, or of one user across all their sessions (0 = no limit) */
  RATE_LIMIT_PER_CREDENTIAL: int(0, 10_000_000).default(3000),
  /** requests per minute of one device, whatever token it signs (0 = no limit) */
  RATE_LIMIT_PER_DEVICE: int(0, 10_000_000).default(600),
  /** failed sign-ins per 15 minutes for one account (ten times that for one address) */
  RATE_LIMIT_LOGIN_FAILURES: int(1, 10_000).default(10),
  /** a Git registry sync (fetch and scan) is abandoned after this many seconds */
  GIT_SYNC_TIMEOUT_SECONDS: int(5, 3600).default(120),
  /** bytes a Git registry fetch may download */
  GIT_SYNC_MAX_FETCH_BYTES: int(1024 * 1024, 10 * 1024 * 1024 * 1024).default(100 * 1024 * 1024),
  /** run the background job runner in this process (scheduled syncs and other jobs) */
  JOBS_ENABLED: bool.default(true),
  /** jobs this process runs at the same time */
  JOBS_CONCURRENCY: int(1, 64).default(2),
  /** how often an idle runner looks for due jobs */
  JOBS_POLL_INTERVAL_MS: int(100, 60_000).default(1000),
  /** on shutdown, how long in-flight jobs may take to finish */
  JOBS_SHUTDOWN_GRACE_SECONDS: int(0, 600).default(15),
  /** seconds between device heartbeats (told to agents); three missed intervals mark a device offline */
  HEARTBEAT_INTERVAL_SECONDS: int(5, 3600).default(30),
  /** how often offline detection runs */
  OFFLINE_CHECK_INTERVAL_SECONDS: int(1, 3600).default(15),
  /** a cached device certificate is re-checked (revoked? organization active?) after this many seconds */
  DEVICE_AUTH_RECHECK_SECONDS: int(0, 300).default(5),
  /** device certificates kept verified in memory per process */
  DEVICE_AUTH_CACHE_SIZE: int(0, 10_000_000).default(200_000),
  /**
   * OpenID Connect provider for POST /auth/oidc: issuer, JWKS URL and audience (all three, or none:
   * that sign-in is off). The issuer also serves the console's sign-in (OIDC_CLIENT_ID below).
   */
  OIDC_ISSUER: z.string().url().optional(),
  OIDC_JWKS_URL: z.string().url().optional(),
  OIDC_AUDIENCE: z.string().min(1).optional(),
  /** ID token claim holding the user's groups for the federation group mappings (dots reach into objects) */
  OIDC_GROUPS_CLAIM: z.string().min(1).default("groups"),
  /**
   * "Sign in with <provider>" in the console: the service is a confidential OpenID Connect client
   * of OIDC_ISSUER (endpoints from its discovery document). Client id and secret (a secret: never
   * logged or echoed), both or neither.
   */
  OIDC_CLIENT_ID: z.string().min(1).max(500).optional(),
  OIDC_CLIENT_SECRET: z.string().min(1).max(2000).optional(),
  /** how the service authenticates to the token endpoint with the secret */
  OIDC_CLIENT_AUTH_METHOD: z.enum(["client_secret_basic", "client_secret_post"]).default("client_secret_basic"),
  /** the provider's name on the sign-in button ("Sign in with <name>"); default: the issuer's host name */
  OIDC_PROVIDER_NAME: z.string().trim().min(1).max(60).optional(),
  /** scopes asked for, separated by spaces (add the one that puts groups in the ID token if the provider needs it) */
  OIDC_SCOPES: z.string().trim().default("openid email profile")
    .refine((s) => s.split(/\s+/).includes("openid"), "must include openid"),
  /**
   * The address browsers reach the service at (https://fleet.example.com), without a path. The
   * OIDC redirect URI is <PUBLIC_URL>/api/v1/auth/oidc/callback; when unset, it is built from the
   * address the browser used (honouring TRUST_PROXY_HOPS).
   */
  PUBLIC_URL: z.string()
    .refine(isOrigin, "an http(s) origin without a path, e.g. https://fleet.example.com")
    .transform((u) => new URL(u).origin)
    .optional(),
  /** raw telemetry snapshots older than this many days are pruned (0 = keep forever) */
  TELEMETRY_RETENTION_DAYS: int(0, 3650).default(30),
  /** 5-minute telemetry rollups older than this many days are dropped (0 = keep forever) */
  TELEMETRY_ROLLUP_5M_RETENTION_DAYS: int(0, 3650).default(90),
  /** hourly telemetry rollups older than this many days are dropped (0 = keep forever) */
  TELEMETRY_ROLLUP_1H_RETENTION_DAYS: int(0, 3650).default(730),
  /**
   * how often the telemetry.fleet-rollups job recomputes the whole-fleet series of the buckets
   * ingest has touched (docs/telemetry.md, "Fleet-wide telemetry series"): how far behind ingest
   * a whole-fleet series may be
   */
  TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS: int(5, 3600).default(60),
  /**
   * how often the whole-fleet series recomputes today's day bucket, which reads every hourly
   * rollup row of the day (the 5-minute and hourly buckets follow TELEMETRY_FLEET_ROLLUP_INTERVAL_SECONDS)
   */
  TELEMETRY_FLEET_DAY_REFRESH_SECONDS: int(0, 86_400).default(600),
  /** device log lines older than this many days are pruned (0 = keep forever) */
  LOG_RETENTION_DAYS: int(0, 3650).default(14),
  /**
   * Ingest backpressure (docs/telemetry.md, "When ingest is busy"): telemetry and log batches
   * this process works on at once (from reading the body to the stored answer); batches in
   * flight share statements (group commit), so more turns mean larger statements, not more
   * connections
   */
  INGEST_CONCURRENCY: int(1, 10_000).default(64),
  /** ingest batches waiting for a turn, bodies unread; one more is refused at once (503) */
  INGEST_QUEUE_LENGTH: int(0, 1_000_000).default(256),
  /** an ingest batch waiting longer for a turn is refused (503): the database is not keeping up */
  INGEST_QUEUE_TIMEOUT_MS: int(1, 600_000).default(2000),
  /** Retry-After of a refused ingest batch: this many seconds plus up to as many again at random */
  INGEST_RETRY_AFTER_SECONDS: int(1, 3600).default(5),
  /** how often alert rules are evaluated */
  ALERT_EVALUATION_INTERVAL_SECONDS: int(5, 86_400).default(60),
  /** attempts of one notification delivery before it is given up */
  NOTIFICATION_MAX_ATTEMPTS: int(1, 20).default(5),
  /** back-off before the second attempt; doubles with each further one (capped at one hour) */
  NOTIFICATION_RETRY_BASE_MS: int(10, 3_600_000).default(30_000),
  /** one notification attempt (HTTP request or SMTP send) is abandoned after this long */
  NOTIFICATION_TIMEOUT_SECONDS: int(1, 300).default(10),
  /**
   * SMTP server for account mail (invitations, password resets, verification) and e-mail
   * notification targets, e.g. smtp://user:pass@mail.example:587 (smtps:// for TLS); unset,
   * account mail waits in the outbox and e-mail targets are refused
   */
  SMTP_URL: z.string().url().optional(),
  /** sender address (From) of account mail and notification e-mails */
  SMTP_FROM: z.string().min(3).default("Fleet Manager <fleet-manager@localhost>"),
  /** attempts to send one account mail (outbox message) before it is marked failed */
  MAIL_MAX_ATTEMPTS: int(1, 20).default(8),
  /** back-off before a mail's second attempt; doubles with each further one (capped at one hour) */
  MAIL_RETRY_BASE_MS: int(10, 3_600_000).default(30_000),
  /** lifetime of device certificates issued at enrollment and renewal */
  DEVICE_CERT_VALIDITY_DAYS: int(1, 3650).default(365),
  /** trust X-Forwarded-For from this many proxies (express "trust proxy") */
  TRUST_PROXY_HOPS: int(0, 10).default(0),
  /**
   * processes serving PORT together (node:cluster), e.g. one per core: they share the port and
   * coordinate through PostgreSQL like any N processes (docs/scaling.md). PostgreSQL only.
   */
  WORKERS: int(1, 64).default(1),
  /**
   * the MCP server (/api/v1/mcp, `fleet mcp`; docs/mcp.md) offers the mutating procedures as
   * tools too; without it, only the read-only ones (each call still needs the caller's permission)
   */
  MCP_ALLOW_MUTATIONS: bool.default(false),
  /**
   * The service's Prometheus metrics (docs/observability.md): GET /metrics on PORT answers a
   * scraper sending `Authorization: Bearer <METRICS_TOKEN>`; without a token it is off (404)
   */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** also serve /metrics, without a token, on this port of METRICS_HOST (with WORKERS > 1: the primary, all workers summed) */
  METRICS_PORT: int(1, 65535).optional(),
  /** the address METRICS_PORT listens on: loopback unless set otherwise */
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  /**
   * Remote access (docs/remote-access.md): each process also listens on this address for the
   * internal hops of streams whose legs reached different processes (HMAC-authenticated with
   * the installation's JWT key). Loopback suits processes on one machine; set an address the
   * other processes reach when they run on several.
   */
  REMOTE_RELAY_HOST: z.string().min(1).default("127.0.0.1"),
  /** its port; 0: any free port (each process its own) */
  REMOTE_RELAY_PORT: int(0, 65535).default(0),
  /** host:port the other processes use to reach this one's relay port, when not REMOTE_RELAY_HOST:<port> (behind NAT, 0.0.0.0) */
  REMOTE_RELAY_ADVERTISE: z.string().regex(/^[^\s/:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, "host:port").optional(),
  /** label keys whose values GET /api/v1/fleet/metrics counts devices by (comma-separated, at most 10) */
  FLEET_METRICS_LABEL_KEYS: z.string().default("")
    .transform((s) => s.split(",").map((k) => k.trim()).filter(Boolean))
    .refine((keys) => keys.length <= 10, "at most 10 label keys"),
  /** values per label key in GET /api/v1/fleet/metrics (the most common; the rest are counted as __other__) */
  FLEET_METRICS_MAX_LABEL_VALUES: int(1, 1000).default(50),
  /** devices at most in the per-device series of GET /api/v1/fleet/metrics?devices=<selector> */
  FLEET_METRICS_MAX_DEVICES: int(1, 10_000).default(200),
}).refine((c) => c.WORKERS === 1 || !c.METRICS_TOKEN || c.METRICS_PORT, {
  path: ["METRICS_PORT"],
  message: "required with METRICS_TOKEN when WORKERS > 1: each scrape of PORT would reach one worker; the primary serves all workers' metrics on METRICS_PORT",
}).refine((c) => c.WORKERS === 1 || c.DATABASE_URL, {
  path: ["WORKERS"],
  message: "more than one worker needs PostgreSQL (DATABASE_URL): the embedded database serves one process",
}).refine((c) => !c.OIDC_CLIENT_ID || c.OIDC_CLIENT_SECRET, {
  path: ["OIDC_CLIENT_SECRET"],
  message: "required with OIDC_CLIENT_ID (the console signs in as a confidential client)",
}).refine((c) => !c.OIDC_CLIENT_SECRET || c.OIDC_CLIENT_ID, {
  path: ["OIDC_CLIENT_ID"],
  message: "required with OIDC_CLIENT_SECRET",
}).refine((c) => !c.OIDC_CLIENT_ID || c.OIDC_ISSUER, {
  path: ["OIDC_ISSUER"],
  message: "required with OIDC_CLIENT_ID: the provider's issuer, whose discovery document names its endpoints",
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
