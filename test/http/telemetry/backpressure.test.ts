// Backpressure on device ingest (docs/telemetry.md, "When ingest is busy"), with the ingest gate
// configured small: one batch at a time, one waiting, a wait of at most two seconds. A batch whose
// body the client is still sending holds its turn, which makes "busy" a state the test sets up
// and observes rather than a race. Refused batches get 503 with Retry-After (5 to 10 s: base 5
// plus jitter) and the JSON error body, store nothing, and every batch answered 2xx is stored.
import http from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { enrolledDevices, sendLogs, sendTelemetry, type EnrolledDevice } from "./support.js";

let h: Harness;
let device: EnrolledDevice;

beforeAll(async () => {
  h = await createHarness({ INGEST_CONCURRENCY: "1", INGEST_QUEUE_LENGTH: "1", INGEST_QUEUE_TIMEOUT_MS: "2000", INGEST_RETRY_AFTER_SECONDS: "5" });
  const tenant = await h.createTenant("Backpressure");
  [device] = await enrolledDevices(h, tenant, 1);
});
afterAll(() => h?.close());

const gate = () => h.services.ingestGate;

/** `count` snapshots one second apart from `start` (ms), every one distinct. */
function snapshots(start: number, count: number) {
  return Array.from({ length: count }, (_, i) => ({ timestamp: new Date(start + i * 1000).toISOString(), cpuUsagePercent: i % 100 }));
}

async function storedSnapshots(): Promise<number> {
  const rows = await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "TelemetrySnapshot" WHERE "deviceId" = $1::uuid`, [device.deviceId]);
  return rows[0].n;
}

/**
 * A telemetry batch whose client sends the headers and half the body, then stalls until
 * `finish()`: once admitted it holds its turn of the gate (the body is read inside the turn).
 */
async function stalledBatch(body: unknown) {
  const payload = Buffer.from(JSON.stringify(body));
  const req = http.request(`${h.url}/api/v1/agent/telemetry`, {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": String(payload.length), authorization: `Bearer ${await device.token()}` },
  });
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.on("response", (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) }));
    });
    req.on("error", reject);
  });
  req.write(payload.subarray(0, payload.length / 2));
  return {
    answer,
    abort: () => {
      answer.catch(() => undefined);
      req.destroy();
    },
    finish: () => {
      req.end(payload.subarray(payload.length / 2));
      return answer;
    },
  };
}

function expectBusy(res: { status: number; headers: Headers; body: any }, reason: RegExp) {
  expect(res.status).toBe(503);
  const retryAfter = Number(res.headers.get("retry-after"));
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(5);
  expect(retryAfter).toBeLessThanOrEqual(10);
  expect(res.headers.get("content-type")).toMatch(/application\/json/);
  expect(res.body).toMatchObject({ code: "SERVICE_UNAVAILABLE", data: { code: "SERVICE_UNAVAILABLE", httpStatus: 503 } });
  expect(res.body.message).toMatch(reason);
  expect(res.body.message).toContain(`retry after ${retryAfter} s`);
}

describe("when every turn is taken", () => {
  it("refuses a batch at once when the queue is full, and one that waited too long; stores the admitted ones only", async () => {
    const before = await storedSnapshots();
    const day = Date.now() - 3 * 3600_000;
    const holder = await stalledBatch({ snapshots: snapshots(day, 200) });
    await expect.poll(() => gate().inFlight, { timeout: 5000 }).toBe(1);

    // the one place in the queue
    const waiting = sendTelemetry(h, device, snapshots(day + 1_000_000, 10));
    await expect.poll(() => gate().queued, { timeout: 5000 }).toBe(1);

    // queue full: refused before its body is read, whatever the surface and the kind of batch
    expectBusy(await sendTelemetry(h, device, snapshots(day + 2_000_000, 10)), /batches are already waiting/);
    expectBusy(await sendLogs(h, device, [{ timestamp: new Date().toISOString(), message: "refused" }]), /batches are already waiting/);
    const trpc = await h.api("POST", "/trpc/telemetryIngest.ingest", { key: null, token: await device.token(), body: { snapshots: snapshots(day + 3_000_000, 10) } });
    expect(trpc.status).toBe(503);
    expect(Number(trpc.headers.get("retry-after"))).toBeGreaterThanOrEqual(5);
    expect(trpc.body.error).toMatchObject({ data: { code: "SERVICE_UNAVAILABLE", httpStatus: 503 } });

    // the waiting batch gives up after INGEST_QUEUE_TIMEOUT_MS: the database "is not keeping up"
    expectBusy(await waiting, /the database is not keeping up \(waited 2000 ms/);
    expect(gate().queued).toBe(0);

    // the holder finishes its body: stored in full, answered 200
    expect(await holder.finish()).toEqual({ status: 200, body: { accepted: 200 } });
    await expect.poll(() => gate().inFlight, { timeout: 5000 }).toBe(0);
    expect(await storedSnapshots()).toBe(before + 200);
    const logs = await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "DeviceLog" WHERE "deviceId" = $1::uuid`, [device.deviceId]);
    expect(logs[0].n).toBe(0);

    // not busy any more: accepted again, on both kinds
    expect((await sendTelemetry(h, device, snapshots(day + 4_000_000, 10))).body).toEqual({ accepted: 10 });
    expect((await sendLogs(h, device, [{ timestamp: new Date().toISOString(), message: "accepted" }])).body).toEqual({ accepted: 1 });
    expect(await storedSnapshots()).toBe(before + 210);
  });

  it("gives the place of a client that hung up while waiting to the next batch", async () => {
    const before = await storedSnapshots();
    const day = Date.now() - 5 * 3600_000;
    const holder = await stalledBatch({ snapshots: snapshots(day, 10) });
    await expect.poll(() => gate().inFlight, { timeout: 5000 }).toBe(1);
    const impatient = await stalledBatch({ snapshots: snapshots(day + 100_000, 10) });
    await expect.poll(() => gate().queued, { timeout: 5000 }).toBe(1);
    impatient.abort();
    await expect.poll(() => gate().queued, { timeout: 5000 }).toBe(0);
    // its place is taken by the next batch, which is admitted when the holder is done
    const next = sendTelemetry(h, device, snapshots(day + 200_000, 10));
    await expect.poll(() => gate().queued, { timeout: 5000 }).toBe(1);
    expect(await holder.finish()).toEqual({ status: 200, body: { accepted: 10 } });
    expect((await next).body).toEqual({ accepted: 10 });
    expect(await storedSnapshots()).toBe(before + 20);
  });
});

describe("a slow database", () => {
  it.runIf(Boolean(process.env.DATABASE_URL))("refuses the batches waiting behind one the database holds up, then stores that one (PostgreSQL)", async () => {
    const before = await storedSnapshots();
    const day = Date.now() - 7 * 3600_000;
    const holder = new pg.Client({ connectionString: (h.services.database.opened.pool as pg.Pool).options.connectionString });
    await holder.connect();
    try {
      // another session holds the table every ingest statement writes: the database "is slow"
      await holder.query("BEGIN");
      await holder.query(`LOCK TABLE "DeviceTelemetryLatest" IN ACCESS EXCLUSIVE MODE`);
      const held = sendTelemetry(h, device, snapshots(day, 10));
      await expect.poll(async () => (await holder.query(`SELECT count(*)::int AS n FROM pg_locks WHERE relation = '"DeviceTelemetryLatest"'::regclass AND NOT granted`)).rows[0].n, { timeout: 5000 }).toBeGreaterThan(0);
      expect(gate().inFlight).toBe(1);
      expectBusy(await sendTelemetry(h, device, snapshots(day + 100_000, 10)), /the database is not keeping up/);
      await holder.query("COMMIT");
      expect((await held).body).toEqual({ accepted: 10 });
    } finally {
      await holder.end();
    }
    expect(await storedSnapshots()).toBe(before + 10);
  });
});

describe("a burst of concurrent batches", () => {
  it("is answered 200 or 503 with Retry-After; what was answered 200 is stored, and ingest is accepted again afterwards", async () => {
    const before = await storedSnapshots();
    const start = Date.now() - 20 * 3600_000;
    const burst = await Promise.all(Array.from({ length: 16 }, (_, i) => sendTelemetry(h, device, snapshots(start + i * 2_000_000, 1000))));
    const statuses = burst.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(0);
    for (const refused of burst.filter((r) => r.status === 503)) expectBusy(refused, /Ingest is busy/);
    const accepted = burst.filter((r) => r.status === 200).reduce((sum, r) => sum + (r.body as { accepted: number }).accepted, 0);
    expect(accepted).toBe(1000 * statuses.filter((s) => s === 200).length);
    expect(await storedSnapshots()).toBe(before + accepted);

    await expect.poll(() => gate().inFlight + gate().queued, { timeout: 5000 }).toBe(0);
    expect((await sendTelemetry(h, device, snapshots(start + 40_000_000, 5))).status).toBe(200);
    expect(await storedSnapshots()).toBe(before + accepted + 5);
  });
});
