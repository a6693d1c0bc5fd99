// npm run db:move: an installation on the embedded database moved to an empty PostgreSQL
// database, then started on it (DATABASE_URL, the same DATA_DIR for its key files): nothing a
// user or device knew has changed (installation.ts). A target that is not empty is refused and
// left as it was; a start with another ENCRYPTION_KEY exits 1 saying so.
// PostgreSQL only (skipped without DATABASE_URL).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { newPostgresDatabase } from "../../support/harness.js";
import type { ServerProcess } from "../../support/server-process.js";
import { buildInstallation, expectSameInstallation, observe, runScript, startService, type Installation } from "./installation.js";

const DATABASE_URL = process.env.DATABASE_URL;

describe.skipIf(!DATABASE_URL)("db:move from PGlite to PostgreSQL (skipped without DATABASE_URL)", () => {
  const drops: Array<() => Promise<void>> = [];
  const processes: ServerProcess[] = [];
  let inst: Installation | undefined;
  let dataDir = "";
  afterAll(async () => {
    for (const p of processes) await p.kill();
    await inst?.git.close();
    for (const drop of drops) await drop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it("moves every table, partition and sequence in one transaction; the service starts on PostgreSQL as it was", async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-ops-move-"));
    // A first start on PGlite (no DATABASE_URL): the installation to move.
    const a = await startService("ops-pglite", { DATA_DIR: dataDir });
    processes.push(a);
    const empty = await newPostgresDatabase(DATABASE_URL!);
    drops.push(empty.drop);
    // The service holds DATA_DIR: the move waits for it to stop (tried while the installation is built).
    const [held, built] = await Promise.all([runScript("db-move.ts", ["--to", empty.url.toString()], { DATA_DIR: dataDir }), buildInstallation(a)]);
    inst = built;
    const before = await observe(a, inst);
    expect(held.code).toBe(1);
    expect(held.output).toContain("another process uses the embedded database");
    expect(await a.stop()).toBe(0);

    // A target holding anything is refused, and left as it was.
    const busy = await newPostgresDatabase(DATABASE_URL!);
    drops.push(busy.drop);
    const client = new pg.Client({ connectionString: busy.url.toString() });
    await client.connect();
    await client.query(`CREATE TABLE "someone_elses" (id int)`);
    const refused = await runScript("db-move.ts", ["--to", busy.url.toString()], { DATA_DIR: dataDir });
    expect(refused.code).toBe(1);
    expect(refused.output).toContain("the target database is not empty: it holds 1 objects (public.someone_elses)");
    const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_class WHERE relnamespace = 'public'::regnamespace`);
    expect(rows[0].n).toBe(1);
    await client.end();

    const moved = await runScript("db-move.ts", ["--to", empty.url.toString()], { DATA_DIR: dataDir });
    expect(moved.code, moved.output).toBe(0);
    console.log(`db:move in ${moved.ms} ms: ${moved.output.split("\n").find((l) => l.startsWith("moved "))}`);
    // The counts it printed: every table, the same on both sides.
    expect(moved.output).toMatch(/^ {2}Device {2,}2$/m);
    expect(moved.output).toMatch(/^ {2}TelemetrySnapshot {2,}60$/m);
    expect(moved.output).toMatch(/partitions, \d+ sequences in \d+ ms; committed/);

    const onPostgres = { DATA_DIR: dataDir, DATABASE_URL: empty.url.toString() };
    await expect(startService("ops-wrong-key", { ...onPostgres, ENCRYPTION_KEY: "cd".repeat(32) })).rejects.toThrow(
      /exited with 1[\s\S]*encryption key \(ENCRYPTION_KEY\) does not open this database's secrets/,
    );
    const b = await startService("ops-postgres", onPostgres);
    processes.push(b);
    expect(b.output.join("\n")).toContain('"database":"postgresql"');
    await expectSameInstallation(b, inst, before);
  }, 150_000);
});
