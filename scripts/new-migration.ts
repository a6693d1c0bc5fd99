// Writes a new migration: the SQL that brings a database holding every existing migration
// to the current prisma/schema. `prisma migrate dev` would need a shadow database server;
// a throwaway PGlite directory, introspected back into a schema, does the same job offline.
//   npm run db:migration -- <name>    write prisma/migrations/<timestamp>_<name>/migration.sql
//   npm run db:migration -- --check   exit 1 when the schema has changes no migration holds
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openPGlite } from "../src/db/adapters.js";
import { applyMigrations, MIGRATIONS_DIR } from "../src/db/migrate.js";
import { takeDirLock } from "./dir-lock.js";

const arg = process.argv[2];
if (!arg) {
  console.error("usage: npm run db:migration -- <name> | --check");
  process.exit(2);
}

/**
 * Runs the Prisma CLI until `isDone` says its work is complete. Through the PGlite driver
 * adapter the CLI finishes its work but then never exits, so the process is stopped here.
 */
function runPrismaUntil(args: string[], dataDir: string, isDone: (log: string) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["node_modules/prisma/build/index.js", ...args], {
      env: { ...process.env, DATABASE_URL: "", DATA_DIR: dataDir, CHECKPOINT_DISABLE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    child.stdout.on("data", (c) => (log += c));
    child.stderr.on("data", (c) => (log += c));
    const deadline = Date.now() + 120_000;
    const stop = (err?: Error) => {
      clearInterval(poll);
      child.kill("SIGKILL");
      err ? reject(err) : resolve();
    };
    const poll = setInterval(() => {
      if (isDone(log)) setTimeout(() => stop(), 300);
      else if (Date.now() > deadline) stop(new Error(`prisma ${args[0]} timed out:\n${log}`));
    }, 100);
    child.on("exit", (code) => (code ? stop(new Error(`prisma ${args.join(" ")} failed:\n${log}`)) : stop()));
  });
}

// Several people (or agents) may generate migrations in one checkout: one at a time
// (scripts/dir-lock.ts: a lock left by a killed run is taken over).
const releaseLock = await takeDirLock(path.join(os.tmpdir(), "fleet-migration.lock"), 300_000);
process.on("exit", releaseLock);

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-migration-"));
try {
  const dataDir = path.join(scratch, "db");
  const db = await openPGlite(dataDir);
  const applied = await applyMigrations(db.raw);
  await db.raw.close();

  let from = ["--from-empty"];
  if (applied.length > 0) {
    const current = path.join(scratch, "current.prisma");
    fs.copyFileSync("prisma/schema/base.prisma", current);
    await runPrismaUntil(["db", "pull", "--schema", current], dataDir, (log) => /Introspected \d+ model/.test(log));
    from = ["--from-schema-datamodel", current];
  }
  const sqlFile = path.join(scratch, "diff.sql");
  await runPrismaUntil(
    ["migrate", "diff", ...from, "--to-schema-datamodel", "prisma/schema", "--script", "--output", sqlFile],
    dataDir,
    () => fs.existsSync(sqlFile) && fs.statSync(sqlFile).size > 0,
  );
  const sql = fs.readFileSync(sqlFile, "utf8");
  const empty = !/^\s*[A-Z]/m.test(sql.replace(/^--.*$/gm, ""));
  if (arg === "--check") {
    if (!empty) {
      console.error("prisma/schema has changes that no migration holds:\n" + sql);
      process.exit(1);
    }
    console.log("migrations match the schema");
  } else if (empty) {
    console.log("nothing to migrate: the schema matches the migrations");
  } else {
    const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
    const dir = path.join(MIGRATIONS_DIR, `${stamp}_${arg.replace(/[^a-z0-9_]/gi, "_")}`);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, "migration.sql"), sql);
    console.log(`wrote ${path.relative(process.cwd(), dir)}/migration.sql`);
  }
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
