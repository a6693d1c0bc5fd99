// The settings every benchmark starts the service with: like `npm start` in production mode,
// quiet logs (request logging would be part of what is measured), no background jobs, and
// rate limits off unless BENCH_RATE_LIMITS=1, which runs every limiter (its cost measured)
// with budgets no benchmark reaches. A benchmark that drives one device or one key far past
// any real budget (telemetry ingest) would otherwise measure 429s. BENCH_JOBS=1 runs the job
// runner (retention, partitions, rollups) for a benchmark that measures with it running.
export function benchServiceEnv(opts: { dataDir: string; adminKey: string; databaseUrl?: string }): Record<string, string> {
  const budget = process.env.BENCH_RATE_LIMITS === "1" ? "10000000" : "0";
  return {
    NODE_ENV: "production",
    PORT: "0",
    HOST: "127.0.0.1",
    DATA_DIR: opts.dataDir,
    ...(opts.databaseUrl ? { DATABASE_URL: opts.databaseUrl, DATABASE_POOL_SIZE: "20" } : {}),
    LOG_LEVEL: "warn",
    BOOTSTRAP_ADMIN_PASSWORD: "bench-password-123",
    BOOTSTRAP_API_KEY: opts.adminKey,
    RATE_LIMIT_PER_SOURCE: budget,
    RATE_LIMIT_PER_CREDENTIAL: budget,
    RATE_LIMIT_PER_DEVICE: budget,
    JOBS_ENABLED: process.env.BENCH_JOBS === "1" ? "true" : "false",
    // the service's Prometheus metrics on (bench/metrics-cost.ts): counted, and /metrics behind this token
    ...(process.env.BENCH_METRICS_TOKEN ? { METRICS_TOKEN: process.env.BENCH_METRICS_TOKEN } : {}),
    // settings of one benchmark's own (bench/fleet-day.ts: the heartbeat interval its devices keep, the alert evaluation period), as JSON
    ...(JSON.parse(process.env.BENCH_SERVICE_ENV ?? "{}") as Record<string, string>),
  };
}
