// Applies prisma/migrations at start-up, in-process, for PGlite and PostgreSQL alike.
// The bookkeeping table is Prisma's own `_prisma_migrations` with the same checksums, so
// `prisma migrate status` and `prisma migrate deploy` agree with what ran here.
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { RawDatabase } from "./adapters.js";

export const MIGRATIONS_DIR = fileURLToPath(new URL("../../prisma/migrations", import.meta.url));

interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export function readMigrations(dir = MIGRATIONS_DIR): Migration[] {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(dir, d.name, "migration.sql")))
    .map((d) => d.name)
    .sort()
    .map((name) => {
      const sql = fs.readFileSync(path.join(dir, name, "migration.sql"), "utf8");
      return { name, sql, checksum: crypto.createHash("sha256").update(sql).digest("hex") };
    });
}

export const BOOKKEEPING = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
);`;

// Prisma Migrate's own advisory lock (`prisma migrate deploy` takes pg_advisory_lock(72707369)
// before it reads `_prisma_migrations`): a server starting while a pipeline runs the CLI waits
// for it, and the other way round, instead of both applying the same migration.
const MIGRATION_LOCK_ID = 72_707_369;

export class MigrationError extends Error {}

/** Returns the names of the migrations applied by this call. */
export async function applyMigrations(db: RawDatabase, migrations = readMigrations()): Promise<string[]> {
  // The lock, each migration's transaction and its ROLLBACK after a failure: one connection.
  return db.session((connection) => applyOnOneConnection(connection, migrations));
}

async function applyOnOneConnection(db: RawDatabase, migrations: Migration[]): Promise<string[]> {
  const applied: string[] = [];
  // Several server processes (and `prisma migrate deploy`) may start at once against one
  // PostgreSQL: one migrates, the others wait on the advisory lock and then find nothing left to do.
  if (db.kind === "postgres") await db.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_ID]);
  try {
    await db.exec(BOOKKEEPING);
    const rows = await db.query<{ migration_name: string; checksum: string; finished_at: unknown }>(
      `SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL`,
    );
    const done = new Map(rows.map((r) => [r.migration_name, r]));
    for (const m of migrations) {
      const row = done.get(m.name);
      if (row) {
        if (!row.finished_at) throw new MigrationError(`Migration ${m.name} failed earlier and must be resolved by hand`);
        if (row.checksum !== m.checksum) throw new MigrationError(`Migration ${m.name} was edited after it was applied`);
        continue;
      }
      // Each migration and its bookkeeping row commit together or not at all.
      await db.exec(
        `BEGIN;\n${m.sql}\n;INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
         VALUES ('${crypto.randomUUID()}', '${m.checksum}', now(), '${m.name.replace(/'/g, "''")}', 1);\nCOMMIT;`,
      ).catch(async (err: unknown) => {
        await db.exec("ROLLBACK").catch(() => undefined);
        throw new MigrationError(`Migration ${m.name} failed: ${(err as Error).message}`);
      });
      applied.push(m.name);
    }
  } finally {
    if (db.kind === "postgres") await db.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_ID]);
  }
  return applied;
}
