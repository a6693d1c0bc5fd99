// Moves the embedded database (PGlite) to an empty PostgreSQL database in one transaction:
// the migrations, the partitions the service made since (telemetry, logs, rollups), every
// table's rows in batches, every sequence where the source left it, then a count of each
// table on both sides. A failure rolls back: the target is left as empty as it was found.
//
// Rows travel as JSON (to_jsonb on the source, jsonb_populate_recordset on the target: one
// multi-row INSERT per batch), so every type arrives as PostgreSQL itself printed and parses
// it, with no conversion in JavaScript. Foreign keys are dropped for the copy and added back
// before the commit, which checks every row against them (any table order works); the tables'
// own triggers (label counts, continuous deployments) are disabled while rows arrive, because
// the tables they maintain are copied as they are.
import { BOOKKEEPING, readMigrations } from "./migrate.js";
import type { RawDatabase } from "./adapters.js";

export class MoveRefusedError extends Error {}

export interface MoveReport {
  tables: { table: string; rows: number }[];
  partitionsCreated: number;
  sequences: number;
  bytes: number;
  ms: number;
}

const q = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Tables, sequences, views and functions of the database's own schemas. */
async function userObjects(db: RawDatabase): Promise<string[]> {
  const rows = await db.query<{ name: string }>(`
    SELECT n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
       AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
    UNION ALL
    SELECT n.nspname || '.' || p.proname || '()' FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
     WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
    ORDER BY 1`);
  return rows.map((r) => r.name);
}

interface Partition {
  name: string;
  parent: string;
  bound: string;
  options: string[] | null;
}

const PARTITIONS = `
  SELECT c.relname AS name, p.relname AS parent, pg_get_expr(c.relpartbound, c.oid) AS bound, c.reloptions AS options, c.relkind AS kind
    FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid JOIN pg_class p ON p.oid = i.inhparent
   WHERE c.relispartition AND c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace ORDER BY c.relname`;

/**
 * `source`: the embedded database, migrated, with no other user. `target`: one connection to
 * the empty PostgreSQL database. `log` receives one line per step.
 */
export async function moveToPostgres(source: RawDatabase, target: RawDatabase, log: (line: string) => void, batchRows = 2000): Promise<MoveReport> {
  const started = Date.now();
  const found = await userObjects(target);
  if (found.length > 0) {
    const shown = found.slice(0, 8).join(", ") + (found.length > 8 ? `, and ${found.length - 8} more` : "");
    throw new MoveRefusedError(`the target database is not empty: it holds ${found.length} objects (${shown}). db:move fills an empty database only (createdb a new one); nothing was changed`);
  }
  const migrations = readMigrations();
  const applied = await source.query<{ migration_name: string }>(
    `SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL ORDER BY migration_name`,
  );
  if (applied.map((r) => r.migration_name).join() !== migrations.map((m) => m.name).join()) {
    throw new MoveRefusedError("the embedded database's migrations differ from this checkout's: start the service once on it (npm start) with this version, stop it, then move");
  }

  // One snapshot of the source for the whole copy (nobody else writes it: DATA_DIR is held).
  await source.exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  await target.exec("BEGIN");
  let bytes = 0;
  try {
    // The schema: every migration, and their bookkeeping copied below as a table.
    for (const m of migrations) await target.exec(m.sql);
    await target.exec(BOOKKEEPING);
    log(`target: ${migrations.length} migrations applied`);

    // Partitions made at run time (the migrations make only the default ones).
    const have = new Set((await target.query<Partition>(PARTITIONS)).map((p) => p.name));
    const partitions = await source.query<Partition & { kind: string }>(PARTITIONS);
    let partitionsCreated = 0;
    for (const p of partitions) {
      if (have.has(p.name)) continue;
      if (p.kind !== "r") throw new MoveRefusedError(`partition ${p.name} is itself partitioned: not supported by db:move`);
      const options = p.options?.length ? ` WITH (${p.options.join(", ")})` : "";
      await target.exec(`CREATE TABLE ${q(p.name)} PARTITION OF ${q(p.parent)} ${p.bound}${options}`);
      partitionsCreated++;
    }
    log(`target: ${partitionsCreated} partitions created`);

    // Tables to copy: the plain ones and the partitioned parents (whose rows include their partitions').
    const tables = (await source.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind IN ('r', 'p') AND NOT relispartition ORDER BY relname`,
    )).map((t) => t.name);
    const foreignKeys = await target.query<{ tbl: string; name: string; def: string }>(
      `SELECT conrelid::regclass::text AS tbl, conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint
        WHERE contype = 'f' AND connamespace = 'public'::regnamespace AND conparentid = 0`,
    );
    for (const fk of foreignKeys) await target.exec(`ALTER TABLE ${fk.tbl} DROP CONSTRAINT ${q(fk.name)}`);
    const triggered = (await target.query<{ tbl: string }>(
      `SELECT DISTINCT tgrelid::regclass::text AS tbl FROM pg_trigger WHERE NOT tgisinternal AND tgparentid = 0`,
    )).map((t) => t.tbl);
    for (const t of triggered) await target.exec(`ALTER TABLE ${t} DISABLE TRIGGER USER`);

    const report: MoveReport["tables"] = [];
    for (const table of tables) {
      const t0 = Date.now();
      await source.exec(`DECLARE "move_rows" NO SCROLL CURSOR FOR SELECT to_jsonb(t)::text AS r FROM ${q(table)} t`);
      let rows = 0;
      for (;;) {
        const batch = await source.query<{ r: string }>(`FETCH FORWARD ${batchRows} FROM "move_rows"`);
        if (batch.length === 0) break;
        const json = `[${batch.map((b) => b.r).join(",")}]`;
        bytes += json.length;
        await target.query(
          `INSERT INTO ${q(table)} OVERRIDING SYSTEM VALUE SELECT * FROM jsonb_populate_recordset(NULL::${q(table)}, $1::jsonb)`,
          [json],
        );
        rows += batch.length;
      }
      await source.exec(`CLOSE "move_rows"`);
      report.push({ table, rows });
      if (rows > 0) log(`copied ${table}: ${rows} rows in ${Date.now() - t0} ms`);
    }

    for (const t of triggered) await target.exec(`ALTER TABLE ${t} ENABLE TRIGGER USER`);
    // Added back: each is checked against every row copied.
    for (const fk of foreignKeys) await target.exec(`ALTER TABLE ${fk.tbl} ADD CONSTRAINT ${q(fk.name)} ${fk.def}`);
    log(`target: ${foreignKeys.length} foreign keys checked`);

    // Sequences (autoincrement ids): where the source left them, used or not.
    const names = (await source.query<{ name: string }>(
      `SELECT relname AS name FROM pg_class WHERE relkind = 'S' AND relnamespace = 'public'::regnamespace ORDER BY relname`,
    )).map((s) => s.name);
    if (names.length > 0) {
      const values = await source.query<{ name: string; v: string; called: boolean }>(
        names.map((n) => `SELECT '${n.replace(/'/g, "''")}' AS name, last_value::text AS v, is_called AS called FROM ${q(n)}`).join(" UNION ALL "),
      );
      await target.query(
        `SELECT setval(format('%I', s.name)::regclass, s.v, s.called) FROM unnest($1::text[], $2::bigint[], $3::boolean[]) AS s(name, v, called)`,
        [values.map((v) => v.name), values.map((v) => v.v), values.map((v) => v.called)],
      );
    }
    log(`target: ${names.length} sequences set`);

    // Counts on both sides, in one statement each.
    const countSql = tables.map((t) => `SELECT '${t.replace(/'/g, "''")}' AS tbl, count(*)::int AS n FROM ${q(t)}`).join(" UNION ALL ");
    const sourceCounts = new Map((await source.query<{ tbl: string; n: number }>(countSql)).map((r) => [r.tbl, Number(r.n)]));
    const targetCounts = new Map((await target.query<{ tbl: string; n: number }>(countSql)).map((r) => [r.tbl, Number(r.n)]));
    const wrong = tables.filter((t) => sourceCounts.get(t) !== targetCounts.get(t) || sourceCounts.get(t) !== report.find((r) => r.table === t)!.rows);
    if (wrong.length > 0) {
      throw new Error(`row counts differ after the copy: ${wrong.map((t) => `${t} ${sourceCounts.get(t)} -> ${targetCounts.get(t)}`).join(", ")}`);
    }
    await target.exec("COMMIT");
    return { tables: report, partitionsCreated, sequences: names.length, bytes, ms: Date.now() - started };
  } catch (err) {
    await target.exec("ROLLBACK").catch(() => undefined);
    throw err;
  } finally {
    await source.exec("ROLLBACK").catch(() => undefined);
  }
}
