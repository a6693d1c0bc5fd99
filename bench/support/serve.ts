// The service under test, in its own process: started like `npm start` (quiet logs, no rate
// limits, no background jobs), optionally with BENCH_FLEET devices bulk-inserted into the
// default organization by one INSERT ... SELECT. Prints `READY {json}`; stops on SIGTERM.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/lib/logger.js";
import { startService } from "../../src/server.js";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-"));
const config = loadConfig({
  NODE_ENV: "production",
  PORT: "0",
  HOST: "127.0.0.1",
  DATA_DIR: dataDir,
  ...(process.env.BENCH_DATABASE ? { DATABASE_URL: process.env.BENCH_DATABASE, DATABASE_POOL_SIZE: "20" } : {}),
  // Request logging would be part of what is measured otherwise.
  LOG_LEVEL: "warn",
  BOOTSTRAP_ADMIN_PASSWORD: "bench-password-123",
  BOOTSTRAP_API_KEY: process.env.BENCH_ADMIN_KEY!,
  RATE_LIMIT_PER_SOURCE: "0",
  RATE_LIMIT_PER_CREDENTIAL: "0",
  JOBS_ENABLED: "false",
});
const service = await startService(config, createLogger("warn"));
const raw = service.services.database.opened.raw;

let fleetSeconds = 0;
const fleet = Number(process.env.BENCH_FLEET ?? 0);
if (fleet > 0) {
  const started = performance.now();
  const [org] = await raw.query<{ id: string }>(`SELECT "id" FROM "Organization" WHERE "slug" = 'default'`);
  // 20 sites, 3 tiers, 7 hardware models, 1 % in maintenance, mixed statuses.
  await raw.query(
    `INSERT INTO "Device" ("id", "organizationId", "name", "reportedDeviceId", "activeClaim", "status", "labels", "lastSeenAt", "createdAt", "updatedAt")
     SELECT gen_random_uuid(), $1::uuid, 'bench-' || i, 'bench-' || i, 'bench-' || i,
            (ARRAY['online','online','online','offline','error','pending','provisioned'])[1 + (i % 7)],
            jsonb_build_object('site', 'site-' || (i % 20), 'tier', (ARRAY['core','edge','lab'])[1 + (i % 3)], 'hw', 'hw-' || (i % 7))
              || CASE WHEN i % 100 = 0 THEN '{"maintenance":"yes"}'::jsonb ELSE '{}'::jsonb END,
            now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC'
       FROM generate_series(1, $2::int) i`,
    [org.id, fleet],
  );
  await raw.exec(`ANALYZE "Device"`);
  fleetSeconds = (performance.now() - started) / 1000;
}

process.stdout.write(`READY ${JSON.stringify({ url: service.url, fleetSeconds, database: config.DATABASE_URL ? "postgresql" : "pglite" })}\n`);
process.on("SIGTERM", () => {
  void service.stop().finally(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
