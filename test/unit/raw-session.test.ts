// RawDatabase.session pins one PostgreSQL connection: session state (an advisory lock, a
// transaction left open by a failed statement) meets its release on the connection that holds
// it, however busy the pool is. applyMigrations runs inside one (src/db/migrate.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openPostgres, type OpenedDatabase } from "../../src/db/adapters.js";
import { applyMigrations } from "../../src/db/migrate.js";
import { newPostgresDatabase } from "../support/harness.js";

const url = process.env.DATABASE_URL;

describe.skipIf(!url)("RawDatabase.session on PostgreSQL (skipped without DATABASE_URL)", () => {
  let db: OpenedDatabase;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    const fresh = await newPostgresDatabase(url!); // empty: the migrations below apply for real
    drop = fresh.drop;
    db = openPostgres(fresh.url.toString(), 3);
  });
  afterAll(async () => {
    await db.raw.close();
    await drop();
  });

  const backend = async (raw: OpenedDatabase["raw"]) => (await raw.query<{ pid: number }>("SELECT pg_backend_pid() AS pid"))[0].pid;

  it("keeps every statement of a session on one backend while the pool serves others", async () => {
    const pids = await db.raw.session(async (connection) => {
      const seen: number[] = [];
      for (let i = 0; i < 5; i += 1) {
        // Other work on the pool meanwhile: a plain pool would hand these statements around.
        const others = Array.from({ length: 4 }, () => db.raw.query("SELECT pg_sleep(0.02)"));
        seen.push(await backend(connection));
        await Promise.all(others);
      }
      return seen;
    });
    expect(new Set(pids).size).toBe(1);
  });

  it("does not return a connection left inside a failed transaction to the pool", async () => {
    await expect(db.raw.session(async (connection) => {
      await connection.exec("BEGIN; SELECT 1/0;");
    })).rejects.toThrow(/division by zero/);
    // Every connection the pool hands out afterwards is usable (none is 'in failed transaction').
    const states = await Promise.all(Array.from({ length: 3 }, () => db.raw.query<{ ok: number }>("SELECT 1 AS ok")));
    expect(states.map((rows) => rows[0].ok)).toEqual([1, 1, 1]);
  });

  it("applies the migrations on one connection and releases the migration lock afterwards", async () => {
    expect((await applyMigrations(db.raw)).length).toBeGreaterThan(20);
    const locks = await db.raw.query<{ n: string }>(
      "SELECT count(*)::text AS n FROM pg_locks WHERE locktype = 'advisory' AND objid = 72707369 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    );
    expect(locks[0].n).toBe("0");
  });
});
