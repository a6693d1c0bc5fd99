// On a first start of the embedded database (DATA_DIR holds none yet), initdb and every
// migration run in a child process (src/migrate-main.ts) that exits before the service opens
// the database. PGlite's WebAssembly memory grows to ~800 MB while the migrations run and is
// never given back; reopening in-process (src/db/client.ts) frees only part of it. Measured in
// docs/benchmarks.md ("Start-up and idle memory of the production build").
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

/** The child's entry beside this process's own: the bundle's .js, or the source's .ts under tsx. */
function migrateEntry(): string {
  const own = import.meta.url;
  // In the bundle this module is inlined into dist/service/main.js, beside dist/service/migrate-main.js;
  // from the sources it is src/db/first-start-migration.ts, one folder below src/migrate-main.ts.
  if (own.endsWith(".ts")) return fileURLToPath(new URL("../migrate-main.ts", own));
  return fileURLToPath(new URL("./migrate-main.js", own));
}

export class FirstStartMigrationError extends Error {}

/** Creates and migrates the embedded database of `dataDir` in a child process; resolves to the number of migrations applied. */
export function migrateInChildProcess(dataDir: string): Promise<number> {
  return new Promise((resolve, reject) => {
    // execArgv carries tsx's loader when the service runs from its sources.
    const child = spawn(process.execPath, [...process.execArgv, migrateEntry()], {
      env: { ...process.env, FLEET_MIGRATE_DATA_DIR: dataDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (out += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (err += chunk));
    child.on("error", (e) => reject(new FirstStartMigrationError(`could not start the migration process: ${e.message}`)));
    child.on("close", (code, signal) => {
      if (code === 0) {
        const line = out.trim().split("\n").at(-1) ?? "";
        try {
          resolve((JSON.parse(line) as { applied: number }).applied);
        } catch {
          resolve(0);
        }
        return;
      }
      const why = err.trim().split("\n").filter(Boolean).at(-1) ?? `exit ${code ?? signal}`;
      reject(new FirstStartMigrationError(`creating the embedded database failed: ${why}`));
    });
  });
}
