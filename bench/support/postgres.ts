// A throwaway PostgreSQL for benchmarks: initdb into a temporary directory, start it on a
// free loopback port, drop everything on stop. Null when no PostgreSQL binaries are
// installed (the benchmark then reports PGlite only). BENCH_DATABASE_URL overrides it.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { openPostgres, type OpenedDatabase } from "../../src/db/adapters.js";
import { applyMigrations } from "../../src/db/migrate.js";

export interface ThrowawayPostgres {
  url: string;
  version: string;
  stop(): void;
}

function findBin(): string | null {
  const root = "/usr/lib/postgresql";
  if (!fs.existsSync(root)) return null;
  const versions = fs.readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (fs.existsSync(path.join(root, v, "bin", "initdb"))) return path.join(root, v, "bin");
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

export async function startThrowawayPostgres(): Promise<ThrowawayPostgres | null> {
  const bin = findBin();
  if (!bin) return null;
  const asRoot = process.getuid?.() === 0;
  // PostgreSQL refuses to run as root: run it as its own account then.
  const run = (cmd: string, args: string[]) => {
    const full = path.join(bin, cmd);
    const result = asRoot
      ? spawnSync("runuser", ["-u", "postgres", "--", full, ...args], { encoding: "utf8" })
      : spawnSync(full, args, { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${cmd} failed: ${result.stderr || result.stdout}`);
    return result.stdout;
  };
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-bench-pg-"));
  const data = path.join(work, "data");
  fs.mkdirSync(data);
  if (asRoot) {
    execFileSync("chown", ["-R", "postgres", work]);
    fs.chmodSync(work, 0o755);
  }
  const port = await freePort();
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"]);
  run("pg_ctl", ["-D", data, "-o", `-c listen_addresses=127.0.0.1 -p ${port} -k ${work} -c max_connections=200`, "-l", path.join(work, "pg.log"), "-w", "start"]);
  const version = run("postgres", ["--version"]).trim();
  return {
    url: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    version,
    stop: () => {
      try {
        run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
      } finally {
        fs.rmSync(work, { recursive: true, force: true });
      }
    },
  };
}

/**
 * Runs a benchmark on PGlite and/or PostgreSQL (`BENCH_DB`: both | pglite | postgres): the
 * throwaway server, or BENCH_DATABASE_URL; PostgreSQL is skipped, with a line saying so, when
 * neither is available. `run` gets the label to print and the URL (none for PGlite).
 */
export async function onEachDatabase<T>(run: (label: string, url?: string) => Promise<T>): Promise<T[]> {
  const which = process.env.BENCH_DB ?? "both";
  const results: T[] = [];
  if (which !== "postgres") results.push(await run("PGlite (embedded)"));
  if (which === "pglite") return results;
  const external = process.env.BENCH_DATABASE_URL;
  const throwaway = external ? null : await startThrowawayPostgres();
  if (!external && !throwaway) {
    console.log("\n== PostgreSQL: skipped (no binaries under /usr/lib/postgresql; set BENCH_DATABASE_URL to use a server)");
    return results;
  }
  if (throwaway) {
    try {
      results.push(await run(`PostgreSQL (${throwaway.version}, throwaway, default settings)`, throwaway.url));
    } finally {
      throwaway.stop();
    }
    return results;
  }
  // On a server of one's own: a database of this run's own, dropped afterwards. The service
  // seals a check of its encryption key into the database at its first start, and each run
  // makes a new key: a second run on the same database would be refused at start.
  const admin = new pg.Client({ connectionString: external });
  await admin.connect();
  const name = `bench_${process.pid}_${Date.now()}`;
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(external!);
  url.pathname = `/${name}`;
  try {
    results.push(await run("PostgreSQL (BENCH_DATABASE_URL, a database of this run)", url.toString()));
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
  return results;
}

/**
 * A fresh, migrated PostgreSQL database for one benchmark (on BENCH_DATABASE_URL, or a
 * throwaway server), dropped afterwards. `run` gets the opened database and its URL. Prints
 * one line and returns when there is no PostgreSQL.
 */
export async function withMigratedPostgres(prefix: string, poolSize: number, run: (db: OpenedDatabase, url: string) => Promise<void>): Promise<void> {
  const throwaway = process.env.BENCH_DATABASE_URL ? null : await startThrowawayPostgres();
  const baseUrl = process.env.BENCH_DATABASE_URL ?? throwaway?.url;
  if (!baseUrl) {
    console.log("no PostgreSQL (neither BENCH_DATABASE_URL nor PostgreSQL binaries): skipped");
    return;
  }
  const name = `${prefix}_${process.pid}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  const db = openPostgres(url.toString(), poolSize);
  try {
    await applyMigrations(db.raw);
    await run(db, url.toString());
  } finally {
    await db.raw.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name}`).catch(() => undefined);
    await admin.end();
    throwaway?.stop();
  }
}
