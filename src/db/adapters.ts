// Driver adapters for Prisma's client engine: PGlite (embedded, in-process PostgreSQL) by
// default, node-postgres when DATABASE_URL is set. Both also expose a raw `exec` used by the
// migrator, which must run before Prisma touches the schema. The Prisma CLI's adapter, with
// its upstream workarounds, is src/db/prisma-cli-adapter.ts.
import fs from "node:fs";
import path from "node:path";
import { PGlite, type PGliteOptions } from "@electric-sql/pglite";
import { PrismaPGlite } from "pglite-prisma-adapter";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import type { SqlMigrationAwareDriverAdapterFactory } from "@prisma/driver-adapter-utils";
import { preparedQueries, prismaPGlite } from "./pglite-statements.js";

export interface RawDatabase {
  kind: "pglite" | "postgres";
  /** run one or more statements without parameters */
  exec(sql: string): Promise<void>;
  /**
   * `prepared`: a name for a statement run very often with the same text (the heartbeat's):
   * on PostgreSQL it is parsed once per connection and, after a few runs, planned once (a
   * generic plan), instead of both on every run; on PGlite, once per instance (pglite-statements.ts).
   */
  query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: { prepared?: string }): Promise<T[]>;
  /**
   * Runs `work` on one connection: what is session state in PostgreSQL (an advisory lock, an
   * open transaction after a failed statement) must meet its release on the same connection,
   * which a pool does not promise from one query to the next. PGlite has only one.
   */
  session<T>(work: (db: RawDatabase) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface OpenedDatabase {
  raw: RawDatabase;
  adapter: SqlMigrationAwareDriverAdapterFactory;
  /** the PGlite instance when embedded (tests dump and reload it) */
  pglite?: PGlite;
  pool?: pg.Pool;
}

export function openPostgres(url: string, poolSize = 10): OpenedDatabase {
  const pool = new pg.Pool({ connectionString: url, max: poolSize });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on("error", () => undefined);
  const on = (client: pg.Pool | pg.PoolClient): Omit<RawDatabase, "close"> => ({
    kind: "postgres",
    exec: async (sql) => {
      await client.query(sql);
    },
    query: async (sql, params, options) =>
      (options?.prepared ? await client.query({ name: options.prepared, text: sql, values: params as unknown[] }) : await client.query(sql, params as unknown[])).rows,
    session: async (work) => {
      if (client !== pool) return work({ ...on(client), close: async () => undefined });
      const connection = await pool.connect();
      let broken: Error | undefined;
      try {
        return await work({ ...on(connection), close: async () => undefined });
      } catch (err) {
        broken = err as Error; // a connection left mid-transaction must not go back to the pool
        throw err;
      } finally {
        connection.release(broken);
      }
    },
  });
  const raw: RawDatabase = { ...on(pool), close: () => pool.end() };
  return { raw, adapter: new PrismaPg(pool), pool };
}

/**
 * PGlite's own start parameters, and a smaller buffer pool: PostgreSQL's default 128 MB of
 * shared buffers live inside PGlite's WebAssembly memory, are written through at start and are
 * never given back, so they were resident whatever the database's size. 32 MB held ~100 MB less
 * than 128 (376 -> 272 MB resident in a bare PGlite process after the same queries, as fast);
 * 16 MB holds 20-40 MB less again with 100 devices heartbeating, and the heartbeat benchmark
 * of 1,000 devices was no slower (docs/benchmarks.md). A page that is not in the pool is read
 * from the operating system's page cache, which keeps the files either way.
 */
const PGLITE_START_PARAMS = [...(PGlite as unknown as { defaultStartParams: string[] }).defaultStartParams, "-c", "shared_buffers=16MB"];

/** `dataDir` undefined = in memory (tests). `loadDataDir` restores a dump made after migrations. */
export async function openPGlite(dataDir?: string, loadDataDir?: Blob): Promise<OpenedDatabase> {
  if (dataDir) fs.mkdirSync(path.resolve(dataDir), { recursive: true });
  const options: PGliteOptions = { startParams: PGLITE_START_PARAMS, ...(loadDataDir ? { loadDataDir } : {}) };
  const pglite = dataDir ? new PGlite(path.resolve(dataDir, "pgdata"), options) : new PGlite(options);
  await pglite.waitReady;
  const prepared = preparedQueries(pglite);
  const raw: RawDatabase = {
    kind: "pglite",
    exec: async (sql) => {
      await pglite.exec(sql);
    },
    query: async (sql, params, options) =>
      options?.prepared ? prepared(options.prepared, sql, params ?? []) : ((await pglite.query(sql, params as unknown[])).rows as any[]),
    session: (work) => work(raw),
    close: () => pglite.close(),
  };
  // pglite-prisma-adapter 0.6 is typed against an older @prisma/driver-adapter-utils; the
  // runtime protocol is the same (the test suite runs every query through it). It is given
  // `prismaPGlite`, which spares every Prisma query a copy of PGlite's parser table.
  const adapter = new PrismaPGlite(prismaPGlite(pglite) as PGlite) as unknown as SqlMigrationAwareDriverAdapterFactory;
  return { raw, adapter, pglite };
}
