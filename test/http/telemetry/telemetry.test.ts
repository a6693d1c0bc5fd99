// Telemetry through HTTP: the agent's ingest (validation, future timestamps, device tokens
// only), the downsampled series of spec op 11 against values computed here for every
// interval, the newest snapshot (op 13), raw values, tenant isolation, security, retention.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTRPCClient, httpBatchLink } from "@trpc/client";
import type { AppRouter } from "../../../src/index.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { insertDevices } from "../agent/fleet-support.js";
import { pruneOnce } from "../../../src/modules/telemetry/retention.js";
import { telemetryWriterOf } from "../../../src/modules/telemetry/ingest.js";
import { ensurePartitions } from "../../../src/modules/telemetry/partitions.js";
import { enrolledDevices, issuePaths, sendAllTelemetry, sendTelemetry, type EnrolledDevice } from "./support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let device: EnrolledDevice; // acme: the series device
let other: EnrolledDevice; // acme: recent telemetry
let foreign: EnrolledDevice; // globex

const DAY = 86_400_000;
// Three hours of snapshots every 20 seconds, starting 22:00 UTC two days ago: crosses midnight,
// so the 1d interval has two buckets.
const START = Math.floor(Date.now() / DAY) * DAY - 2 * DAY + 22 * 3600_000;
const STEP = 20_000;
const COUNT = 540;

interface Sample {
  t: number;
  cpuUsagePercent?: number;
  memoryUsedBytes: number;
  memoryTotalBytes: number;
  diskUsedBytes: number;
  diskTotalBytes: number;
  uptimeSeconds: number;
  restartCount: number;
  containersRunning: number;
  containersFailed: number;
  errorCount: number;
}

const samples: Sample[] = Array.from({ length: COUNT }, (_, i) => ({
  t: START + i * STEP,
  // every 10th snapshot does not report CPU: averages skip it
  ...(i % 10 === 3 ? {} : { cpuUsagePercent: ((i * 37) % 1000) / 10 }),
  memoryUsedBytes: 1_000_000_000 + i * 3_000_000,
  // the total changes too: percentages are used over total across the bucket
  memoryTotalBytes: i % 2 === 0 ? 4_000_000_000 : 8_000_000_000,
  diskUsedBytes: 50_000_000_000 + ((i * 7919) % 1000) * 1_000_000,
  diskTotalBytes: 100_000_000_000,
  uptimeSeconds: 1000 + i * 20,
  restartCount: Math.floor(i / 50),
  containersRunning: i % 5,
  containersFailed: i % 3 === 0 ? 1 : 0,
  errorCount: i % 4,
}));

const toBody = (s: Sample) => {
  const { t, ...metrics } = s;
  return { timestamp: new Date(t).toISOString(), ...metrics };
};

/** What op 11 must answer, computed here: gauges averaged, counters max, errorCount summed. */
function expectedBuckets(seconds: number, from: number, to: number) {
  const buckets = new Map<number, Sample[]>();
  for (const s of samples) {
    if (s.t < from || s.t > to) continue;
    const b = Math.floor(s.t / (seconds * 1000)) * seconds * 1000;
    if (!buckets.has(b)) buckets.set(b, []);
    buckets.get(b)!.push(s);
  }
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  return [...buckets.entries()].sort(([a], [b]) => a - b).map(([b, ss]) => ({
    timestamp: new Date(b).toISOString(),
    samples: ss.length,
    cpuUsagePercent: avg(ss.filter((s) => s.cpuUsagePercent !== undefined).map((s) => s.cpuUsagePercent!)),
    memoryUsedBytes: avg(ss.map((s) => s.memoryUsedBytes)),
    memoryTotalBytes: avg(ss.map((s) => s.memoryTotalBytes)),
    memoryUsagePercent: (100 * sum(ss.map((s) => s.memoryUsedBytes))) / sum(ss.map((s) => s.memoryTotalBytes)),
    diskUsedBytes: avg(ss.map((s) => s.diskUsedBytes)),
    diskTotalBytes: avg(ss.map((s) => s.diskTotalBytes)),
    diskUsagePercent: (100 * sum(ss.map((s) => s.diskUsedBytes))) / sum(ss.map((s) => s.diskTotalBytes)),
    uptimeSeconds: Math.max(...ss.map((s) => s.uptimeSeconds)),
    restartCount: Math.max(...ss.map((s) => s.restartCount)),
    containersRunning: avg(ss.map((s) => s.containersRunning)),
    containersFailed: avg(ss.map((s) => s.containersFailed)),
    errorCount: sum(ss.map((s) => s.errorCount)),
  }));
}

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Telemetry");
  globex = await h.createTenant("Globex Telemetry");
  [device, other] = await enrolledDevices(h, acme, 2);
  [foreign] = await enrolledDevices(h, globex, 1);
  await sendAllTelemetry(h, device, samples.map(toBody));
});
afterAll(() => h?.close());

const countOf = async (deviceId: string) => h.services.prisma.telemetrySnapshot.count({ where: { deviceId } });

describe("ingest: POST /api/v1/agent/telemetry", () => {
  it("stores a batch and answers how many snapshots it accepted", async () => {
    const before = await countOf(other.deviceId);
    const now = Date.now();
    const res = await sendTelemetry(h, other, [
      { timestamp: new Date(now - 20 * 60_000).toISOString(), cpuUsagePercent: 10, memoryUsedBytes: 1000, memoryTotalBytes: 4000 },
      { timestamp: new Date(now - 10 * 60_000).toISOString(), cpuUsagePercent: 20 },
      // within the allowed clock skew
      { timestamp: new Date(now + 2 * 60_000).toISOString(), cpuUsagePercent: 30, memoryUsedBytes: 3000, memoryTotalBytes: 4000, diskUsedBytes: 5, diskTotalBytes: 10 },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ accepted: 3 });
    expect(await countOf(other.deviceId)).toBe(before + 3);
  });

  it("stores a batch sent again (its answer lost on the way) once: raw rows, the latest snapshot and the rollups unchanged", async () => {
    const before = await countOf(other.deviceId);
    const at = Date.now() - 2 * 3600_000; // out of the last hour, which a later test counts
    const batch = [
      { timestamp: new Date(at).toISOString(), cpuUsagePercent: 41, memoryUsedBytes: 1000, memoryTotalBytes: 4000 },
      { timestamp: new Date(at + 1000).toISOString(), cpuUsagePercent: 42 },
    ];
    const rollupSamples = async () => (await h.services.prisma.$queryRawUnsafe<{ samples: number }[]>(
      `SELECT coalesce(sum("samples"), 0)::int AS "samples" FROM "TelemetryRollup5m" WHERE "deviceId" = $1::uuid`, other.deviceId))[0].samples;
    const first = await sendTelemetry(h, other, batch);
    expect(first.status, first.text).toBe(200);
    const latest = await h.services.prisma.deviceTelemetryLatest.findUniqueOrThrow({ where: { deviceId: other.deviceId } });
    const summed = await rollupSamples();
    // the agent, not knowing the first send arrived, sends the same snapshots again with a newer one
    const again = await sendTelemetry(h, other, [...batch.map((s) => ({ ...s, cpuUsagePercent: 99 })), { timestamp: new Date(at + 2000).toISOString(), cpuUsagePercent: 43 }]);
    expect(again.status, again.text).toBe(200);
    expect(await countOf(other.deviceId)).toBe(before + 3);
    const stored = await h.services.prisma.telemetrySnapshot.findMany({ where: { deviceId: other.deviceId, timestamp: { gte: new Date(at), lte: new Date(at + 2000) } }, orderBy: { timestamp: "asc" }, select: { cpuUsagePercent: true } });
    expect(stored.map((s) => s.cpuUsagePercent)).toEqual([41, 42, 43]);
    expect(await rollupSamples()).toBe(summed + 1);
    // the newest of the device's snapshots is still the one it was, or the new one at at+2s
    const now = await h.services.prisma.deviceTelemetryLatest.findUniqueOrThrow({ where: { deviceId: other.deviceId } });
    expect(now.timestamp.getTime()).toBe(Math.max(latest.timestamp.getTime(), at + 2000));
  });

  it("puts batches that arrive together, of several devices and organizations, into one statement", async () => {
    const devices = [...(await enrolledDevices(h, acme, 3)).map((d) => ({ id: d.deviceId, organizationId: acme.org.id })),
      ...(await enrolledDevices(h, globex, 1)).map((d) => ({ id: d.deviceId, organizationId: globex.org.id }))];
    const writer = telemetryWriterOf(h.services);
    const before = { ...writer.stats };
    const timestamp = new Date(Math.floor(Date.now() / 300_000) * 300_000 - 300_000).toISOString();
    // handed over in one turn of the event loop, as the requests parsed together are
    const accepted = await Promise.all(devices.map((device, n) => writer.submit({ device, snapshots: [{ timestamp, cpuUsagePercent: n }] })));
    expect(accepted).toEqual([1, 1, 1, 1]);
    expect(writer.stats.statements - before.statements).toBe(1);
    for (const device of devices) expect(await countOf(device.id)).toBe(1);
  });

  it("stores concurrent batches of many devices and two organizations, each device's rows its own", async () => {
    const mine = await enrolledDevices(h, acme, 6);
    const [theirs] = await enrolledDevices(h, globex, 1);
    const senders = [...mine, theirs];
    const writer = telemetryWriterOf(h.services);
    const before = { ...writer.stats };
    const base = Math.floor(Date.now() / 300_000) * 300_000 - 3 * 300_000; // one 5-minute bucket, in the past
    // Two batches per device at once, in one bucket: the group commit may put both into one statement.
    const batchOf = (d: number, half: number) => Array.from({ length: 3 }, (_, i) => ({
      timestamp: new Date(base + (half * 3 + i) * 10_000).toISOString(), cpuUsagePercent: d * 10 + half * 3 + i, containersFailed: d,
    }));
    const results = await Promise.all(senders.flatMap((d, n) => [sendTelemetry(h, d, batchOf(n, 0)), sendTelemetry(h, d, batchOf(n, 1))]));
    expect(results.map((r) => r.status)).toEqual(results.map(() => 200));
    expect(results.map((r) => r.body)).toEqual(results.map(() => ({ accepted: 3 })));
    expect(writer.stats.rows - before.rows).toBe(senders.length * 6);
    // how many statements depends on how the requests met (the test above groups deterministically): never more than requests
    expect(writer.stats.statements - before.statements).toBeLessThanOrEqual(senders.length * 2);

    const ids = senders.map((d) => d.deviceId);
    const raw = h.services.database.opened.raw;
    const rollups = await raw.query<{ deviceId: string; organizationId: string; samples: number; cpuUsagePercentSum: number; cpuUsagePercentLast: number; containersFailedMax: number }>(
      `SELECT "deviceId", "organizationId", "samples", "cpuUsagePercentSum", "cpuUsagePercentLast", "containersFailedMax"
         FROM "TelemetryRollup5m" WHERE "deviceId" = ANY($1::uuid[]) AND "bucket" = $2::timestamptz ORDER BY "deviceId"`, [ids, new Date(base).toISOString()]);
    const latest = await raw.query<{ deviceId: string; organizationId: string; cpuUsagePercent: number }>(
      `SELECT "deviceId", "organizationId", "cpuUsagePercent" FROM "DeviceTelemetryLatest" WHERE "deviceId" = ANY($1::uuid[]) ORDER BY "deviceId"`, [ids]);
    const expected = senders.map((d, n) => ({ d, n, org: d === theirs ? globex.org.id : acme.org.id })).sort((a, b) => (a.d.deviceId < b.d.deviceId ? -1 : 1));
    expect(rollups).toEqual(expected.map(({ d, n, org }) => ({
      deviceId: d.deviceId, organizationId: org, samples: 6, cpuUsagePercentSum: 6 * n * 10 + 15, cpuUsagePercentLast: n * 10 + 5, containersFailedMax: n,
    })));
    expect(latest).toEqual(expected.map(({ d, n, org }) => ({ deviceId: d.deviceId, organizationId: org, cpuUsagePercent: n * 10 + 5 })));
    for (const { d } of expected) expect(await countOf(d.deviceId)).toBe(6);
  });

  it("refuses the whole batch when one item is invalid, naming its index", async () => {
    const before = await countOf(other.deviceId);
    const ok = { timestamp: new Date().toISOString(), cpuUsagePercent: 1 };
    const res = await sendTelemetry(h, other, [ok, ok, { ...ok, cpuUsagePercent: 150 }, ok]);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("BAD_REQUEST");
    expect(issuePaths(res.body)).toEqual(["snapshots.2.cpuUsagePercent"]);
    expect(res.body.issues[0].path).toEqual(["snapshots", "2", "cpuUsagePercent"]);
    expect(res.body.message).toMatch(/^Invalid input: snapshots\.2\.cpuUsagePercent: /);
    expect(await countOf(other.deviceId)).toBe(before);

    for (const [bad, field] of [
      [{ ...ok, memoryUsedBytes: 5, memoryTotalBytes: 4 }, "memoryUsedBytes"],
      [{ ...ok, restartCount: -1 }, "restartCount"],
      [{ ...ok, errorCount: 1.5 }, "errorCount"],
      [{ ...ok, cpuUsagePercent: null }, "cpuUsagePercent"], // never silently a 0
      [{ ...ok, cpuUsagePercent: "50" }, "cpuUsagePercent"],
      [{ ...ok, timestamp: "yesterday" }, "timestamp"],
      [{ cpuUsagePercent: 3 }, "timestamp"],
    ] as const) {
      const r = await sendTelemetry(h, other, [ok, bad]);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(issuePaths(r.body), JSON.stringify(bad)).toContain(`snapshots.1.${field}`);
    }
    expect(await countOf(other.deviceId)).toBe(before);
  });

  it("refuses timestamps in the future beyond the allowed skew", async () => {
    const res = await sendTelemetry(h, other, [
      { timestamp: new Date().toISOString(), cpuUsagePercent: 5 },
      { timestamp: new Date(Date.now() + 10 * 60_000).toISOString(), cpuUsagePercent: 5 },
    ]);
    expect(res.status).toBe(400);
    expect(issuePaths(res.body)).toEqual(["snapshots.1.timestamp"]);
    expect(res.body.issues[0].message).toMatch(/timestamp is in the future/);
  });

  it("takes at most 1,000 snapshots per batch, and at least one", async () => {
    const one = { timestamp: new Date(Date.now() - 3600_000).toISOString(), cpuUsagePercent: 1 };
    const tooMany = await sendTelemetry(h, other, Array.from({ length: 1001 }, () => one));
    expect(tooMany.status).toBe(400);
    expect(issuePaths(tooMany.body)).toEqual(["snapshots"]);
    expect((await sendTelemetry(h, other, [])).status).toBe(400);
  });

  it("accepts device tokens only", async () => {
    const body = { snapshots: [{ timestamp: new Date().toISOString(), cpuUsagePercent: 1 }] };
    expect((await h.api("POST", "/api/v1/agent/telemetry", { key: null, body })).status).toBe(401);
    expect((await h.api("POST", "/api/v1/agent/telemetry", { key: acme.key, body })).status).toBe(401);
    const session = await h.login(acme.user.email, acme.user.password);
    expect((await h.api("POST", "/api/v1/agent/telemetry", { key: null, token: session, body })).status).toBe(401);
  });
});

describe("op 11: GET /api/v1/devices/{id}/telemetry", () => {
  const from = new Date(START).toISOString();
  const to = new Date(START + COUNT * STEP - 1).toISOString();

  for (const [interval, seconds] of [["1m", 60], ["5m", 300], ["1h", 3600], ["1d", 86_400]] as const) {
    it(`downsamples into ${interval} buckets: averages for gauges, maxima for counters, sums of errors, percentages from used/total`, async () => {
      const res = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${from}&to=${to}&interval=${interval}`, { key: acme.key });
      expect(res.status, res.text).toBe(200);
      const expected = expectedBuckets(seconds, START, START + COUNT * STEP - 1);
      expect(res.body.total).toBe(COUNT);
      expect(res.body.interval).toBe(interval);
      expect(res.body.data).toHaveLength(expected.length);
      if (interval === "1d") expect(expected).toHaveLength(2);
      res.body.data.forEach((bucket: Record<string, unknown>, i: number) => {
        const want = expected[i];
        expect(bucket.deviceId).toBe(device.deviceId);
        expect(typeof bucket.id).toBe("string");
        expect(bucket.timestamp).toBe(want.timestamp);
        expect(bucket.samples).toBe(want.samples);
        for (const [metric, value] of Object.entries(want)) {
          if (metric === "timestamp" || metric === "samples") continue;
          expect(typeof bucket[metric], `${interval} ${metric}`).toBe("number");
          expect(bucket[metric] as number, `${interval} bucket ${i} ${metric}`).toBeCloseTo(value as number, 6);
        }
      });
    });
  }

  it("counts only the snapshots inside the range (both ends inclusive)", async () => {
    const a = START + 100 * STEP;
    const b = START + 199 * STEP;
    const res = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${new Date(a).toISOString()}&to=${new Date(b).toISOString()}&interval=1h`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.total).toBe(100);
    expect(res.body.data.reduce((n: number, d: { samples: number }) => n + d.samples, 0)).toBe(100);
  });

  it("defaults to the last hour until now at 1m", async () => {
    const res = await h.api("GET", `/api/v1/devices/${other.deviceId}/telemetry`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body.interval).toBe("1m");
    expect(Date.parse(res.body.to) - Date.parse(res.body.from)).toBe(3600_000);
    expect(Math.abs(Date.parse(res.body.to) - Date.now())).toBeLessThan(60_000);
    // the two snapshots of the last hour sent above; the one two minutes ahead is after "now"
    expect(res.body.total).toBe(2);
    // and the old series device has nothing in the last hour
    expect((await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry`, { key: acme.key })).body).toMatchObject({ total: 0, data: [] });
  });

  it("refuses a bad interval, a bad date, from after to, and too many buckets", async () => {
    const base = `/api/v1/devices/${device.deviceId}/telemetry`;
    for (const query of ["?interval=2m", "?interval=1w", "?from=notadate", `?from=${new Date().toISOString()}&to=${new Date(Date.now() - 1000).toISOString()}`, `?from=2020-01-01&to=2020-03-01&interval=1m`]) {
      const res = await h.api("GET", base + query, { key: acme.key });
      expect(res.status, query).toBe(400);
      expect(res.body.code).toBe("BAD_REQUEST");
    }
    // the field is named, with the forms it takes
    const yesterday = await h.api("GET", `${base}?from=yesterday`, { key: acme.key });
    expect(yesterday.body.issues).toEqual([{ path: ["from"], code: "invalid_union", message: expect.stringContaining("ISO 8601 date-time with offset") }]);
    // a plain date is ISO 8601 too (midnight UTC)
    expect((await h.api("GET", `${base}?from=2020-01-01&to=2020-01-02&interval=1h`, { key: acme.key })).status).toBe(200);
  });

  it("answers 404 for an unknown device and for another tenant's device", async () => {
    expect((await h.api("GET", `/api/v1/devices/${crypto.randomUUID()}/telemetry`, { key: acme.key })).status).toBe(404);
    const res = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry?from=${from}&to=${to}`, { key: globex.key });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("NOT_FOUND");
  });
});

describe("op 13: GET /api/v1/devices/{id}/telemetry/latest", () => {
  it("answers the newest snapshot with computed percentages", async () => {
    const res = await h.api("GET", `/api/v1/devices/${other.deviceId}/telemetry/latest`, { key: acme.key });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({
      deviceId: other.deviceId,
      cpuUsagePercent: 30,
      memoryUsedBytes: 3000,
      memoryTotalBytes: 4000,
      memoryUsagePercent: 75,
      diskUsedBytes: 5,
      diskTotalBytes: 10,
      diskUsagePercent: 50,
    });
    expect(typeof res.body.id).toBe("string");
    expect(res.body.uptimeSeconds).toBeUndefined(); // not reported: absent, not null or 0
    const series = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/latest`, { key: acme.key });
    const last = samples[samples.length - 1];
    expect(series.body.timestamp).toBe(new Date(last.t).toISOString());
    expect(series.body.memoryUsagePercent).toBeCloseTo((100 * last.memoryUsedBytes) / last.memoryTotalBytes, 9);
  });

  it("answers 404 for a device without telemetry, an unknown device and another tenant's device", async () => {
    const [silent] = await insertDevices(h, acme.org.id, [{ name: "silent" }]);
    const none = await h.api("GET", `/api/v1/devices/${silent}/telemetry/latest`, { key: acme.key });
    expect(none.status).toBe(404);
    expect(none.body.message).toMatch(/telemetry/i);
    expect((await h.api("GET", `/api/v1/devices/${crypto.randomUUID()}/telemetry/latest`, { key: acme.key })).status).toBe(404);
    expect((await h.api("GET", `/api/v1/devices/${other.deviceId}/telemetry/latest`, { key: globex.key })).status).toBe(404);
  });
});

describe("raw metric values: GET /api/v1/devices/{id}/telemetry/raw", () => {
  const from = new Date(START).toISOString();
  const to = new Date(START + COUNT * STEP).toISOString();

  it("pages every raw value of one metric in the range, newest first, skipping snapshots without it", async () => {
    const withCpu = samples.filter((s) => s.cpuUsagePercent !== undefined);
    const page1 = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/raw?metric=cpuUsagePercent&from=${from}&to=${to}&limit=10`, { key: acme.key });
    expect(page1.status, page1.text).toBe(200);
    expect(page1.body.total).toBe(withCpu.length);
    expect(page1.body.hasMore).toBe(true);
    expect(page1.body.items).toHaveLength(10);
    const newest = [...withCpu].reverse();
    page1.body.items.forEach((item: { timestamp: string; value: number }, i: number) => {
      expect(item.timestamp).toBe(new Date(newest[i].t).toISOString());
      expect(item.value).toBeCloseTo(newest[i].cpuUsagePercent!, 9);
    });
    const last = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/raw?metric=cpuUsagePercent&from=${from}&to=${to}&limit=10&offset=${withCpu.length - 3}`, { key: acme.key });
    expect(last.body.items).toHaveLength(3);
    expect(last.body.hasMore).toBe(false);
    const asc = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/raw?metric=memoryUsagePercent&from=${from}&to=${to}&limit=2&order=asc`, { key: acme.key });
    expect(asc.body.items[0].value).toBeCloseTo((100 * samples[0].memoryUsedBytes) / samples[0].memoryTotalBytes, 9);
  });

  it("refuses an unknown metric", async () => {
    const res = await h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/raw?metric=temperature`, { key: acme.key });
    expect(res.status).toBe(400);
  });
});

describe("security", () => {
  it("secures every telemetry read: 401, 403 without telemetry:read, 404 across tenants", async () => {
    for (const path of [
      `/api/v1/devices/${device.deviceId}/telemetry`,
      `/api/v1/devices/${device.deviceId}/telemetry/latest`,
      `/api/v1/devices/${device.deviceId}/telemetry/raw?metric=cpuUsagePercent`,
    ]) {
      await expectSecured(h, acme, globex, { method: "GET", path, permission: "telemetry:read", foreignPath: path });
    }
  });

  it("is callable through the typed tRPC client too", async () => {
    const client = createTRPCClient<AppRouter>({ links: [httpBatchLink({ url: `${h.url}/trpc`, headers: { "x-api-key": acme.key } })] });
    const latest = await client.telemetry.latest.query({ id: other.deviceId });
    expect(latest.cpuUsagePercent).toBe(30);
    const series = await client.telemetry.series.query({ id: device.deviceId, from: new Date(START).toISOString(), to: new Date(START + 3600_000 - 1).toISOString(), interval: "1h" });
    expect(series.total).toBe(180);
  });
});

describe("snapshots older than the raw retention", () => {
  it("are accepted into the rollups only: op 11 answers them from the rollups, raw snapshots and op 13 never see them", async () => {
    const [late] = await enrolledDevices(h, acme, 1);
    const old = Math.floor(Date.now() / DAY) * DAY - 45 * DAY + 10 * 3600_000;
    const recent = new Date(Date.now() - 60_000).toISOString();
    const res = await sendTelemetry(h, late, [
      { timestamp: new Date(old).toISOString(), cpuUsagePercent: 30 },
      { timestamp: new Date(old + 60_000).toISOString(), cpuUsagePercent: 50 },
      { timestamp: recent, cpuUsagePercent: 7 },
    ]);
    expect(res.status, res.text).toBe(200);
    expect(res.body.accepted).toBe(3);
    expect(await countOf(late.deviceId)).toBe(1);
    const latest = await h.api("GET", `/api/v1/devices/${late.deviceId}/telemetry/latest`, { key: acme.key });
    expect(latest.body).toMatchObject({ timestamp: recent, cpuUsagePercent: 7 });
    const series = await h.api("GET", `/api/v1/devices/${late.deviceId}/telemetry?from=${new Date(old - 3600_000).toISOString()}&to=${new Date(old + 3 * 3600_000).toISOString()}&interval=1h`, { key: acme.key });
    expect(series.body).toMatchObject({ source: "rollup-1h", total: 2, data: [{ timestamp: new Date(old).toISOString(), samples: 2, cpuUsagePercent: 40 }] });
  });
});

describe("retention", () => {
  it("prunes snapshots older than TELEMETRY_RETENTION_DAYS by dropping their day's partition, and the rows of deleted devices in chunks", async () => {
    // stored 40 days ago, when they were recent (ingest would now put them into the rollups only)
    const old = Math.floor(Date.now() / DAY) * DAY - 40 * DAY + 3600_000;
    await ensurePartitions(h.services.database.opened.raw, "TelemetrySnapshot", [Math.floor(old / DAY)]);
    await h.services.prisma.$executeRawUnsafe(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent") SELECT $1::uuid, $2::timestamptz + (g || ' seconds')::interval, g FROM generate_series(1, 25) g`,
      foreign.deviceId, new Date(old).toISOString());
    await sendTelemetry(h, foreign, [{ timestamp: new Date().toISOString(), cpuUsagePercent: 1 }]);
    const [doomed] = await insertDevices(h, globex.org.id, [{ name: "doomed" }]);
    await h.services.prisma.$executeRawUnsafe(
      `INSERT INTO "TelemetrySnapshot" ("deviceId", "timestamp", "cpuUsagePercent") SELECT $1::uuid, now() - (g || ' seconds')::interval, 1 FROM generate_series(1, 30) g`, doomed);
    await h.services.prisma.deviceTelemetryLatest.create({ data: { deviceId: doomed, organizationId: globex.org.id, snapshotId: 1n, timestamp: new Date() } });
    await h.services.prisma.device.delete({ where: { id: doomed } });

    const result = await pruneOnce(h.services, { chunk: 7 });
    expect(result.snapshotPartitions).toBe(1);
    expect(result.snapshots).toBe(0);
    expect(result.orphanDevices).toBe(1);
    expect(result.orphanRows).toBe(30);
    expect(result.complete).toBe(true);
    expect(await countOf(foreign.deviceId)).toBe(1);
    expect(await countOf(doomed)).toBe(0);
    expect(await h.services.prisma.deviceTelemetryLatest.count({ where: { deviceId: doomed } })).toBe(0);
    // the series of two days ago is within 30 days: kept
    expect(await countOf(device.deviceId)).toBe(COUNT);
  });
});
