// `npm run db:restore -- --from FILE [--data-dir DIR]`: loads a dump written by db:backup into
// an empty DATA_DIR (never over an existing database). The service then starts on it with the
// keys of the installation the dump came from (docs/operations.md); with another
// ENCRYPTION_KEY it refuses to start and says so.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { dataDirFrom, hasDatabase, megabytes, openHeld, runCommand } from "../src/db/embedded.js";

const USAGE = "usage: npm run db:restore -- --from fleet-backup.tar.gz [--data-dir ./data]";

runCommand(USAGE, async () => {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { from: { type: "string" }, "data-dir": { type: "string" }, help: { type: "boolean" } }, strict: true });
  if (values.help || !values.from) throw new Error(USAGE);
  if (process.env.DATABASE_URL) throw new Error("DATABASE_URL is set: restore a PostgreSQL installation with pg_restore (docs/operations.md). db:restore is for the embedded database.");
  const dataDir = dataDirFrom(values["data-dir"]);
  if (!fs.existsSync(values.from)) throw new Error(`--from: no such file: ${values.from}`);
  if (hasDatabase(dataDir)) throw new Error(`${path.resolve(dataDir)} already holds a database (pgdata): restore into an empty DATA_DIR, or move that one aside first; nothing was changed`);
  const started = Date.now();
  const dump = fs.readFileSync(values.from);
  const db = await openHeld(dataDir, new Blob([dump]));
  try {
    const [row] = await db.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "_prisma_migrations"`);
    console.log(`restored ${values.from} (${megabytes(dump.length)}) into ${path.resolve(dataDir)} in ${Date.now() - started} ms: ${row.n} migrations`);
  } finally {
    await db.close();
  }
  const keyFile = path.resolve(dataDir, "encryption.key");
  if (!process.env.ENCRYPTION_KEY && !fs.existsSync(keyFile)) {
    console.log(`no ENCRYPTION_KEY and no ${keyFile}: copy the original installation's encryption.key (and jwt.key) there, or set ENCRYPTION_KEY, before npm start`);
  }
});
