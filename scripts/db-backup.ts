// `npm run db:backup -- [--out FILE] [--data-dir DIR]`: a consistent dump of the embedded
// database (PGlite) of DATA_DIR, a gzipped tar that `npm run db:restore` loads. While the
// service runs, the service writes it (it alone may open the database: src/db/backup.ts);
// otherwise this command opens the database itself. The keys are not in it: back them up
// apart (docs/operations.md). PostgreSQL: pg_dump.
import fs from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { dumpDatabase, requestDump } from "../src/db/backup.js";
import { dataDirFrom, hasDatabase, megabytes, openHeld, runCommand } from "../src/db/embedded.js";

const USAGE = "usage: npm run db:backup -- [--out fleet-backup.tar.gz] [--data-dir ./data]";

runCommand(USAGE, async () => {
  const { values } = parseArgs({ args: process.argv.slice(2), options: { out: { type: "string" }, "data-dir": { type: "string" }, help: { type: "boolean" } }, strict: true });
  if (values.help) throw new Error(USAGE);
  if (process.env.DATABASE_URL) {
    throw new Error("DATABASE_URL is set: this installation runs on PostgreSQL; back it up with pg_dump -Fc (docs/operations.md). db:backup is for the embedded database.");
  }
  const dataDir = dataDirFrom(values["data-dir"]);
  const out = path.resolve(values.out ?? `fleet-backup-${new Date().toISOString().replace(/[:.]/g, "-")}.tar.gz`);
  const started = Date.now();
  let dump: Buffer;
  let from: string;
  const online = await requestDump(dataDir);
  if (online) {
    dump = online.dump;
    from = "written by the running service";
  } else {
    if (!hasDatabase(dataDir)) throw new Error(`no embedded database in ${path.resolve(dataDir)} (its pgdata folder is missing or empty)`);
    const db = await openHeld(dataDir);
    try {
      dump = await dumpDatabase(db.opened.pglite!);
    } finally {
      await db.close();
    }
    from = "the service is not running: read directly";
  }
  const partial = `${out}.partial`;
  fs.writeFileSync(partial, dump, { mode: 0o600 });
  fs.renameSync(partial, out);
  console.log(`wrote ${out}: ${megabytes(dump.length)} in ${Date.now() - started} ms (${from})`);
  console.log("the keys are not in it: keep ENCRYPTION_KEY and JWT_SECRET (or DATA_DIR/encryption.key and DATA_DIR/jwt.key) apart from it");
});
