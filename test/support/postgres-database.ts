// A throwaway database on the PostgreSQL server of the run (DATABASE_URL): for the in-process
// harness (harness.ts), the service processes (server-process.ts) and the tests that need an
// empty one.
import crypto from "node:crypto";
import pg from "pg";

/**
 * A database of its own on the PostgreSQL at `url`: a copy of `template`, or empty (not even
 * migrated) without one. `drop` removes it.
 */
export async function newPostgresDatabase(url: string, template?: string): Promise<{ url: URL; drop: () => Promise<void> }> {
  const name = `fleet_test_${crypto.randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}${template ? ` TEMPLATE ${template}` : ""}`);
  const dbUrl = new URL(url);
  dbUrl.pathname = `/${name}`;
  return {
    url: dbUrl,
    drop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}
