// The first start's migrations on the embedded database, in a process of their own
// (src/db/first-start-migration.ts starts it and waits for it). It creates DATA_DIR's database,
// applies every migration and exits: the WebAssembly memory PGlite grows to while migrating
// (~800 MB) goes with the process instead of staying resident in the service.
import { openPGlite } from "./db/adapters.js";
import { applyMigrations } from "./db/migrate.js";

const dataDir = process.env.FLEET_MIGRATE_DATA_DIR;
if (!dataDir) {
  console.error("FLEET_MIGRATE_DATA_DIR is not set (this program is started by the service on a first start)");
  process.exit(2);
}
try {
  const opened = await openPGlite(dataDir);
  const applied = await applyMigrations(opened.raw);
  await opened.raw.close();
  // One line the parent reads: how many migrations ran.
  process.stdout.write(JSON.stringify({ applied: applied.length }) + "\n");
  process.exit(0);
} catch (err) {
  // The message only: the parent logs it as the reason the start failed.
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
}
