// Hot reads on the database driver itself, past Prisma's client engine.
//
// Why: Prisma 6's client engine compiles every query into a plan in WebAssembly on the event
// loop and has no plan cache (Prisma 7.4 adds one); for a one-row read by id that compile and
// the engine's bookkeeping cost more than everything else the request does. Measured on
// GET /api/v1/devices/{id} (bench/management-read.ts, PostgreSQL, one client): 2.9 ms through
// `prisma.device.findFirst`, 1.5 ms on the driver; with 50 concurrent clients 420-580 reads/s
// became 1,170-1,580 (docs/benchmarks.md). Writes and anything inside a transaction stay on
// Prisma; this is for reads served at high rates that need no transaction.
//
// The SQL is a `Prisma.sql` template like every other raw query of the codebase, so values
// stay bind parameters. Select timestamps through `utcTimestamp` (or `AT TIME ZONE 'UTC'`):
// Prisma keeps DateTime in `timestamp(3)` columns as UTC, and both drivers would read a bare
// `timestamp` in the process's own time zone.
import { Prisma } from "../generated/prisma/client.js";
import type { RawDatabase } from "./adapters.js";

export async function driverRows<T>(raw: RawDatabase, sql: Prisma.Sql): Promise<T[]> {
  return raw.query<T>(sql.text, sql.values);
}

/** `alias."column"` read as the UTC instant it stores, under its own name. */
export function utcTimestamp(alias: string, column: string): string {
  return `(${alias}."${column}" AT TIME ZONE 'UTC') AS "${column}"`;
}
