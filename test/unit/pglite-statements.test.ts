// Statements on PGlite by our own exchange (src/db/pglite-statements.ts). Named prepared
// statements: the same rows as PGlite's own query, one parse per instance, errors that leave
// the statement usable, and the locks that keep it out of another caller's transaction. The
// PGlite the Prisma adapter is given: the same results as PGlite's query with the adapter's
// parsers, in and out of transactions, and the same errors.
import { PGlite } from "@electric-sql/pglite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { preparedQueries, prismaPGlite } from "../../src/db/pglite-statements.js";

describe("prepared statements on PGlite", () => {
  let pglite: PGlite;
  let prepared: ReturnType<typeof preparedQueries>;
  const SQL = `SELECT x."n", x."name", x."n" * 2 AS "twice", now() IS NOT NULL AS "ok"
                 FROM jsonb_to_recordset($1::text::jsonb) AS x("n" int, "name" text) ORDER BY x."n"`;

  beforeAll(async () => {
    pglite = new PGlite();
    await pglite.waitReady;
    prepared = preparedQueries(pglite);
    await pglite.exec(`CREATE TABLE t ("id" int PRIMARY KEY, "v" text)`);
  });
  afterAll(() => pglite.close());

  it("answers the rows PGlite's query answers, with the same types, parsed once", async () => {
    const param = JSON.stringify([{ n: 2, name: "b" }, { n: 1, name: "a" }]);
    const expected = (await pglite.query(SQL, [param])).rows;
    expect(await prepared("rows", SQL, [param])).toEqual(expected);
    expect(await prepared("rows", SQL, [param])).toEqual([{ n: 1, name: "a", twice: 2, ok: true }, { n: 2, name: "b", twice: 4, ok: true }]);
    const statements = (await pglite.query<{ name: string }>(`SELECT "name" FROM pg_prepared_statements`)).rows;
    expect(statements.map((s) => s.name)).toEqual(["rows"]);
  });

  it("sends arrays, timestamps and nulls as PGlite's query does (the ingest statements' unnest parameters)", async () => {
    const sql = `SELECT t.* FROM unnest($1::uuid[], $2::timestamptz[], $3::bigint[], $4::text[]) WITH ORDINALITY AS t("id", "at", "n", "s", "ord")`;
    const params = [
      ["7d0e2a1c-8f4b-4c7e-9a51-0c2f3b4d5e6f", "0b6f1f2e-3c4d-4e5f-8a9b-1c2d3e4f5a6b"],
      ["2026-12-06T06:00:00.000Z", "2026-12-06T06:00:01.500Z"],
      ["9007199254740993", null],
      ["it's, \"quoted\"", null],
    ];
    const rows = await prepared("arrays", sql, params);
    expect(rows).toEqual((await pglite.query(sql, params)).rows);
    expect(rows).toMatchObject([{ at: new Date("2026-12-06T06:00:00.000Z"), s: `it's, "quoted"`, ord: 1 }, { n: null, s: null, ord: 2 }]);
  });

  it("a statement that does not parse throws and is not kept; a failing run leaves the statement usable", async () => {
    await expect(prepared("broken", "SELEC 1", [])).rejects.toThrow(/syntax error/);
    await expect(prepared("broken", "SELECT $1::text AS v", ["fixed"])).resolves.toEqual([{ v: "fixed" }]);
    const insert = `INSERT INTO t ("id", "v") VALUES ($1::text::int, 'x') RETURNING "id"`;
    expect(await prepared("insert", insert, ["1"])).toEqual([{ id: 1 }]);
    await expect(prepared("insert", insert, ["1"])).rejects.toThrow(/duplicate key/);
    expect(await prepared("insert", insert, ["2"])).toEqual([{ id: 2 }]);
    expect((await pglite.query(`SELECT count(*)::int AS n FROM t`)).rows).toEqual([{ n: 2 }]);
  });

  it("waits for a transaction of another caller instead of running inside it", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transaction = pglite.transaction(async (tx) => {
      await tx.query(`INSERT INTO t ("id", "v") VALUES (10, 'in the transaction')`);
      await held;
      await tx.rollback();
    });
    await new Promise((resolve) => setImmediate(resolve)); // the transaction has begun
    // On PGlite's one connection a read that did not wait would run inside the open
    // transaction and see its row.
    const read = prepared<{ n: number }>("count", `SELECT count(*)::int AS n FROM t WHERE "id" = $1::text::int`, ["10"]);
    release();
    await transaction;
    expect(await read).toEqual([{ n: 0 }]);
  });
});

describe("the PGlite the Prisma adapter is given", () => {
  let pglite: PGlite;
  let facing: ReturnType<typeof prismaPGlite>;
  // what pglite-prisma-adapter passes: rows as arrays, its own parsers for some types
  const options = { rowMode: "array" as const, parsers: { 1184: (text: string) => `tz:${text}`, 3802: (text: string) => `json:${text}` } };

  beforeAll(async () => {
    pglite = new PGlite();
    await pglite.waitReady;
    facing = prismaPGlite(pglite);
    await pglite.exec(`CREATE TABLE p ("id" int PRIMARY KEY, "at" timestamptz, "doc" jsonb, "n" bigint)`);
  });
  afterAll(() => pglite.close());

  it("answers fields, rows and affected rows as PGlite's query with the same options, the caller's parsers first", async () => {
    const insert = `INSERT INTO p ("id", "at", "doc", "n") VALUES ($1, $2, $3, $4), ($5, NULL, NULL, NULL) RETURNING *`;
    const params = [1, new Date("2026-12-06T08:00:00.000Z"), JSON.stringify({ a: [1, "x"] }), "9007199254740993", 2];
    const ours = await facing.query(insert, params, options);
    await pglite.exec(`DELETE FROM p`);
    const theirs = await pglite.query(insert, params, options);
    expect(ours).toEqual(theirs);
    expect(ours.affectedRows).toBe(2);
    expect(ours.fields.map((f) => f.name)).toEqual(["id", "at", "doc", "n"]);
    expect(ours.rows).toEqual([
      [1, "tz:2026-12-06 08:00:00+00", 'json:{"a": [1, "x"]}', 9007199254740993n],
      [2, null, null, null],
    ]);
    // without parsers of its own: PGlite's, as objects
    expect((await facing.query(`SELECT "id", "doc" FROM p WHERE "id" = $1`, [1])).rows).toEqual([{ id: 1, doc: { a: [1, "x"] } }]);
    // the same options object twice: still the caller's parsers (merged once, kept)
    expect((await facing.query(`SELECT "at" FROM p WHERE "id" = 1`, [], options)).rows).toEqual([["tz:2026-12-06 08:00:00+00"]]);
  });

  it("throws PGlite's database errors and stays usable", async () => {
    const error = await facing.query(`INSERT INTO p ("id") VALUES ($1)`, [1], options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).toMatchObject({ code: "23505" });
    await expect(facing.query(`SELEC 1`, [], options)).rejects.toThrow(/syntax error/);
    expect((await facing.query(`SELECT count(*)::int AS n FROM p`, [], options)).rows).toEqual([[2]]);
  });

  it("runs a transaction's statements inside it: its own writes seen, a rollback keeps nothing, a closed one refuses", async () => {
    let seen: unknown;
    let closedQuery: Promise<unknown> | undefined;
    await facing.transaction(async (tx) => {
      await tx.query(`INSERT INTO p ("id") VALUES ($1)`, [30], options);
      seen = (await tx.query(`SELECT count(*)::int AS n FROM p WHERE "id" = $1`, [30], options)).rows;
      await tx.rollback();
      expect(tx.closed).toBe(true);
      closedQuery = tx.query(`SELECT 1`, [], options);
      await closedQuery.catch(() => undefined);
    });
    expect(seen).toEqual([[1]]);
    await expect(closedQuery).rejects.toThrow(/Transaction is closed/);
    expect((await pglite.query(`SELECT count(*)::int AS n FROM p WHERE "id" = 30`)).rows).toEqual([{ n: 0 }]);
    await facing.transaction(async (tx) => void (await tx.query(`INSERT INTO p ("id") VALUES ($1)`, [31], options)));
    expect((await pglite.query(`SELECT count(*)::int AS n FROM p WHERE "id" = 31`)).rows).toEqual([{ n: 1 }]);
  });
});
