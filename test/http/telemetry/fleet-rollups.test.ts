// The whole-fleet telemetry series precomputed per organization (docs/telemetry.md, "Fleet-wide
// telemetry series"): snapshots sent through the agent route mark their buckets dirty, the
// telemetry.fleet-rollups job recomputes them into TelemetryFleetRollup, and the whole-fleet
// answer (read from there) equals, field by field, the per-device computation a selector
// matching every device runs; a late batch marks its bucket again, also while a claim runs; a
// crashed run's claims are recomputed by the next; another organization never
// counts; retention removes deleted devices, old rows and deleted organizations' rows; the
// upgrade marks the buckets the existing rollups hold. On PGlite and PostgreSQL.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyMigrations, readMigrations } from "../../../src/db/migrate.js";
import { telemetryJobs } from "../../../src/modules/telemetry/jobs.js";
import { pruneOnce } from "../../../src/modules/telemetry/retention.js";
import { DAY_MS } from "../../../src/modules/telemetry/partitions.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { eventually } from "../../support/server-process.js";
import { enrolledDevices, freshDatabase, sendTelemetry, type EnrolledDevice } from "./support.js";

const MIGRATION = readMigrations().find((m) => m.name.endsWith("_fleet_telemetry_rollups"))!.name;
const MIN = 60_000;
const HOUR = 60 * MIN;
/** Two days ago, 22:00 UTC: the data spans three hours and two days (midnight at +2 h). */
const BASE = (Math.floor(Date.now() / DAY_MS) - 2) * DAY_MS + 22 * HOUR;
const at = (ms: number) => new Date(BASE + ms).toISOString();
const range = `from=${at(0)}&to=${at(3 * HOUR - 1)}`;

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let devices: EnrolledDevice[];

type Point = { timestamp: string; devicesReporting: number; cpuUsagePercentAvg: number | null; cpuUsagePercentP95: number | null; containersFailed: number; devicesWithFailedContainers: number; computedAt?: string };

async function runFleetRollupJob() {
  const job = telemetryJobs(h.services.config).schedules.find((s) => s.name === "telemetry.fleet-rollups")!;
  await job.run({ services: h.services, logger: h.services.logger, signal: new AbortController().signal, job: { id: "t", type: "t", attempts: 1, maxAttempts: 1, payload: {} } });
}

async function series(tenant: Tenant, interval: string, labels?: string): Promise<Point[]> {
  const res = await h.api("GET", `/api/v1/fleet/telemetry?${range}&interval=${interval}${labels ? `&labels=${labels}` : ""}`, { key: tenant.key });
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

/** The two answers agree field by field (floats to 1e-9: the sum order of avg() may differ). */
function expectSameSeries(fleet: Point[], perDevice: Point[]) {
  expect(fleet.map((p) => p.timestamp)).toEqual(perDevice.map((p) => p.timestamp));
  for (const [i, p] of fleet.entries()) {
    const q = perDevice[i];
    expect({ ...p, cpuUsagePercentAvg: null, cpuUsagePercentP95: null, computedAt: undefined }, p.timestamp)
      .toEqual({ ...q, cpuUsagePercentAvg: null, cpuUsagePercentP95: null, computedAt: undefined });
    for (const field of ["cpuUsagePercentAvg", "cpuUsagePercentP95"] as const) {
      if (q[field] === null) expect(p[field], `${p.timestamp} ${field}`).toBeNull();
      else expect(p[field], `${p.timestamp} ${field}`).toBeCloseTo(q[field]!, 9);
    }
  }
}

async function dirtyMarks(organizationId: string) {
  return h.services.prisma.$queryRaw<{ interval: string; bucket: Date; claimed: boolean }[]>`
    SELECT "interval", "bucket", "claimed" FROM "TelemetryFleetDirty" WHERE "organizationId" = ${organizationId}::uuid ORDER BY "interval", "bucket"`;
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Fleet Rollups");
  globex = await h.createTenant("Globex Fleet Rollups");
  devices = await enrolledDevices(h, acme, 3, { fleet: "all" });
  // Per device: several 5-minute buckets in the first hour, the next hour, and one after midnight.
  const plan: Array<Array<{ t: number; cpu?: number; failed?: number }>> = [
    [{ t: 1 * MIN, cpu: 10 }, { t: 3 * MIN, cpu: 30 }, { t: 12 * MIN, cpu: 50, failed: 1 }, { t: 70 * MIN, cpu: 20 }, { t: 125 * MIN, cpu: 5 }],
    [{ t: 2 * MIN, cpu: 80, failed: 2 }, { t: 14 * MIN, cpu: 60 }, { t: 95 * MIN, cpu: 40 }, { t: 150 * MIN, cpu: 90, failed: 3 }],
    [{ t: 4 * MIN }, { t: 13 * MIN, cpu: 25 }, { t: 121 * MIN, cpu: 35 }], // one snapshot without CPU
  ];
  for (const [i, snapshots] of plan.entries()) {
    const res = await sendTelemetry(h, devices[i], snapshots.map((s) => ({ timestamp: at(s.t), cpuUsagePercent: s.cpu, containersFailed: s.failed ?? 0 })));
    expect(res.status, res.text).toBe(200);
  }
  // Another organization, the same buckets, extreme values: would change every figure of acme's.
  const [theirs] = await enrolledDevices(h, globex, 1, { fleet: "all" });
  const res = await sendTelemetry(h, theirs, [{ timestamp: at(1 * MIN), cpuUsagePercent: 100, containersFailed: 7 }, { timestamp: at(125 * MIN), cpuUsagePercent: 100, containersFailed: 7 }]);
  expect(res.status, res.text).toBe(200);
}, 120_000);
afterAll(() => h?.close());

describe("the whole-fleet series from TelemetryFleetRollup", () => {
  it("ingest marks the touched 5-minute, hourly and daily buckets dirty", async () => {
    const marks = await dirtyMarks(acme.org.id);
    const of = (interval: string) => marks.filter((m) => m.interval === interval).map((m) => new Date(m.bucket).toISOString());
    expect(of("1d")).toEqual([new Date(BASE - 22 * HOUR).toISOString(), new Date(BASE + 2 * HOUR).toISOString()]);
    expect(of("1h")).toEqual([at(0), at(HOUR), at(2 * HOUR)]);
    expect(of("5m")).toEqual([0, 10, 70, 95, 120, 125, 150].map((m) => at(m * MIN)));
    expect(marks.every((m) => !m.claimed)).toBe(true);
  });

  it("after the job, equals the per-device computation at 5m, 1h and 1d, is what TelemetryFleetRollup holds, and leaves no mark", async () => {
    await runFleetRollupJob();
    expect(await dirtyMarks(acme.org.id)).toEqual([]);
    for (const interval of ["5m", "1h", "1d"]) {
      const fleet = await series(acme, interval);
      const perDevice = await series(acme, interval, "fleet=all");
      expect(fleet.length, interval).toBeGreaterThan(1);
      expect(fleet.every((p) => typeof p.computedAt === "string"), interval).toBe(true);
      expect(perDevice.some((p) => "computedAt" in p), interval).toBe(false);
      expectSameSeries(fleet, perDevice);
      const stored = await h.services.prisma.$queryRaw<Array<{ bucket: Date; devicesReporting: number; cpuAvg: number | null; cpuP95: number | null; containersFailed: number; devicesWithFailedContainers: number; computedAt: Date }>>`
        SELECT * FROM "TelemetryFleetRollup" WHERE "organizationId" = ${acme.org.id}::uuid AND "interval" = ${interval} ORDER BY "bucket"`;
      expect(stored.map((r): Point => ({
        timestamp: new Date(r.bucket).toISOString(), devicesReporting: r.devicesReporting, cpuUsagePercentAvg: r.cpuAvg, cpuUsagePercentP95: r.cpuP95,
        containersFailed: r.containersFailed, devicesWithFailedContainers: r.devicesWithFailedContainers, computedAt: new Date(r.computedAt).toISOString(),
      }))).toEqual(fleet);
    }
    // concrete figures of the first hour: 3 devices; CPU per device 30 (10, 30, 50), 70 (80, 60), 25 (one snapshot without)
    const [firstHour] = await series(acme, "1h");
    expect(firstHour).toMatchObject({ timestamp: at(0), devicesReporting: 3, containersFailed: 3, devicesWithFailedContainers: 2 });
    expect(firstHour.cpuUsagePercentAvg).toBeCloseTo((30 + 70 + 25) / 3, 9);
    // the day after midnight: devices 1, 2, 3 each report once or twice
    const days = await series(acme, "1d");
    expect(days.map((d) => d.devicesReporting)).toEqual([3, 3]);
  });

  it("a late batch into a computed hour marks it; the answer is the old one until the job runs, then the per-device one", async () => {
    const before = await series(acme, "1h");
    const res = await sendTelemetry(h, devices[2], [{ timestamp: at(20 * MIN), cpuUsagePercent: 99, containersFailed: 4 }]);
    expect(res.status, res.text).toBe(200);
    const marks = (await dirtyMarks(acme.org.id)).map((m) => `${m.interval} ${new Date(m.bucket).toISOString()}`);
    expect(marks).toEqual([`1d ${new Date(BASE - 22 * HOUR).toISOString()}`, `1h ${at(0)}`, `5m ${at(20 * MIN)}`]);
    expect(await series(acme, "1h")).toEqual(before);

    await runFleetRollupJob();
    const after = await series(acme, "1h");
    expectSameSeries(after, await series(acme, "1h", "fleet=all"));
    expect(after[0].cpuUsagePercentAvg).toBeCloseTo((30 + 70 + (25 + 99) / 2) / 3, 9);
    expect(after[0]).toMatchObject({ containersFailed: 7, devicesWithFailedContainers: 3 });
    expect(after.slice(1)).toEqual(before.slice(1)); // the other hours were not recomputed
    for (const interval of ["5m", "1d"]) expectSameSeries(await series(acme, interval), await series(acme, interval, "fleet=all"));
    expect(await dirtyMarks(acme.org.id)).toEqual([]);
  });

  it("keeps organizations apart: another organization's devices never count in the fleet rows or the answer", async () => {
    const ours = await h.services.prisma.$queryRaw<{ n: number }[]>`
      SELECT max("devicesReporting")::int AS "n" FROM "TelemetryFleetRollup" WHERE "organizationId" = ${acme.org.id}::uuid`;
    expect(ours[0].n).toBe(3);
    const theirs = await series(globex, "1h");
    expect(theirs.map(({ computedAt, ...p }) => p)).toEqual([
      { timestamp: at(0), devicesReporting: 1, cpuUsagePercentAvg: 100, cpuUsagePercentP95: 100, containersFailed: 7, devicesWithFailedContainers: 1 },
      { timestamp: at(2 * HOUR), devicesReporting: 1, cpuUsagePercentAvg: 100, cpuUsagePercentP95: 100, containersFailed: 7, devicesWithFailedContainers: 1 },
    ]);
    expect((await series(acme, "1h")).every((p) => p.cpuUsagePercentP95! < 100)).toBe(true);
  });
});

describe("snapshots older than the raw retention", () => {
  it("go into the rollups only and mark their buckets too", async () => {
    const old = (Math.floor(Date.now() / DAY_MS) - h.services.config.TELEMETRY_RETENTION_DAYS - 5) * DAY_MS + 3 * HOUR;
    const res = await sendTelemetry(h, devices[0], [{ timestamp: new Date(old + MIN).toISOString(), cpuUsagePercent: 12 }]);
    expect(res.status, res.text).toBe(200);
    const marks = (await dirtyMarks(acme.org.id)).map((m) => `${m.interval} ${new Date(m.bucket).toISOString()}`);
    expect(marks).toEqual([`1d ${new Date(old - 3 * HOUR).toISOString()}`, `1h ${new Date(old).toISOString()}`, `5m ${new Date(old).toISOString()}`]);
    await runFleetRollupJob();
    const query = `/api/v1/fleet/telemetry?from=${new Date(old).toISOString()}&to=${new Date(old + HOUR - 1).toISOString()}&interval=1h`;
    const fleet = await h.api("GET", query, { key: acme.key });
    expect(fleet.body.data).toMatchObject([{ timestamp: new Date(old).toISOString(), devicesReporting: 1, cpuUsagePercentAvg: 12 }]);
    expectSameSeries(fleet.body.data, (await h.api("GET", `${query}&labels=fleet=all`, { key: acme.key })).body.data);
  });
});

describe("the job's claims", () => {
  it("claimed marks a crashed run left behind are recomputed by the next run", async () => {
    // a run claimed the second hour and died before its recompute committed; the row was stale
    await h.services.prisma.$executeRaw`
      UPDATE "TelemetryFleetRollup" SET "devicesReporting" = 99 WHERE "organizationId" = ${acme.org.id}::uuid AND "interval" = '1h' AND "bucket" = ${at(HOUR)}::timestamptz`;
    await h.services.prisma.$executeRaw`
      INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket", "claimed") VALUES (${acme.org.id}::uuid, '1h', ${at(HOUR)}::timestamptz, TRUE)`;
    expect((await series(acme, "1h"))[1]).toMatchObject({ timestamp: at(HOUR), devicesReporting: 99 });
    await runFleetRollupJob();
    const after = await series(acme, "1h");
    expect(after[1]).toMatchObject({ timestamp: at(HOUR), devicesReporting: 2 });
    expectSameSeries(after, await series(acme, "1h", "fleet=all"));
    expect(await dirtyMarks(acme.org.id)).toEqual([]);
  });

  it.runIf(Boolean(process.env.DATABASE_URL))("a batch arriving during a claim waits for it, then marks its bucket again for the next run (PostgreSQL)", async () => {
    const claim = new pg.Client({ connectionString: (h.services.database.opened.pool as pg.Pool).options.connectionString });
    await claim.connect();
    let pending: ReturnType<typeof sendTelemetry> | undefined;
    try {
      // another session in the middle of a claim: it holds the lock exclusively
      await claim.query("BEGIN");
      await claim.query(`SELECT pg_advisory_xact_lock(hashtextextended('telemetry-fleet-dirty', 0))`);
      pending = sendTelemetry(h, devices[0], [{ timestamp: at(40 * MIN), cpuUsagePercent: 70 }]);
      await eventually(async () => (await claim.query<{ n: number }>(
        `SELECT count(*)::int AS "n" FROM pg_locks WHERE "locktype" = 'advisory' AND "mode" = 'ShareLock' AND NOT "granted"`)).rows[0].n === 1,
      30_000, "the batch waiting for the claim");
      expect(await dirtyMarks(acme.org.id)).toEqual([]); // nothing of the batch is stored yet
      await claim.query("COMMIT");
      const res = await pending;
      expect(res.status, res.text).toBe(200);
    } finally {
      if (pending) await pending.catch(() => undefined);
      await claim.end();
    }
    const marks = (await dirtyMarks(acme.org.id)).map((m) => `${m.interval} ${new Date(m.bucket).toISOString()} ${m.claimed}`);
    expect(marks).toEqual([`1d ${new Date(BASE - 22 * HOUR).toISOString()} false`, `1h ${at(0)} false`, `5m ${at(40 * MIN)} false`]);
    await runFleetRollupJob();
    for (const interval of ["5m", "1h", "1d"]) expectSameSeries(await series(acme, interval), await series(acme, interval, "fleet=all"));
  });
});

describe("today's day bucket", () => {
  it("is recomputed at most every TELEMETRY_FLEET_DAY_REFRESH_SECONDS: its mark waits while the row is younger; the 5-minute and hourly buckets do not wait", async () => {
    const tenant = await h.createTenant("Initech Fleet Day");
    const [device] = await enrolledDevices(h, tenant, 1, { fleet: "day" });
    // The snapshots stay within the day of the first one, even when the test runs across
    // midnight UTC (the claim treats any day's row alike: by its age).
    const firstAt = Date.now() - 60_000;
    const dayStart = Math.floor(firstAt / DAY_MS) * DAY_MS;
    const today = new Date(dayStart).toISOString();
    const now = (agoMs: number) => new Date(Math.min(Date.now() - agoMs, dayStart + DAY_MS - 1)).toISOString();
    const dayRow = async () => (await h.services.prisma.$queryRaw<{ cpuAvg: number; computedAt: Date }[]>`
      SELECT "cpuAvg", "computedAt" FROM "TelemetryFleetRollup" WHERE "organizationId" = ${tenant.org.id}::uuid AND "interval" = '1d' AND "bucket" = ${today}::timestamptz`)[0];
    const todayRange = () => `from=${today}&to=${now(0)}`;
    const fleetToday = async (interval: string, labels = "") =>
      (await h.api("GET", `/api/v1/fleet/telemetry?${todayRange()}&interval=${interval}${labels}`, { key: tenant.key })).body.data as Point[];

    expect((await sendTelemetry(h, device, [{ timestamp: new Date(firstAt).toISOString(), cpuUsagePercent: 10 }])).status).toBe(200);
    await runFleetRollupJob();
    const first = await dayRow();
    expect(first.cpuAvg).toBe(10); // a day without a row is computed at once
    expect(await dirtyMarks(tenant.org.id)).toEqual([]);

    expect((await sendTelemetry(h, device, [{ timestamp: now(30_000), cpuUsagePercent: 30 }])).status).toBe(200);
    await runFleetRollupJob();
    // the 5-minute and hourly buckets are recomputed; the day keeps its row and its mark
    for (const interval of ["5m", "1h"]) expectSameSeries(await fleetToday(interval), await fleetToday(interval, "&labels=fleet=day"));
    expect(await dayRow()).toEqual(first);
    expect((await dirtyMarks(tenant.org.id)).map((m) => `${m.interval} ${new Date(m.bucket).toISOString()} ${m.claimed}`)).toEqual([`1d ${today} false`]);

    // once the row is older than the refresh period, the next run recomputes the day
    const refresh = h.services.config.TELEMETRY_FLEET_DAY_REFRESH_SECONDS;
    expect(refresh).toBe(600);
    await h.services.prisma.$executeRaw`
      UPDATE "TelemetryFleetRollup" SET "computedAt" = now() - ${refresh + 1} * INTERVAL '1 second'
       WHERE "organizationId" = ${tenant.org.id}::uuid AND "interval" = '1d'`;
    await runFleetRollupJob();
    expect((await dayRow()).cpuAvg).toBeCloseTo(20, 9);
    expect(await dirtyMarks(tenant.org.id)).toEqual([]);
    expectSameSeries(await fleetToday("1d"), await fleetToday("1d", "&labels=fleet=day"));
  });
});

describe("the retention job and the whole-fleet series", () => {
  it("a deleted device leaves the whole-fleet figures once the sweep marks its buckets and the job runs", async () => {
    const del = await h.api("DELETE", `/api/v1/devices/${devices[1].deviceId}`, { key: acme.key });
    expect(del.status, del.text).toBeLessThan(300);
    const withoutIt = await series(acme, "1h", "fleet=all");
    expect(withoutIt[0].devicesReporting).toBe(2); // the selector path drops it at once
    expect((await series(acme, "1h"))[0].devicesReporting).toBe(3); // the precomputed figures until the sweep

    const pruned = await pruneOnce(h.services);
    expect(pruned.orphanDevices).toBe(1);
    expect((await dirtyMarks(acme.org.id)).length).toBeGreaterThan(0);
    await runFleetRollupJob();
    for (const interval of ["5m", "1h", "1d"]) expectSameSeries(await series(acme, interval), await series(acme, interval, "fleet=all"));
    // device 1 alone reported at 95 minutes: that bucket's row is gone
    expect((await series(acme, "5m")).map((p) => p.timestamp)).not.toContain(at(95 * MIN));
  });

  it("deletes fleet rows and marks past the retention of their rollup, and those of deleted organizations", async () => {
    const gone = "00000000-0000-4000-8000-0000000000ff";
    await h.services.prisma.$executeRaw`
      INSERT INTO "TelemetryFleetRollup" ("organizationId", "interval", "bucket", "devicesReporting", "containersFailed", "devicesWithFailedContainers")
      VALUES (${gone}::uuid, '1h', ${at(0)}::timestamptz, 1, 0, 0)`;
    await h.services.prisma.$executeRaw`INSERT INTO "TelemetryFleetDirty" ("organizationId", "interval", "bucket") VALUES (${gone}::uuid, '1h', ${at(0)}::timestamptz)`;
    const count = async (table: "TelemetryFleetRollup" | "TelemetryFleetDirty", organizationId: string, interval: string) =>
      (await h.services.prisma.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS "n" FROM "${table}" WHERE "organizationId" = $1::uuid AND "interval" = $2`, organizationId, interval))[0].n;
    const before = { "5m": await count("TelemetryFleetRollup", acme.org.id, "5m"), "1h": await count("TelemetryFleetRollup", acme.org.id, "1h") };
    expect(before["5m"]).toBeGreaterThan(0);

    // 90 days (the 5-minute retention) after the first hour ended: its 5-minute rows go, hourly and daily ones stay (730 days)
    await pruneOnce(h.services, { now: new Date(BASE + HOUR + h.services.config.TELEMETRY_ROLLUP_5M_RETENTION_DAYS * DAY_MS) });
    const fiveMinutes = await series(acme, "5m");
    expect(fiveMinutes.length).toBeGreaterThan(0);
    expect(fiveMinutes.every((p) => p.timestamp >= at(HOUR))).toBe(true);
    expect(await count("TelemetryFleetRollup", acme.org.id, "5m")).toBe(fiveMinutes.length);
    expect(await count("TelemetryFleetRollup", acme.org.id, "1h")).toBe(before["1h"]);
    expect(await count("TelemetryFleetRollup", gone, "1h")).toBe(0);
    expect(await count("TelemetryFleetDirty", gone, "1h")).toBe(0);
  });
});

describe("the migration adding the fleet rollups", () => {
  const database = freshDatabase();

  it("marks every bucket the existing rollups hold, per organization, so the job fills the table", async () => {
    const opened = database();
    await applyMigrations(opened.raw, readMigrations().filter((m) => m.name < MIGRATION));
    const [orgA, orgB] = ["00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"];
    const rows: Array<[string, string, number]> = [
      // two devices of A in the same 5 minutes, one of B; an hour of A on another day
      ["00000000-0000-4000-8000-000000000001", orgA, BASE],
      ["00000000-0000-4000-8000-000000000002", orgA, BASE + MIN],
      ["00000000-0000-4000-8000-000000000003", orgB, BASE],
      ["00000000-0000-4000-8000-000000000001", orgA, BASE + 3 * HOUR],
    ];
    for (const table of ["TelemetryRollup5m", "TelemetryRollup1h"]) {
      const step = table === "TelemetryRollup5m" ? 5 * MIN : HOUR;
      await opened.raw.query(
        `INSERT INTO "${table}" ("deviceId", "organizationId", "bucket", "samples", "lastAt")
         SELECT d, o, b, 1, b FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[]) AS x(d, o, b) ON CONFLICT DO NOTHING`,
        [rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => new Date(Math.floor(r[2] / step) * step).toISOString())],
      );
    }
    expect(await applyMigrations(opened.raw)).toContain(MIGRATION);
    const marks = await opened.raw.query<{ organizationId: string; interval: string; bucket: Date; claimed: boolean }>(
      `SELECT "organizationId"::text AS "organizationId", "interval", "bucket", "claimed" FROM "TelemetryFleetDirty" ORDER BY 1, 2, 3`);
    const day = (ms: number) => new Date(Math.floor(ms / DAY_MS) * DAY_MS).toISOString();
    expect(marks.map((m) => [m.organizationId, m.interval, new Date(m.bucket).toISOString(), m.claimed])).toEqual([
      [orgA, "1d", day(BASE), false],
      [orgA, "1d", day(BASE + 3 * HOUR), false],
      [orgA, "1h", at(0), false],
      [orgA, "1h", at(3 * HOUR), false],
      [orgA, "5m", at(0), false],
      [orgA, "5m", at(3 * HOUR), false],
      [orgB, "1d", day(BASE), false],
      [orgB, "1h", at(0), false],
      [orgB, "5m", at(0), false],
    ]);
  });
});
