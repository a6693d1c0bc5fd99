// `npm run db:move -- --to postgresql://... [--data-dir DIR]`: moves the embedded database of
// DATA_DIR (stop the service first) into an empty PostgreSQL database, in one transaction
// (src/db/move.ts), and prints each table's row count. Then start the service with
// DATABASE_URL and the same keys (docs/operations.md).
import path from "node:path";
import { parseArgs } from "node:util";
import { openPostgres } from "../src/db/adapters.js";
import { applyMigrations } from "../src/db/migrate.js";
import { moveToPostgres } from "../src/db/move.js";
import { dataDirFrom, hasDatabase, megabytes, openHeld, runCommand } from "../src/db/embedded.js";

const USAGE = "usage: npm run db:move -- --to postgresql://user:password@host:5432/fleet [--data-dir ./data]";

runCommand(USAGE, async () => {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { to: { type: "string" }, "data-dir": { type: "string" }, help: { type: "boolean" } }, strict: true });
  if (values.help || !values.to) throw new Error(USAGE);
  if (!/^postgres(ql)?:\/\//.test(values.to)) throw new Error("--to: a PostgreSQL connection string, postgresql://...");
  const dataDir = dataDirFrom(values["data-dir"]);
  if (!hasDatabase(dataDir)) throw new Error(`no embedded database in ${path.resolve(dataDir)} (its pgdata folder is missing or empty)`);
  const source = await openHeld(dataDir);
  const target = openPostgres(values.to, 1);
  try {
    const applied = await applyMigrations(source.opened.raw); // what the next start would apply
    if (applied.length) console.log(`source: applied ${applied.length} pending migrations first`);
    const report = await target.raw.session((connection) => moveToPostgres(source.opened.raw, connection, (line) => console.log(line)));
    const width = Math.max(...report.tables.map((t) => t.table.length));
    console.log("\nrows per table (source = target):");
    for (const t of report.tables) console.log(`  ${t.table.padEnd(width)}  ${String(t.rows).padStart(9)}`);
    const total = report.tables.reduce((n, t) => n + t.rows, 0);
    console.log(`\nmoved ${report.tables.length} tables, ${total} rows (${megabytes(report.bytes)} as JSON), ${report.partitionsCreated} partitions, ${report.sequences} sequences in ${report.ms} ms; committed`);
    console.log(`next: start with DATABASE_URL set, the same DATA_DIR (its encryption.key and jwt.key) or the same ENCRYPTION_KEY and JWT_SECRET`);
  } finally {
    await target.raw.close();
    await source.close();
  }
});
