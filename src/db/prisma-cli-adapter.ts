// The driver adapter the Prisma CLI (`prisma migrate deploy`, `migrate status`, `db pull`...)
// uses through prisma.config.ts. On PostgreSQL it is `@prisma/adapter-pg` with two upstream
// defects worked around; the server never uses this module (src/db/adapters.ts).
import { PrismaPg } from "@prisma/adapter-pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import pg from "pg";
import { openPGlite } from "./adapters.js";

/**
 * Work around prisma/prisma#27403: the JS schema engine cannot deserialize PostgreSQL
 * catalog columns of type `name` (oid 19). Reporting them as `text` (oid 25) is harmless
 * because both arrive as strings.
 */
class NameAsTextPool extends pg.Pool {
  override query(...args: unknown[]): any {
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result && typeof (result as Promise<unknown>).then === "function") {
      return (result as Promise<pg.QueryResult>).then((r) => {
        for (const field of r?.fields ?? []) if (field.dataTypeID === 19) field.dataTypeID = 25;
        return r;
      });
    }
    return result;
  }
}

type PgAdapter = Awaited<ReturnType<PrismaPg["connect"]>>;

/**
 * Work around `@prisma/adapter-pg` 6.19's `executeScript`, which splits a migration on every
 * `;` (in comments, string literals and `$$` function bodies too) and runs the pieces one by
 * one, each committed on its own. Here a migration script goes to PostgreSQL whole, as one
 * simple-protocol query on one connection, which is what Prisma's native engine does
 * (`simple_query(script)`): PostgreSQL parses it itself and runs it as one implicit
 * transaction, so a failing migration leaves nothing of itself behind. The schema engine
 * around it is unchanged: it records the migration as started in `_prisma_migrations`
 * before, and as finished, or as failed with the error in `logs`, after.
 */
function runScriptsWhole(adapter: PgAdapter): PgAdapter {
  const pool = adapter.underlyingDriver();
  // The adapter's own conversion of a pg error into what the engine reports.
  const reportError = (adapter as unknown as { onError(error: unknown): never }).onError.bind(adapter);
  adapter.executeScript = async (script: string) => {
    const client = await pool.connect().catch(reportError);
    try {
      // No parameters: node-postgres sends the text with the simple query protocol, which
      // takes any number of statements.
      await client.query(script);
    } catch (error) {
      // A script with its own BEGIN that failed before its COMMIT leaves the session in an
      // aborted transaction; end it before the connection goes back to the pool.
      await client.query("ROLLBACK").catch(() => undefined);
      reportError(error);
    } finally {
      client.release();
    }
  };
  return adapter;
}

class WholeScriptPg extends PrismaPg {
  override async connect() {
    return runScriptsWhole(await super.connect());
  }

  override async connectToShadowDb() {
    return runScriptsWhole(await super.connectToShadowDb());
  }
}

/** Used by prisma.config.ts: the CLI migrates the database the server would open. */
export async function openMigrationAdapter(env: NodeJS.ProcessEnv = process.env): Promise<SqlMigrationAwareDriverAdapterFactory> {
  if (!env.DATABASE_URL) return (await openPGlite(env.DATA_DIR || "./data")).adapter;
  // allowExitOnIdle: the CLI exits once its work is done instead of after the pool's idle
  // timeout (`migrate status` measured 13 s before, 5-6 s after, most of it loading the config).
  const pool = new NameAsTextPool({ connectionString: env.DATABASE_URL, max: 2, allowExitOnIdle: true });
  // An idle client losing its connection must not crash the CLI with an unhandled error.
  pool.on("error", () => undefined);
  return new WholeScriptPg(pool);
}
