// Daily partitions of raw telemetry snapshots and of log lines (docs/telemetry.md, "Daily
// partitions of raw snapshots and log lines"): the migrations that partition an existing table
// keep every row and id; ingest of a day without a partition (a backlog upload) makes it, and when it cannot (a lock held too long)
// the rows land in the default partition and move into their day's partition once it is
// made; the scheduled job makes the days ahead; retention drops whole partitions older than
// the retention and leaves newer ones untouched; a search of a device's logs finds lines in
// their day's partition. On PGlite and on PostgreSQL (DATABASE_URL).
import { spawn } from "node:child_process";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenedDatabase } from "../../../src/db/adapters.js";
import { applyMigrations, readMigrations } from "../../../src/db/migrate.js";
import { pruneOnce } from "../../../src/modules/telemetry/retention.js";
import { telemetryJobs } from "../../../src/modules/telemetry/jobs.js";
import { DAY_MS, dayOf, ensurePartitions, listPartitions, partitionName, PARTITION_DAYS_AHEAD } from "../../../src/modules/telemetry/partitions.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { enrolledDevices, freshDatabase, sendAllTelemetry, sendLogs, sendTelemetry, type EnrolledDevice } from "./support.js";

const MIGRATION = readMigrations().find((m) => m.name.endsWith("_telemetry_partitions"))!.name;
const LOG_MIGRATION = readMigrations().find((m) => m.name.endsWith("_log_partitions"))!.name;
const today = dayOf(Date.now());
const at = (day: number, hour: number) => new Date(day * DAY_MS + hour * 3600_000).toISOString();

/** Where each row of a device lives in `table`: partition name -> rows. */
async function rowsByPartition(raw: OpenedDatabase["raw"], deviceId: string, table: "TelemetrySnapshot" | "DeviceLog" = "TelemetrySnapshot"): Promise<Record<string, number>> {
  const rows = await raw.query<{ partition: string; n: number }>(
    `SELECT tableoid::regclass::text AS "partition", count(*)::int AS "n" FROM "${table}" WHERE "deviceId" = $1::uuid GROUP BY 1`,
    [deviceId],
  );
  return Object.fromEntries(rows.map((r) => [r.partition.replace(/"/g, ""), r.n]));
}

/** The fillfactor of each table (100, the default, when none is set). */
async function fillfactors(raw: OpenedDatabase["raw"], tables: string[]): Promise<number[]> {
  const rows = await raw.query<{ name: string; fillfactor: number }>(
    `SELECT c.relname AS "name", coalesce((SELECT split_part(o, '=', 2)::int FROM unnest(c.reloptions) o WHERE o LIKE 'fillfactor=%'), 100) AS "fillfactor"
       FROM pg_class c WHERE c.relname = ANY($1::text[])`, [tables]);
  return tables.map((t) => rows.find((r) => r.name === t)?.fillfactor ?? Number.NaN);
}

describe("the migration partitioning an existing table", () => {
  const database = freshDatabase();

  it("keeps every row and its id, one partition per day, new ids continue the sequence, and the rows are rolled up", async () => {
    const opened = database();
    await applyMigrations(opened.raw, readMigrations().filter((m) => m.name < MIGRATION));
    const device = "00000000-0000-4000-8000-000000000001";
    // 3 days: 40 days ago (older than the default retention: kept by the migration all the same), 2 days ago, today
    const days = [today - 40, today - 2, today];
    await opened.raw.query(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent")
       SELECT $1::uuid, t, g FROM unnest($2::timestamptz[]) WITH ORDINALITY AS x(t, g)`,
      [device, days.flatMap((d) => [at(d, 0), at(d, 12), at(d, 23.99)])],
    );
    // the device's newest snapshot names its organization for the rollups' backfill
    await opened.raw.query(
      `INSERT INTO "DeviceTelemetryLatest" ("deviceId", "organizationId", "snapshotId", "timestamp") VALUES ($1::uuid, $2::uuid, 9, now())`,
      [device, "00000000-0000-4000-8000-000000000002"],
    );
    const before = await opened.raw.query<{ id: string; timestamp: Date; cpu: number }>(
      `SELECT "id"::text AS "id", "timestamp", "cpuUsagePercent" AS "cpu" FROM "TelemetrySnapshot" ORDER BY "id"`,
    );
    expect(before).toHaveLength(9);

    expect(await applyMigrations(opened.raw)).toContain(MIGRATION);

    const after = await opened.raw.query<{ id: string; timestamp: Date; cpu: number }>(
      `SELECT "id"::text AS "id", "timestamp", "cpuUsagePercent" AS "cpu" FROM "TelemetrySnapshot" ORDER BY "id"`,
    );
    expect(after).toEqual(before);
    expect(await rowsByPartition(opened.raw, device)).toEqual(Object.fromEntries(days.map((d) => [partitionName("TelemetrySnapshot", d), 3])));
    expect((await listPartitions(opened.raw, "TelemetrySnapshot")).map((p) => p.start)).toEqual(days);
    // the later migration rolls the existing rows up: one 5-minute and one hourly bucket per row here
    for (const table of ["TelemetryRollup5m", "TelemetryRollup1h"]) {
      const rollups = await opened.raw.query<{ bucket: Date; samples: number; cpu: number }>(
        `SELECT "bucket", "samples", "cpuUsagePercentSum" AS "cpu" FROM "${table}" ORDER BY "bucket"`);
      expect(rollups.map((r) => r.samples)).toEqual(before.map(() => 1));
      expect(rollups.map((r) => r.cpu)).toEqual(before.map((r) => r.cpu));
    }
    // the rollup partitions made before 20261126173000_in_place_update_room got its room for updates too
    const rollupPartitions = [...days.map((d) => partitionName("TelemetryRollup5m", d)), ...days.map((d) => partitionName("TelemetryRollup1h", d)), "TelemetryRollup5m_default"];
    expect(await fillfactors(opened.raw, rollupPartitions)).toEqual(rollupPartitions.map(() => 90));
    expect(await fillfactors(opened.raw, ["DeviceTelemetryLatest", partitionName("TelemetrySnapshot", today)])).toEqual([70, 100]);
    const [inserted] = await opened.raw.query<{ id: string }>(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp") VALUES ($1::uuid, now()) RETURNING "id"::text AS "id"`, [device]);
    expect(BigInt(inserted.id)).toBeGreaterThan(BigInt(before[before.length - 1].id));
  });
});

describe("the migration partitioning the existing log table", () => {
  const database = freshDatabase();

  it("keeps every line and its id, one partition per day, new ids continue the sequence, and search finds the lines", async () => {
    const opened = database();
    await applyMigrations(opened.raw, readMigrations().filter((m) => m.name < LOG_MIGRATION));
    const device = "00000000-0000-4000-8000-000000000003";
    // 3 days: 40 days ago (older than the default retention: kept by the migration all the same), 2 days ago, today
    const days = [today - 40, today - 2, today];
    await opened.raw.query(
      `INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message")
       SELECT $1::uuid, t, 'info', 'agent', 'line ' || g || ' of the upgrade' FROM unnest($2::timestamptz[]) WITH ORDINALITY AS x(t, g)`,
      [device, days.flatMap((d) => [at(d, 0), at(d, 12), at(d, 23.99)])],
    );
    const lines = `SELECT "id"::text AS "id", "timestamp", "level", "source", "message" FROM "DeviceLog" ORDER BY "id"`;
    const before = await opened.raw.query<{ id: string }>(lines);
    expect(before).toHaveLength(9);

    expect(await applyMigrations(opened.raw)).toContain(LOG_MIGRATION);

    expect(await opened.raw.query(lines)).toEqual(before);
    expect(await rowsByPartition(opened.raw, device, "DeviceLog")).toEqual(Object.fromEntries(days.map((d) => [partitionName("DeviceLog", d), 3])));
    expect((await listPartitions(opened.raw, "DeviceLog")).map((p) => p.start)).toEqual(days);
    // the search the logs operation runs (a case-insensitive substring)
    const found = await opened.raw.query<{ id: string }>(
      `SELECT "id"::text AS "id" FROM "DeviceLog" WHERE "deviceId" = $1::uuid AND "message" ILIKE '%LINE 5 OF%'`, [device]);
    expect(found.map((r) => r.id)).toEqual([before[4].id]);
    const [inserted] = await opened.raw.query<{ id: string }>(
      `INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message") VALUES ($1::uuid, now(), 'info', 'agent', 'new') RETURNING "id"::text AS "id"`, [device]);
    expect(BigInt(inserted.id)).toBeGreaterThan(BigInt(before[before.length - 1].id));
  });
});

describe("partitions of a running service", () => {
  let h: Harness;
  let acme: Tenant;
  let device: EnrolledDevice;
  let backlog: EnrolledDevice;

  beforeAll(async () => {
    h = await createHarness();
    acme = await h.createTenant("Acme Partitions");
    [device, backlog] = await enrolledDevices(h, acme, 2);
  });
  afterAll(() => h?.close());
  const raw = () => h.services.database.opened.raw;

  it("makes the partition of a backlog day at ingest, so its rows land in their day's partition", async () => {
    const day = today - 9;
    const res = await sendTelemetry(h, backlog, [{ timestamp: at(day, 5), cpuUsagePercent: 10 }, { timestamp: at(day, 6), cpuUsagePercent: 30 }]);
    expect(res.status).toBe(200);
    expect(await rowsByPartition(raw(), backlog.deviceId)).toEqual({ [partitionName("TelemetrySnapshot", day)]: 2 });
    const series = await h.api("GET", `/api/v1/devices/${backlog.deviceId}/telemetry?from=${at(day, 0)}&to=${at(day, 23)}&interval=1d`, { key: acme.key });
    expect(series.body.data).toEqual([expect.objectContaining({ cpuUsagePercent: 20, samples: 2 })]);
  });

  it("makes the partition of a backlog day of log lines at ingest, and a search of that day finds them there", async () => {
    const day = today - 9;
    const res = await sendLogs(h, backlog, [
      { timestamp: at(day, 5), source: "app", message: "Disk quota exceeded on /data" },
      { timestamp: at(day, 6), source: "app", message: "all good" },
    ]);
    expect(res.status).toBe(200);
    expect(await rowsByPartition(raw(), backlog.deviceId, "DeviceLog")).toEqual({ [partitionName("DeviceLog", day)]: 2 });
    const search = await h.api("GET", `/api/v1/devices/${backlog.deviceId}/logs?q=quota%20EXCEEDED&from=${at(day, 0)}&to=${at(day, 23)}`, { key: acme.key });
    expect(search.status).toBe(200);
    expect(search.body).toMatchObject({ total: 1, items: [{ message: "Disk quota exceeded on /data", timestamp: at(day, 5) }] });
  });

  it("makes yesterday to PARTITION_DAYS_AHEAD days ahead in the scheduled job, for snapshots and log lines", async () => {
    const job = telemetryJobs(h.services.config).schedules.find((s) => s.name === "telemetry.partitions")!;
    await job.run({ services: h.services, logger: h.services.logger, signal: new AbortController().signal, job: { id: "t", type: "t", attempts: 1, maxAttempts: 1, payload: {} } });
    for (const table of ["TelemetrySnapshot", "DeviceLog"] as const) {
      const days = (await listPartitions(raw(), table)).map((p) => p.start);
      for (let d = today - 1; d <= today + PARTITION_DAYS_AHEAD; d++) expect(days).toContain(d);
    }
    // rollup rows are rewritten by every snapshot of their bucket: their pages keep room for that
    const tomorrow = (table: "TelemetrySnapshot" | "TelemetryRollup5m" | "TelemetryRollup1h" | "DeviceLog") => partitionName(table, today + 1);
    expect(await fillfactors(raw(), [tomorrow("TelemetrySnapshot"), tomorrow("DeviceLog"), tomorrow("TelemetryRollup5m"), tomorrow("TelemetryRollup1h")]))
      .toEqual([100, 100, 90, 90]);
  });

  it("moves rows that landed in the default partition into their day's partition when it is made", async () => {
    const day = today - 12;
    // written past the service (no partition for that day): the default partition takes them
    await raw().query(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent") VALUES ($1::uuid, $2, 1), ($1::uuid, $3, 2)`,
      [device.deviceId, at(day, 1), at(day, 2)],
    );
    expect(await rowsByPartition(raw(), device.deviceId)).toEqual({ TelemetrySnapshot_default: 2 });
    expect(await ensurePartitions(raw(), "TelemetrySnapshot", [day])).toBe(1);
    expect(await rowsByPartition(raw(), device.deviceId)).toEqual({ [partitionName("TelemetrySnapshot", day)]: 2 });
  });

  it("drops whole partitions past the retention and leaves newer ones and their rows untouched", async () => {
    const retention = h.services.config.TELEMETRY_RETENTION_DAYS;
    const expired = [today - retention - 3, today - retention - 2];
    const kept = today - retention + 1;
    await sendAllTelemetry(h, device, [kept].flatMap((d) => [0, 6, 12, 18].map((hour) => ({ timestamp: at(d, hour), cpuUsagePercent: hour }))));
    // the expired days were stored when they were recent (ingest now puts such old snapshots into the rollups only)
    await ensurePartitions(raw(), "TelemetrySnapshot", expired);
    await raw().query(`INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp") SELECT $1::uuid, unnest($2::timestamptz[])`,
      [device.deviceId, expired.flatMap((d) => [0, 6, 12, 18].map((hour) => at(d, hour)))]);
    // a stray old row in the default partition goes by age, row by row
    await raw().query(`INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp") VALUES ($1::uuid, $2)`, [device.deviceId, at(today - retention - 30, 0)]);
    const before = await rowsByPartition(raw(), device.deviceId);

    const result = await pruneOnce(h.services);
    expect(result.snapshotPartitions).toBe(2);
    expect(result.snapshots).toBe(1);
    const after = await rowsByPartition(raw(), device.deviceId);
    const { [partitionName("TelemetrySnapshot", expired[0])]: _a, [partitionName("TelemetrySnapshot", expired[1])]: _b, TelemetrySnapshot_default: _c, ...newer } = before;
    expect(after).toEqual(newer);
    expect(after[partitionName("TelemetrySnapshot", kept)]).toBe(4);
    const days = (await listPartitions(raw(), "TelemetrySnapshot")).map((p) => p.start);
    expect(days).not.toContain(expired[0]);
    expect(days).not.toContain(expired[1]);
    expect(days).toContain(kept);
    // a snapshot of a dropped day sent again (a late backlog) is accepted, into the rollups only: no partition comes back
    const late = await sendTelemetry(h, device, [{ timestamp: at(expired[1], 3), cpuUsagePercent: 5 }]);
    expect(late.status).toBe(200);
    expect((await listPartitions(raw(), "TelemetrySnapshot")).map((p) => p.start)).not.toContain(expired[1]);
  });

  it("drops whole log partitions past the log retention and leaves newer lines untouched; an old line sent late goes by age", async () => {
    const retention = h.services.config.LOG_RETENTION_DAYS;
    const expired = [today - retention - 3, today - retention - 2];
    const kept = today - retention + 1;
    const line = (timestamp: string) => ({ timestamp, source: "app", message: `line of ${timestamp}` });
    expect((await sendLogs(h, device, [0, 6, 12, 18].map((hour) => line(at(kept, hour))))).status).toBe(200);
    // the expired days were stored when they were recent
    await ensurePartitions(raw(), "DeviceLog", expired);
    await raw().query(`INSERT INTO "DeviceLog" ("deviceId", "timestamp", "level", "source", "message") SELECT $1::uuid, t, 'info', 'app', 'expired' FROM unnest($2::timestamptz[]) t`,
      [device.deviceId, expired.flatMap((d) => [0, 6, 12, 18].map((hour) => at(d, hour)))]);
    // a line older than the retention sent now is accepted, into the default partition: no partition is made for it
    expect((await sendLogs(h, device, [line(at(today - retention - 30, 0))])).status).toBe(200);
    const before = await rowsByPartition(raw(), device.deviceId, "DeviceLog");
    expect(before).toMatchObject({ [partitionName("DeviceLog", expired[0])]: 4, [partitionName("DeviceLog", expired[1])]: 4, DeviceLog_default: 1 });

    const result = await pruneOnce(h.services);
    expect(result.logPartitions).toBe(2);
    expect(result.logLines).toBe(1);
    const { [partitionName("DeviceLog", expired[0])]: _a, [partitionName("DeviceLog", expired[1])]: _b, DeviceLog_default: _c, ...newer } = before;
    expect(await rowsByPartition(raw(), device.deviceId, "DeviceLog")).toEqual(newer);
    expect(newer[partitionName("DeviceLog", kept)]).toBe(4);
    const days = (await listPartitions(raw(), "DeviceLog")).map((p) => p.start);
    expect(days).not.toContain(expired[0]);
    expect(days).not.toContain(expired[1]);
    expect(days).toContain(kept);
    const page = await h.api("GET", `/api/v1/devices/${device.deviceId}/logs?source=app`, { key: acme.key });
    expect(page.body.items.map((l: { timestamp: string }) => l.timestamp)).toEqual([18, 12, 6, 0].map((hour) => at(kept, hour)));
  });

  it.runIf(Boolean(process.env.DATABASE_URL))("never refuses ingest when the partition cannot be made in time: the default partition takes the rows (PostgreSQL)", async () => {
    const day = today - 15;
    const holder = new pg.Client({ connectionString: (h.services.database.opened.pool as pg.Pool).options.connectionString });
    await holder.connect();
    try {
      // another session holds the lock under which the partition of that day would be made
      await holder.query(`SELECT pg_advisory_lock(hashtext($1))`, [`fleet_partition:${partitionName("TelemetrySnapshot", day)}`]);
      const res = await sendTelemetry(h, backlog, [{ timestamp: at(day, 3), cpuUsagePercent: 1 }]);
      expect(res.status).toBe(200);
      const where = await raw().query<{ partition: string }>(
        `SELECT tableoid::regclass::text AS "partition" FROM "TelemetrySnapshot" WHERE "deviceId" = $1::uuid AND "timestamp" = $2`, [backlog.deviceId, at(day, 3)]);
      expect(where.map((r) => r.partition)).toEqual(["\"TelemetrySnapshot_default\""]);
    } finally {
      await holder.end();
    }
    // the scheduled job or the next ingest of that day makes it and moves the row
    expect(await ensurePartitions(raw(), "TelemetrySnapshot", [day])).toBe(1);
    const moved = await raw().query<{ partition: string }>(
      `SELECT tableoid::regclass::text AS "partition" FROM "TelemetrySnapshot" WHERE "deviceId" = $1::uuid AND "timestamp" = $2`, [backlog.deviceId, at(day, 3)]);
    expect(moved.map((r) => r.partition)).toEqual([`"${partitionName("TelemetrySnapshot", day)}"`]);
  });

  it.runIf(Boolean(process.env.DATABASE_URL))("a process killed (-9) in the middle of a partition drop leaves the partition whole; the next retention run drops it (PostgreSQL)", async () => {
    const retention = h.services.config.TELEMETRY_RETENTION_DAYS;
    const day = today - retention - 5;
    const name = partitionName("TelemetrySnapshot", day);
    await ensurePartitions(raw(), "TelemetrySnapshot", [day]);
    await raw().query(`INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp") SELECT $1::uuid, $2::timestamptz + (g || ' seconds')::interval FROM generate_series(1, 500) g`,
      [device.deviceId, at(day, 1)]);
    const url = (h.services.database.opened.pool as pg.Pool).options.connectionString!;
    const reader = new pg.Client({ connectionString: url });
    await reader.connect();
    try {
      // a reader holds the partition, so the drop waits inside its statement
      await reader.query(`BEGIN; SELECT count(*) FROM "${name}"`);
      const dropper = spawn(process.execPath, ["--input-type=module", "-e", `
        import pg from "pg";
        const c = new pg.Client({ connectionString: ${JSON.stringify(url)}, application_name: "partition-dropper" });
        await c.connect();
        // lets the server notice a dead client while the statement waits (PostgreSQL 14+)
        await c.query("SET client_connection_check_interval = '100ms'");
        await c.query('SELECT "fleet_drop_partition"($1, $2, 0)', ["TelemetrySnapshot", ${JSON.stringify(name)}]);`], { cwd: process.cwd(), stdio: "ignore" });
      const waiting = async () => (await raw().query<{ n: number }>(
        `SELECT count(*)::int AS "n" FROM pg_stat_activity WHERE application_name = 'partition-dropper' AND wait_event_type = 'Lock'`))[0].n;
      for (let i = 0; (await waiting()) === 0; i++) {
        if (i > 200) throw new Error("the drop never started waiting");
        await new Promise((r) => setTimeout(r, 50));
      }
      dropper.kill("SIGKILL");
      // the server notices the dead client and rolls its statement back
      for (let i = 0; (await raw().query<{ n: number }>(`SELECT count(*)::int AS "n" FROM pg_stat_activity WHERE application_name = 'partition-dropper'`))[0].n > 0; i++) {
        if (i > 200) throw new Error("the killed client's backend is still there");
        await new Promise((r) => setTimeout(r, 50));
      }
      const { rows } = await reader.query<{ n: number }>(`SELECT count(*)::int AS "n" FROM "${name}"`);
      expect(rows[0].n).toBe(500);
    } finally {
      await reader.query("ROLLBACK").catch(() => undefined);
      await reader.end();
    }
    expect((await listPartitions(raw(), "TelemetrySnapshot")).map((p) => p.name)).toContain(name);
    const result = await pruneOnce(h.services);
    expect(result.snapshotPartitions).toBeGreaterThanOrEqual(1);
    expect((await listPartitions(raw(), "TelemetrySnapshot")).map((p) => p.name)).not.toContain(name);
    expect(await rowsByPartition(raw(), device.deviceId)).not.toHaveProperty(name);
  });
});
