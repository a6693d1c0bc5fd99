// `npm start`: configuration, database (migrations applied), bootstrap, listen. With
// WORKERS > 1 this process starts that many workers that each do so (src/cluster.ts).
import cluster from "node:cluster";
import { SHUTDOWN_MESSAGE, superviseWorkers } from "./cluster.js";
import { ConfigError, loadConfig } from "./config.js";
import { createLogger } from "./lib/logger.js";
import { buildConsoleInChildProcess, consoleBuildState } from "./lib/console-build.js";
import { startService } from "./server.js";
import { onStopSignals } from "./lib/stop-signals.js";
import { firstStartBlock, keepFirstStart } from "./first-start.js";
import { holdDataDir } from "./db/backup.js";
import { hasDatabase } from "./db/embedded.js";
import { migrateInChildProcess } from "./db/first-start-migration.js";
import { dropWritesToClosedOutput } from "./lib/closed-output.js";

async function main() {
  dropWritesToClosedOutput();
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const root = createLogger(config.LOG_LEVEL);
  // The console is built by npm install; a checkout updated since (git pull without a new
  // install) gets it built here, once, before any worker serves it.
  if (cluster.isPrimary) {
    const state = consoleBuildState();
    if (state === "missing" || state === "stale") {
      root.info({ console: state }, `building the web console first (its build is ${state === "missing" ? "missing" : "older than its sources"})`);
      await buildConsoleInChildProcess();
    }
  }
  if (config.WORKERS > 1 && cluster.isPrimary) return superviseWorkers(config, root);
  // Workers' lines say which worker wrote them.
  const logger = cluster.isWorker ? root.child({ pid: process.pid }) : root;
  const started = Date.now();
  const database = config.DATABASE_URL ? "postgresql" : `pglite:${config.DATA_DIR}`;
  // The first start on the embedded database creates it: say so before the wait.
  logger.info({ database }, "starting: opening the database and applying migrations");
  // The embedded database serves one process: hold DATA_DIR, and write dumps for db:backup (src/db/backup.ts).
  const hold = config.DATABASE_URL ? null : await holdDataDir(config.DATA_DIR, { onError: (err) => logger.error({ err }, "backups of the embedded database") });
  // A first start creates the embedded database in a child process that exits (its migrations'
  // memory goes with it); the service then opens a migrated database (src/db/first-start-migration.ts).
  if (hold && !hasDatabase(config.DATA_DIR)) {
    const migrating = Date.now();
    const applied = await migrateInChildProcess(config.DATA_DIR);
    logger.info({ migrations: applied, ms: Date.now() - migrating }, "created the embedded database");
  }
  const service = await startService(config, logger);
  if (hold && service.services.database.opened.pglite) hold.serve(service.services.database.opened.pglite);
  // Stop signals get the graceful stop from before "ready" is said: whoever waits for that line
  // (a test, a supervisor) may send one at once.
  const signals = onStopSignals((reason) => {
    logger.info({ signal: reason }, "shutting down");
    const stopping = Date.now();
    service.stop().then(() => hold?.close()).then(
      () => {
        logger.info({ ms: Date.now() - stopping }, "stopped");
        process.exit(0);
      },
      (err: Error) => {
        logger.error({ err: err.message }, "shutdown failed");
        process.exit(1);
      },
    );
  }, () => process.exit(1));
  // A worker (WORKERS > 1) is asked by its primary; after a signal it is already stopping.
  process.on("message", (message) => {
    if (message === SHUTDOWN_MESSAGE) signals.request("primary");
  });
  const where = `http://${config.HOST === "0.0.0.0" ? "localhost" : config.HOST}:${service.server.address() && typeof service.server.address() === "object" ? (service.server.address() as { port: number }).port : config.PORT}`;
  logger.info({ url: where, database, ms: Date.now() - started }, "ready");

  const b = service.bootstrapResult;
  if (b.created) {
    // Printed to the terminal (not through the structured log) and kept in DATA_DIR, mode 0600,
    // until the admin changes the password (src/first-start.ts): request logs cannot bury it.
    const facts = { where, adminEmail: b.adminEmail, generatedPassword: b.generatedPassword, generatedApiKey: b.generatedApiKey };
    const block = firstStartBlock(facts, true);
    let kept = "";
    let keptInFile = false;
    if (b.generatedPassword || b.generatedApiKey) {
      try {
        const file = keepFirstStart(config.DATA_DIR, block.join("\n"), b.adminUserId!);
        kept = `  kept in:       ${file}   (mode 0600; deleted when the admin changes the password)`;
        keptInFile = true;
      } catch (err) {
        kept = `  not kept:      ${(err as Error).message}; copy the password and the key now`;
      }
    }
    // Generated secrets go to a terminal only: without one, stdout is a log that outlives them
    // (journald under systemd, the engine's container log, a file), and the kept file holds them.
    const printed = keptInFile && !process.stdout.isTTY ? firstStartBlock(facts, false) : block;
    process.stdout.write(["", ...printed, ...(kept ? [kept] : []), "", ""].join("\n"));
  }
}

main().catch((err: Error) => {
  console.error(`fatal: ${err.message}`);
  process.exit(1);
});
