// Upgrading with the Prisma CLI, as a pipeline does before it rolls out a new version: the real
// `npx prisma migrate deploy` (a child process, through prisma.config.ts) on fresh PostgreSQL
// databases made here. It must migrate an empty database and one an older version migrated
// (with the CLI or with the server's own migrator) to exactly the schema the server's migrator
// builds, `prisma migrate status` must agree, a server started afterwards must find nothing to
// do and serve requests, and a migration that fails must be recorded as failed with nothing of
// it applied. The server's migrator waits on the CLI's advisory lock. PostgreSQL only: the
// CLI's PostgreSQL adapter is what is tested.
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { openPostgres } from "../../../src/db/adapters.js";
import { applyMigrations, MIGRATIONS_DIR, readMigrations } from "../../../src/db/migrate.js";
import { createEnrollmentToken, enroll, ensureCa } from "../agent/fleet-support.js";
import { eventually, startServerProcess } from "../scale-out/processes.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const PRISMA_CLI = path.join(ROOT, "node_modules", "prisma", "build", "index.js");
const MIGRATIONS = readMigrations();
/** An older version: the history before the first migration with `$$` function bodies. */
const OLDER = MIGRATIONS.findIndex((m) => m.name.endsWith("_device_label_counts"));
/** The number Prisma Migrate takes its advisory lock on (prisma-engines, postgres flavour). */
const PRISMA_MIGRATE_LOCK = 72707369;
const BOOTSTRAP_API_KEY = `fm_${"c".repeat(40)}`;

interface CliRun {
  code: number | null;
  output: string;
}

/**
 * `npx prisma <args>` from the repository, on `databaseUrl`; `config`: another prisma.config.ts.
 * The CLI's own entry point, run by node: what `npx prisma` runs, without npm's start-up each time.
 */
function prisma(args: string[], databaseUrl: string, config?: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PRISMA_CLI, ...args, ...(config ? ["--config", config] : [])], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? os.tmpdir(), DATABASE_URL: databaseUrl, CHECKPOINT_DISABLE: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c) => (output += c));
    child.stderr.on("data", (c) => (output += c));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    child.once("error", reject);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

/** where the older checkouts are written */
let scratch: string;

/**
 * The Prisma config of an older checkout: the repository's prisma.config.ts with a migrations
 * directory holding the first `count` migrations (and `extra` after them).
 */
function olderCheckout(count: number, extra: { name: string; sql: string }[] = []): string {
  const dir = fs.mkdtempSync(path.join(scratch, "checkout-"));
  const migrations = path.join(dir, "migrations");
  fs.mkdirSync(migrations);
  fs.copyFileSync(path.join(MIGRATIONS_DIR, "migration_lock.toml"), path.join(migrations, "migration_lock.toml"));
  for (const m of MIGRATIONS.slice(0, count)) fs.cpSync(path.join(MIGRATIONS_DIR, m.name), path.join(migrations, m.name), { recursive: true });
  for (const m of extra) {
    fs.mkdirSync(path.join(migrations, m.name));
    fs.writeFileSync(path.join(migrations, m.name, "migration.sql"), m.sql);
  }
  const config = path.join(dir, "prisma.config.ts");
  fs.writeFileSync(
    config,
    `import config from ${JSON.stringify(path.join(ROOT, "prisma.config.ts"))};
export default { ...config, schema: ${JSON.stringify(path.join(ROOT, "prisma/schema"))}, migrations: { path: ${JSON.stringify(migrations)} } };
`,
  );
  return config;
}

let admin: pg.Client;
const created: string[] = [];
const clients: pg.Client[] = [];

async function freshDatabase(): Promise<string> {
  const name = `fleet_cli_${crypto.randomBytes(6).toString("hex")}`;
  await admin.query(`CREATE DATABASE ${name}`);
  created.push(name);
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${name}`;
  return url.toString();
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  clients.push(client);
  return client;
}

interface MigrationRow {
  id: string;
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
  logs: string | null;
  applied_steps_count: number;
}

async function migrationRows(db: pg.Client): Promise<MigrationRow[]> {
  const { rows } = await db.query<MigrationRow>(
    `SELECT id, migration_name, checksum, finished_at, rolled_back_at, logs, applied_steps_count FROM "_prisma_migrations" ORDER BY migration_name`,
  );
  return rows;
}

/** The migrations a `migrate deploy` lists as applied by it. */
function appliedBy(run: CliRun): string[] {
  const list = run.output.split("The following migration(s) have been applied:")[1] ?? "";
  return [...list.matchAll(/└─ (\d{14}_\w+)\//g)].map((m) => m[1]);
}

/** Every migration of the repository recorded as applied, with the checksum of its file. */
function expectAllApplied(rows: MigrationRow[]) {
  expect(rows.map((r) => ({ name: r.migration_name, checksum: r.checksum, finished: r.finished_at !== null, rolledBack: r.rolled_back_at, steps: r.applied_steps_count })))
    .toEqual(MIGRATIONS.map((m) => ({ name: m.name, checksum: m.checksum, finished: true, rolledBack: null, steps: 1 })));
}

/** The schema as PostgreSQL describes it: columns, indexes, constraints, triggers, functions. */
async function schemaOf(db: pg.Client): Promise<string[]> {
  const { rows } = await db.query<{ entry: string }>(`
    SELECT entry FROM (
      SELECT concat_ws(' ', 'column', table_name, column_name, data_type, udt_name, is_nullable, column_default) AS entry
        FROM information_schema.columns WHERE table_schema = 'public'
      UNION ALL SELECT concat_ws(' ', 'index', indexdef) FROM pg_indexes WHERE schemaname = 'public'
      UNION ALL SELECT concat_ws(' ', 'constraint', conrelid::regclass::text, conname, pg_get_constraintdef(oid))
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
      UNION ALL SELECT concat_ws(' ', 'trigger', pg_get_triggerdef(oid)) FROM pg_trigger WHERE NOT tgisinternal
      UNION ALL SELECT concat_ws(' ', 'function', pg_get_functiondef(oid)) FROM pg_proc WHERE pronamespace = 'public'::regnamespace
    ) s ORDER BY entry`);
  return rows.map((r) => r.entry);
}

/** The schema the server's own migrator builds (the test run's template database). */
let serverSchema: string[];

describe.skipIf(!ON_POSTGRES)("prisma migrate deploy on PostgreSQL (skipped without DATABASE_URL)", () => {
  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-migrate-cli-"));
    admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await admin.connect();
    const template = new URL(process.env.DATABASE_URL!);
    template.pathname = `/${inject("postgresTemplate")}`;
    // Read and let go at once: while anyone is connected to the template, other test files
    // cannot copy it (CREATE DATABASE ... TEMPLATE: "source database is being accessed").
    const onTemplate = new pg.Client({ connectionString: template.toString() });
    await onTemplate.connect();
    try {
      serverSchema = await schemaOf(onTemplate);
    } finally {
      await onTemplate.end();
    }
    expect(serverSchema.filter((e) => e.startsWith("function ")).length).toBeGreaterThan(0);
  });

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.end().catch(() => undefined)));
    for (const name of created) await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    await admin?.end();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  it("migrates an empty database to the schema the server's migrator builds; `migrate status` agrees", async () => {
    const url = await freshDatabase();
    const deploy = await prisma(["migrate", "deploy"], url);
    expect(deploy.code, deploy.output).toBe(0);
    expect(deploy.output).toContain("All migrations have been successfully applied.");
    expect(appliedBy(deploy)).toEqual(MIGRATIONS.map((m) => m.name));
    const db = await connect(url);
    expectAllApplied(await migrationRows(db));
    // The function bodies too, semicolons and comments included.
    expect(await schemaOf(db)).toEqual(serverSchema);

    const status = await prisma(["migrate", "status"], url);
    expect(status.code, status.output).toBe(0);
    expect(status.output).toContain("Database schema is up to date!");
    const again = await prisma(["migrate", "deploy"], url);
    expect(again.code, again.output).toBe(0);
    expect(again.output).toContain("No pending migrations to apply.");
    expect((await migrationRows(db)).length).toBe(MIGRATIONS.length);
  }, 240_000);

  it.each([
    ["the CLI of that version", (url: string) => prisma(["migrate", "deploy"], url, olderCheckout(OLDER)).then((r) => expect(r.code, r.output).toBe(0))],
    ["the server's migrator of that version", async (url: string) => {
      const db = openPostgres(url, 1);
      await applyMigrations(db.raw, MIGRATIONS.slice(0, OLDER));
      await db.raw.close();
    }],
  ])("upgrades a database an older version migrated with %s: applies only the rest", async (_, migrateOlder) => {
    expect(OLDER).toBeGreaterThan(0);
    expect(OLDER).toBeLessThan(MIGRATIONS.length);
    const url = await freshDatabase();
    await migrateOlder(url);
    const db = await connect(url);
    const before = await migrationRows(db);
    expect(before.map((r) => r.migration_name)).toEqual(MIGRATIONS.slice(0, OLDER).map((m) => m.name));
    const pending = await prisma(["migrate", "status"], url);
    expect(pending.code).not.toBe(0);
    expect(pending.output).toContain(`Following migrations have not yet been applied:\n${MIGRATIONS.slice(OLDER).map((m) => m.name).join("\n")}`);

    const deploy = await prisma(["migrate", "deploy"], url);
    expect(deploy.code, deploy.output).toBe(0);
    expect(appliedBy(deploy)).toEqual(MIGRATIONS.slice(OLDER).map((m) => m.name));
    const after = await migrationRows(db);
    expectAllApplied(after);
    // The rows of the older version are left as they were.
    expect(after.slice(0, OLDER)).toEqual(before);
    expect(await schemaOf(db)).toEqual(serverSchema);
    const status = await prisma(["migrate", "status"], url);
    expect(status.code, status.output).toBe(0);
  }, 240_000);

  it("a server started on a database the CLI migrated finds nothing to do and serves requests", async () => {
    const url = await freshDatabase();
    const deploy = await prisma(["migrate", "deploy"], url);
    expect(deploy.code, deploy.output).toBe(0);
    const db = await connect(url);
    const migrated = await migrationRows(db);

    const server = await startServerProcess("after-cli", { DATABASE_URL: url, BOOTSTRAP_API_KEY }, BOOTSTRAP_API_KEY);
    try {
      expect((await server.api("GET", "/readyz")).status).toBe(200);
      await ensureCa(server, BOOTSTRAP_API_KEY);
      const token = await createEnrollmentToken(server, BOOTSTRAP_API_KEY, { labels: { site: "oslo" } });
      const device = await enroll(server, token.token);
      const got = await server.api("GET", `/api/v1/devices/${device.deviceId}`);
      expect(got.status, got.text).toBe(200);
      expect(got.body.labels).toEqual({ site: "oslo" });
      // Label counts are kept by the triggers of the migration the CLI could not apply before.
      const added = await server.api("POST", `/api/v1/devices/${device.deviceId}/labels`, { body: { key: "tier", value: "edge" } });
      expect(added.status, added.text).toBe(200);
      const sites = await server.api("GET", "/api/v1/groups/label-keys/site/values");
      expect(sites.status, sites.text).toBe(200);
      expect(sites.body).toMatchObject({ key: "site", items: [{ value: "oslo", count: 1 }], deviceCount: 1 });
      const tiers = await server.api("GET", "/api/v1/groups/label-keys/tier/values");
      expect(tiers.body).toMatchObject({ key: "tier", items: [{ value: "edge", count: 1 }], deviceCount: 1 });
    } finally {
      expect(await server.stop()).toBe(0);
    }
    // The server's migrator applied nothing: the bookkeeping is the CLI's, row for row.
    expect(await migrationRows(db)).toEqual(migrated);
  }, 240_000);

  it("a migration that fails is recorded as failed with nothing of it applied, and blocks both paths until resolved", async () => {
    const url = await freshDatabase();
    const broken = {
      name: "29991231000000_broken",
      sql: `CREATE TABLE "HalfApplied" ("id" INTEGER);\n-- The table above must not outlive the failure below.\nSELECT no_such_function();\n`,
    };
    const config = olderCheckout(2, [broken]);
    const deploy = await prisma(["migrate", "deploy"], url, config);
    expect(deploy.code).not.toBe(0);
    expect(deploy.output).toContain(`migration_name="${broken.name}"`);
    expect(deploy.output).toContain("function no_such_function() does not exist");

    const db = await connect(url);
    const rows = await migrationRows(db);
    expect(rows.map((r) => [r.migration_name, r.finished_at !== null])).toEqual([
      [MIGRATIONS[0].name, true],
      [MIGRATIONS[1].name, true],
      [broken.name, false],
    ]);
    expect(rows[2].logs).toContain("function no_such_function() does not exist");
    // One transaction: the statement before the failing one is not left behind.
    expect((await db.query(`SELECT to_regclass('"HalfApplied"') AS t`)).rows).toEqual([{ t: null }]);

    // Both paths refuse to go on until someone resolves it.
    const again = await prisma(["migrate", "deploy"], url, config);
    expect(again.code).not.toBe(0);
    expect(again.output).toContain("P3009");
    expect(again.output).toContain(`The \`${broken.name}\` migration started at`);
    const checkoutMigrations = path.join(path.dirname(config), "migrations");
    const server = openPostgres(url, 1);
    try {
      await expect(applyMigrations(server.raw, readMigrations(checkoutMigrations))).rejects.toThrow(`Migration ${broken.name} failed earlier`);
    } finally {
      await server.raw.close();
    }

    // Marked rolled back (what `prisma migrate resolve --rolled-back` records; in 6.19 that
    // command needs Prisma's native engine, see docs/architecture.md) and corrected, it is
    // applied by the next deploy.
    await db.query(`UPDATE "_prisma_migrations" SET "rolled_back_at" = now() WHERE "migration_name" = $1 AND "finished_at" IS NULL`, [broken.name]);
    fs.writeFileSync(path.join(checkoutMigrations, broken.name, "migration.sql"), `CREATE TABLE "HalfApplied" ("id" INTEGER);\n`);
    const fixed = await prisma(["migrate", "deploy"], url, config);
    expect(fixed.code, fixed.output).toBe(0);
    expect(appliedBy(fixed)).toEqual([broken.name]);
    expect((await db.query(`SELECT to_regclass('"HalfApplied"') AS t`)).rows).toEqual([{ t: '"HalfApplied"' }]);
  }, 240_000);

  it("the server's migrator waits on Prisma Migrate's advisory lock", async () => {
    const url = await freshDatabase();
    const holder = await connect(url);
    await holder.query("SELECT pg_advisory_lock($1)", [PRISMA_MIGRATE_LOCK]);
    const db = openPostgres(url, 2);
    try {
      const migrating = applyMigrations(db.raw);
      await eventually(async () => {
        const { rows } = await holder.query(
          `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = $1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
          [PRISMA_MIGRATE_LOCK],
        );
        return rows.length === 1;
      }, 30_000, "the migrator to wait on the lock");
      expect((await holder.query(`SELECT to_regclass('"_prisma_migrations"') AS t`)).rows).toEqual([{ t: null }]);
      await holder.query("SELECT pg_advisory_unlock($1)", [PRISMA_MIGRATE_LOCK]);
      expect(await migrating).toEqual(MIGRATIONS.map((m) => m.name));
    } finally {
      await db.raw.close();
    }
  }, 60_000);
});
