// npm run db:backup of a running service on the embedded database, npm run db:restore into an
// empty DATA_DIR on "another machine", and the start there: without the original key files it
// exits 1 saying so; with them, nothing a user or device knew has changed (installation.ts).
// PGlite only: the PostgreSQL phase skips it (PostgreSQL backups are pg_dump's, docs/operations.md).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migratedDataDir, type ServerProcess } from "../../support/server-process.js";
import { buildInstallation, copyKeys, expectSameInstallation, observe, runScript, startService, type Installation } from "./installation.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);

describe.skipIf(ON_POSTGRES)("backup of a running service and restore on an empty DATA_DIR (PGlite; skipped with DATABASE_URL)", () => {
  const dirs: string[] = [];
  let inst: Installation | undefined;
  const processes: ServerProcess[] = [];
  afterAll(async () => {
    for (const p of processes) await p.kill();
    await inst?.git.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it("the restored installation starts only with its keys, and then serves devices, registry, audit, telemetry, sessions and keys as before", async () => {
    const original = migratedDataDir("fleet-ops-original-");
    const restored = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-ops-restored-"));
    const backupFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "fleet-ops-backup-")), "fleet.tar.gz");
    dirs.push(original, restored, path.dirname(backupFile));

    const a = await startService("ops-original", { DATA_DIR: original });
    processes.push(a);
    inst = await buildInstallation(a);
    const before = await observe(a, inst);

    // The running service writes the dump; a second process never opens its database.
    const backup = await runScript("db-backup.ts", ["--out", backupFile], { DATA_DIR: original });
    expect(backup.code, backup.output).toBe(0);
    expect(backup.output).toContain("written by the running service");
    expect(fs.statSync(backupFile).mode & 0o777).toBe(0o600);
    expect(await a.stop()).toBe(0);

    const restore = await runScript("db-restore.ts", ["--from", backupFile], { DATA_DIR: restored });
    expect(restore.code, restore.output).toBe(0);
    // never over an existing database
    const again = await runScript("db-restore.ts", ["--from", backupFile], { DATA_DIR: restored });
    expect(again.code).toBe(1);
    expect(again.output).toContain("already holds a database");
    console.log(`db:backup ${fs.statSync(backupFile).size} bytes in ${backup.ms} ms, db:restore in ${restore.ms} ms (each with tsx's start)`);

    // Without the original encryption.key: the start stops at once and says why.
    await expect(startService("ops-no-key", { DATA_DIR: restored })).rejects.toThrow(/exited with 1[\s\S]*encryption key .* does not open this database's secrets/);

    copyKeys(original, restored);
    const b = await startService("ops-restored", { DATA_DIR: restored });
    processes.push(b);
    await expectSameInstallation(b, inst, before);
  }, 120_000);
});
