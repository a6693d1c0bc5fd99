// The service under test, in its own process: started like `npm start` (quiet logs, no rate
// limits, no background jobs), optionally with BENCH_FLEET devices bulk-inserted into the
// default organization by one INSERT ... SELECT. Prints `READY {json}`; stops on SIGTERM.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../src/config.js";
import { createLogger } from "../../src/lib/logger.js";
import { startService } from "../../src/server.js";
import { benchServiceEnv } from "./service-env.js";
import { heartbeatWriterOf } from "../../src/modules/agent/heartbeat.js";
import { seedExpiredDay, storedCounts } from "./stored-counts.js";
import { answerCommands } from "./commands.js";
import { readJsonLines, seedIdentities, writeJsonLines, type SeedRequest } from "./seed-identities.js";

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-"));
const config = loadConfig(benchServiceEnv({ dataDir, adminKey: process.env.BENCH_ADMIN_KEY!, databaseUrl: process.env.BENCH_DATABASE }));
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

// BENCH_OLD_DAY_ROWS=<n>: a day of snapshots and as many log lines two days past their
// retention, for the retention job to drop while a benchmark runs (bench/fleet-day.ts).
const oldDay = Number(process.env.BENCH_OLD_DAY_ROWS ?? 0) > 0
  ? await seedExpiredDay(raw, Number(process.env.BENCH_OLD_DAY_ROWS), { telemetryDays: config.TELEMETRY_RETENTION_DAYS, logDays: config.LOG_RETENTION_DAYS })
  : null;

// BENCH_PROFILE=<dir>: SIGUSR2 starts a CPU profile, the next SIGUSR2 writes it there
// (bench/support/profile-summary.ts prints where the time went), so that only the measured
// phase is profiled, not start-up or enrollment.
if (process.env.BENCH_PROFILE) {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  let running = false;
  process.on("SIGUSR2", () => {
    void (async () => {
      if (!running) {
        running = true;
        await session.post("Profiler.enable");
        await session.post("Profiler.setSamplingInterval", { interval: 200 });
        await session.post("Profiler.start");
        return;
      }
      running = false;
      const { profile } = await session.post("Profiler.stop");
      fs.mkdirSync(process.env.BENCH_PROFILE!, { recursive: true });
      const file = path.join(process.env.BENCH_PROFILE!, `service-${Date.now()}.cpuprofile`);
      fs.writeFileSync(file, JSON.stringify(profile));
      process.stderr.write(`profile written to ${file}\n`);
    })();
  });
}

// Commands on stdin (bench/support/child.ts `command`), each answered by `DONE {json}`:
// `path facade` serves POST /api/v1/agent/heartbeat through the REST facade (trpc-to-openapi)
// with one statement per heartbeat, as before the front door, the lean route and the group
// commit existed; `path lean` restores the three; `stats` reports the writer's rows
// and statements, the process's memory (`memory`: process.memoryUsage(); `gc` runs a full collection
// first) and its CPU time so far (`cpu`: process.cpuUsage(), µs), so that a
// benchmark can report the service's CPU per request, which other load on a shared machine
// disturbs far less than throughput; `counts <ISO instant>` reports what the database holds
// (bench/support/stored-counts.ts) with the same CPU and memory.
const writer = heartbeatWriterOf(service.services);
const defaults = { ...writer.options };
type Handle = ((...args: unknown[]) => void) & { ordinary?: Handle };
const app = service.server.listeners("request")[0] as unknown as { handle: Handle; router: { stack: { route?: { path?: string } }[] } };
// the front door (in front of the app's router, src/http/front-door.ts) goes out with the lean route
const frontHandle = app.handle;
const stack = app.router.stack;
const leanIndex = stack.findIndex((layer) => layer.route?.path === "/api/v1/agent/heartbeat");
const leanLayer = stack[leanIndex];
answerCommands(async (line) => {
  // `seed-identities <organization id> <requests file> <answers file>`: devices with real keys and
  // certificates inserted in bulk (bench/support/seed-identities.ts), the answers for the load generator
  if (line.startsWith("seed-identities ")) {
    const [organizationId, requests, answers] = line.split(" ").slice(1);
    const started = performance.now();
    const seeded = await seedIdentities(service.services, organizationId, readJsonLines<SeedRequest>(requests), config.DEVICE_CERT_VALIDITY_DAYS);
    writeJsonLines(answers, seeded);
    return { seeded: seeded.length, seconds: (performance.now() - started) / 1000, cpu: process.cpuUsage(), memory: process.memoryUsage() };
  }
  // `counts <ISO instant>`: what the database holds since then (bench/support/stored-counts.ts), and its size
  if (line.startsWith("counts ")) {
    const counts = await storedCounts(raw, line.slice(7), { dataDir, postgres: Boolean(config.DATABASE_URL), oldDay });
    return { ...counts, cpu: process.cpuUsage(), memory: process.memoryUsage() };
  }
  // `gc`: a full collection first (the service started with --expose-gc), so that a benchmark reads the resident memory live objects hold, not garbage
  if (line === "gc") (globalThis as { gc?: () => void }).gc?.();
  const lean = () => stack[leanIndex] === leanLayer;
  if (leanIndex >= 0 && line === "path facade" && lean()) {
    stack.splice(leanIndex, 1);
    app.handle = frontHandle.ordinary ?? frontHandle;
    writer.options = { maxInFlight: 1000, maxBatch: 1 };
  } else if (leanIndex >= 0 && line === "path lean" && !lean()) {
    stack.splice(leanIndex, 0, leanLayer);
    app.handle = frontHandle;
    writer.options = { ...defaults };
  }
  return { ...writer.stats, lean: lean(), cpu: process.cpuUsage(), memory: process.memoryUsage() };
});

process.stdout.write(`READY ${JSON.stringify({ url: service.url, fleetSeconds, database: config.DATABASE_URL ? "postgresql" : "pglite" })}\n`);
process.on("SIGTERM", () => {
  void service.stop().finally(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  });
});
