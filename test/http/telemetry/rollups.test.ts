// Continuous rollups (docs/telemetry.md, "Rollups"): whatever the snapshots and however they
// are split into batches and ordered, (a) every 5-minute and hourly rollup row holds exactly
// the count, sum, min, max and last of each metric over the raw snapshots of its bucket, and
// (b) op 11 answered from rollups (mixed with raw snapshots at the edges of the range) equals
// the same series computed over the raw snapshots alone. A fast-check property on PGlite and
// PostgreSQL; and which source op 11 names for each interval.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertSnapshots } from "../../../src/modules/telemetry/ingest.js";
import { STORED_METRIC_NAMES, type StoredMetric } from "../../../src/modules/telemetry/metrics.js";
import { ROLLUPS, seriesSql } from "../../../src/modules/telemetry/rollups.js";
import { DAY_MS } from "../../../src/modules/telemetry/partitions.js";
import type { SnapshotInput } from "../../../src/modules/telemetry/schemas.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { insertDevices } from "../agent/fleet-support.js";

let h: Harness;
let acme: Tenant;
beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Rollups");
});
afterAll(() => h?.close());
const raw = () => h.services.database.opened.raw;
const retention = { get retentionDays() { return h.services.config.TELEMETRY_RETENTION_DAYS; } };

/** Three days ending yesterday midnight: inside every retention. */
const WINDOW_START = (Math.floor(Date.now() / DAY_MS) - 3) * DAY_MS;
const WINDOW_MS = 3 * DAY_MS;

const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 4 });
const snapshot = fc
  .record({
    offset: fc.integer({ min: 0, max: WINDOW_MS - 1 }),
    cpuUsagePercent: optional(fc.double({ min: 0, max: 100, noNaN: true })),
    memoryTotalBytes: optional(fc.integer({ min: 0, max: 64e9 })),
    memoryShare: fc.double({ min: 0, max: 1, noNaN: true }),
    diskTotalBytes: optional(fc.integer({ min: 1, max: 2e12 })),
    diskShare: fc.double({ min: 0, max: 1, noNaN: true }),
    uptimeSeconds: optional(fc.integer({ min: 0, max: 1e9 })),
    restartCount: optional(fc.integer({ min: 0, max: 1000 })),
    containersRunning: optional(fc.integer({ min: 0, max: 50 })),
    containersFailed: optional(fc.integer({ min: 0, max: 50 })),
    errorCount: optional(fc.integer({ min: 0, max: 10_000 })),
    reportsUsed: fc.boolean(),
  })
  .map(({ offset, memoryShare, diskShare, reportsUsed, ...m }): SnapshotInput => ({
    timestamp: new Date(WINDOW_START + offset).toISOString(),
    ...m,
    memoryUsedBytes: m.memoryTotalBytes !== undefined && reportsUsed ? Math.floor(m.memoryTotalBytes * memoryShare) : undefined,
    diskUsedBytes: m.diskTotalBytes !== undefined ? Math.floor(m.diskTotalBytes * diskShare) : undefined,
  }));
/** Snapshots clustered in a few hours (so buckets hold several), split into batches that arrive in any order. */
const batches = fc
  .tuple(fc.integer({ min: 0, max: WINDOW_MS - 6 * 3600_000 }), fc.array(snapshot, { minLength: 1, maxLength: 120 }), fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 6 }))
  .map(([shift, snapshots, sizes]) => {
    const clustered = snapshots.map((s) => ({ ...s, timestamp: new Date(WINDOW_START + shift + ((Date.parse(s.timestamp) - WINDOW_START) % (6 * 3600_000))).toISOString() }));
    const out: SnapshotInput[][] = [];
    for (let i = 0, k = 0; i < clustered.length; k++) out.push(clustered.slice(i, (i += sizes[k % sizes.length])));
    return out;
  });

const close = (actual: number | null | undefined, expected: number | null | undefined, what: string) => {
  if (expected == null) return expect(actual ?? null, what).toBeNull();
  expect(actual, what).not.toBeNull();
  expect(Math.abs(Number(actual) - Number(expected)), `${what}: ${actual} vs ${expected}`).toBeLessThanOrEqual(1e-9 * Math.max(1, Math.abs(Number(expected))));
};

/** Every rollup row of the device against the same aggregates computed over its raw snapshots. */
async function expectRollupsEqualRaw(deviceId: string) {
  for (const rollup of Object.values(ROLLUPS)) {
    const expected = await raw().query<Record<string, number | null> & { bucket: Date }>(
      `SELECT date_bin('${rollup.seconds} seconds', s."timestamp", TIMESTAMPTZ '1970-01-01Z') AS "bucket", count(*)::int AS "samples", max(s."timestamp") AS "lastAt",
              ${STORED_METRIC_NAMES.map((m) => `count(s."${m}")::int AS "${m}Count", coalesce(sum(s."${m}"), 0)::float8 AS "${m}Sum", min(s."${m}")::float8 AS "${m}Min",
                 max(s."${m}")::float8 AS "${m}Max", (array_agg(s."${m}"::float8 ORDER BY s."timestamp" DESC, s."id" DESC))[1] AS "${m}Last"`).join(", ")}
         FROM "TelemetrySnapshot" s WHERE s."deviceId" = $1::uuid GROUP BY 1 ORDER BY 1`,
      [deviceId],
    );
    const actual = await raw().query<Record<string, number | null> & { bucket: Date }>(
      `SELECT * FROM "${rollup.table}" WHERE "deviceId" = $1::uuid ORDER BY "bucket"`, [deviceId]);
    expect(actual.map((r) => new Date(r.bucket).toISOString())).toEqual(expected.map((r) => new Date(r.bucket).toISOString()));
    expected.forEach((want, i) => {
      const got = actual[i];
      expect(got.samples).toBe(want.samples);
      expect(new Date(got.lastAt as unknown as Date).getTime()).toBe(new Date(want.lastAt as unknown as Date).getTime());
      for (const m of STORED_METRIC_NAMES) {
        expect(got[`${m}Count`], `${rollup.table} ${m}Count`).toBe(want[`${m}Count`]);
        for (const part of ["Sum", "Min", "Max", "Last"]) close(got[`${m}${part}`], want[`${m}${part}`], `${rollup.table} ${m}${part}`);
      }
    });
  }
}

describe("rollups equal the raw data", () => {
  it("holds for any snapshots, any split into batches and any order of arrival; op 11 from rollups equals op 11 over raw snapshots", async () => {
    const [organizationId] = [acme.org.id];
    await fc.assert(
      fc.asyncProperty(
        batches,
        fc.constantFrom("5m", "1h", "1d"),
        fc.integer({ min: 0, max: WINDOW_MS }),
        fc.integer({ min: 0, max: WINDOW_MS }),
        async (parts, interval, a, b) => {
          const [deviceId] = await insertDevices(h, organizationId, [{ name: `rollup-${crypto.randomUUID()}` }]);
          for (const batch of parts) await insertSnapshots(raw(), { id: deviceId, organizationId }, batch, retention);
          await expectRollupsEqualRaw(deviceId);

          const from = new Date(WINDOW_START + Math.min(a, b)).toISOString();
          const to = new Date(WINDOW_START + Math.max(a, b)).toISOString();
          const res = await h.api("GET", `/api/v1/devices/${deviceId}/telemetry?from=${from}&to=${to}&interval=${interval}`, { key: acme.key });
          expect(res.status, res.text).toBe(200);
          const seconds = { "5m": 300, "1h": 3600, "1d": 86_400 }[interval];
          const rawOnly = seriesSql(seconds, [{ source: "raw", from: Date.parse(from), to: Date.parse(to) }]);
          const want = await raw().query<Record<string, number | null> & { bucket: Date; samples: number }>(rawOnly.text, [deviceId, ...rawOnly.values]);
          expect(res.body.data.map((d: { timestamp: string }) => d.timestamp)).toEqual(want.map((r) => new Date(r.bucket).toISOString()));
          expect(res.body.total).toBe(want.reduce((n, r) => n + r.samples, 0));
          want.forEach((w, i) => {
            const got = res.body.data[i];
            expect(got.samples).toBe(w.samples);
            for (const m of [...STORED_METRIC_NAMES, "memoryUsagePercent", "diskUsagePercent"] as (StoredMetric | "memoryUsagePercent")[]) {
              close(got[m], w[m], `${interval} bucket ${got.timestamp} ${m}`);
            }
          });
        },
      ),
      { numRuns: 25 },
    );
  }, 240_000);
});

describe("op 11 names its source", () => {
  it("reads 1m from raw snapshots, 5m from 5-minute rollups, 1h and 1d from hourly rollups, with raw edges", async () => {
    const organizationId = acme.org.id;
    const [deviceId] = await insertDevices(h, organizationId, [{ name: "rollup-sources" }]);
    const start = WINDOW_START + 3600_000;
    await insertSnapshots(raw(), { id: deviceId, organizationId }, Array.from({ length: 240 }, (_, i) => ({ timestamp: new Date(start + i * 15_000).toISOString(), cpuUsagePercent: i % 100 })), retention);
    const get = (interval: string, from: number, to: number) =>
      h.api("GET", `/api/v1/devices/${deviceId}/telemetry?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}&interval=${interval}`, { key: acme.key });

    const minute = await get("1m", start, start + 3600_000 - 1);
    expect(minute.body).toMatchObject({ source: "raw", sources: [{ source: "raw" }], total: 240 });
    const five = await get("5m", start, start + 3600_000 - 1);
    expect(five.body).toMatchObject({ source: "rollup-5m", sources: [{ source: "rollup-5m" }], total: 240 });
    const hourAligned = await get("1h", start, start + 3600_000 - 1);
    expect(hourAligned.body).toMatchObject({ source: "rollup-1h", sources: [{ source: "rollup-1h", from: new Date(start).toISOString(), to: new Date(start).toISOString() }] });
    // a range starting and ending inside hours: raw for the partial hours at both edges
    const day = await get("1d", start - 1800_000, start + 2 * 3600_000 + 60_000);
    expect(day.body.source).toBe("rollup-1h");
    expect(day.body.sources.map((s: { source: string }) => s.source)).toEqual(["raw", "rollup-1h", "raw"]);
    expect(day.body.total).toBe(240);
    expect(day.body.data).toHaveLength(1);
    // inside one hour: no whole rollup bucket, raw only
    const inside = await get("1h", start + 60_000, start + 120_000);
    expect(inside.body).toMatchObject({ source: "raw", total: 5 });
  });
});
