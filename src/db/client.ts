// The Prisma client over whichever database the configuration names.
import { PrismaClient } from "../generated/prisma/client.js";
import type { Config } from "../config.js";
import { openPGlite, openPostgres, type OpenedDatabase } from "./adapters.js";
import { applyMigrations } from "./migrate.js";

export type Db = PrismaClient;
/** The client or an interactive transaction of it: what services receive. */
export type DbTx = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

export interface Database {
  prisma: PrismaClient;
  opened: OpenedDatabase;
  close(): Promise<void>;
}

export function createPrisma(opened: OpenedDatabase): PrismaClient {
  return new PrismaClient({
    adapter: opened.adapter,
    // PGlite serializes everything on one connection; generous limits avoid spurious
    // timeouts under load while transactions themselves stay short.
    transactionOptions: { maxWait: 10_000, timeout: 30_000 },
  });
}

/** `instrument` may wrap the driver (tracing) once migrations are applied, before the client is made. */
export async function openDatabase(
  config: Pick<Config, "DATABASE_URL" | "DATA_DIR" | "DATABASE_POOL_SIZE">, instrument?: (opened: OpenedDatabase) => void,
): Promise<Database> {
  let opened = config.DATABASE_URL
    ? openPostgres(config.DATABASE_URL, config.DATABASE_POOL_SIZE)
    : await openPGlite(config.DATA_DIR);
  const applied = await applyMigrations(opened.raw);
  if (opened.pglite && applied.length > 0) {
    // PGlite's WebAssembly memory grows while migrations run and is never given back; a new
    // instance on the same files starts small again. A first start does not come here (`npm
    // start` creates the database in a child process, src/db/first-start-migration.ts); an
    // upgrade that brings new migrations does. Measured after all 49 migrations in-process and 60 s
    // idle: 821 MB resident without this reopen, 376 MB with it (a restart: 276 MB); part of
    // the old instance's pages stay with the allocator.
    await opened.raw.close();
    opened = await openPGlite(config.DATA_DIR);
  }
  instrument?.(opened);
  const prisma = createPrisma(opened);
  return {
    prisma,
    opened,
    close: async () => {
      await prisma.$disconnect();
      await opened.raw.close();
    },
  };
}
