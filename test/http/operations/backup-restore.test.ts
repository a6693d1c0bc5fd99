// npm run db:backup of a running service on the embedded database (telemetry arriving
// meanwhile), npm run db:restore into an empty DATA_DIR on "another machine", and the start
// there: without the original key files it exits 1 saying so; with them, nothing a user or
// device knew has changed (installation.ts) and the dump holds whole batches only.
// PGlite only: the PostgreSQL phase skips it (PostgreSQL backups are pg_dump's, docs/operations.md).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { migratedDataDir, type ServerProcess } from "../../support/server-process.js";
import { buildInstallation, copyKeys, expectSameInstallation, observe, runScript, startService, type Installation } from "./installation.js";

const ON_POSTGRES = Boolean(process.env.DATABASE_URL);
const HOUR = 3600_000;
const BATCH = 500;
/** the concurrent writes' window: a week ago, whole hours, away from the installation's own telemetry */
const WRITES_FROM = Math.floor((Date.now() - 7 * 24 * HOUR) / HOUR) * HOUR;
const batch = (startMs: number) =>
  Array.from({ length: BATCH }, (_, i) => ({ timestamp: new Date(startMs + i * 1000).toISOString(), cpuUsagePercent: i % 100, containersRunning: 1 }));

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

    // Telemetry keeps arriving while the running service writes the dump (a second process
    // never opens its database): one batch, one statement, back to back.
    const device = inst.devices[0];
    const sent: number[] = [];
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        const start = WRITES_FROM + i * BATCH * 1000;
        const res = await a.api("POST", "/api/v1/agent/telemetry", { key: null, token: await device.token(), body: { snapshots: batch(start) } });
        expect(res.status, res.text).toBe(200);
        sent.push(start);
      }
    })();
    const backup = await runScript("db-backup.ts", ["--out", backupFile], { DATA_DIR: original });
    writing = false;
    await writer;
    expect(backup.code, backup.output).toBe(0);
    expect(backup.output).toContain("written by the running service");
    expect(fs.statSync(backupFile).mode & 0o777).toBe(0o600);
    expect(await a.stop()).toBe(0);

    const restore = await runScript("db-restore.ts", ["--from", backupFile], { DATA_DIR: restored });
    expect(restore.code, restore.output).toBe(0);
    console.log(`db:backup ${fs.statSync(backupFile).size} bytes in ${backup.ms} ms, db:restore in ${restore.ms} ms (each with tsx's start)`);

    // Without the original encryption.key: the start stops at once and says why. Meanwhile, a
    // second restore is refused: never over an existing database.
    const [noKey, again] = await Promise.all([
      startService("ops-no-key", { DATA_DIR: restored }).then((p) => (processes.push(p), "started"), (err: Error) => err.message),
      runScript("db-restore.ts", ["--from", backupFile], { DATA_DIR: restored }),
    ]);
    expect(noKey).toMatch(/exited with 1[\s\S]*encryption key .* does not open this database's secrets/);
    expect(again.code).toBe(1);
    expect(again.output).toContain("already holds a database");

    copyKeys(original, restored);
    const b = await startService("ops-restored", { DATA_DIR: restored });
    processes.push(b);
    await expectSameInstallation(b, inst, before);

    // The dump is a committed state: each batch is there whole or not at all, and the hourly
    // rollups (merged by the same statements) hold exactly the snapshots that are there.
    const count = async (from: number, to: number, interval?: string) => {
      const range = `from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}`;
      const res = await b.api("GET", `/api/v1/devices/${device.deviceId}/telemetry${interval ? `?${range}&interval=${interval}` : `/raw?metric=cpuUsagePercent&${range}&limit=1`}`);
      expect(res.status, res.text).toBe(200);
      return res.body.total as number;
    };
    const stored = await Promise.all(sent.map((start) => count(start, start + BATCH * 1000 - 1)));
    for (const n of stored) expect([0, BATCH], `snapshots of one batch: ${stored.join(", ")}`).toContain(n);
    const total = stored.reduce((x, y) => x + y, 0);
    expect(total, `${sent.length} batches sent while the dump was written`).toBeGreaterThan(0);
    const end = Math.ceil((WRITES_FROM + sent.length * BATCH * 1000) / HOUR) * HOUR - 1;
    expect(await count(WRITES_FROM, end, "1h")).toBe(total);
    console.log(`${sent.length} telemetry batches of ${BATCH} sent during the backup, ${total / BATCH} in the dump`);
  }, 120_000);
});
