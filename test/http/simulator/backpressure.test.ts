// The simulator against a service whose ingest gate is tiny (one batch at a time, no queue,
// Retry-After 1 to 2 s): its devices get 503s, keep what was refused, send it again after the
// delay, and once drained every snapshot and log line they took is stored: nothing lost.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";

let h: Harness;
let acme: Tenant;
let simulator: FleetSimulator | undefined;

beforeAll(async () => {
  h = await createHarness({
    INGEST_CONCURRENCY: "1", INGEST_QUEUE_LENGTH: "0", INGEST_RETRY_AFTER_SECONDS: "1",
    RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_DEVICE: "0",
  });
  acme = await h.createTenant("Acme Busy");
  await ensureCa(h, acme.key);
});

afterAll(async () => {
  await simulator?.stop();
  await h?.close();
});

async function stored(table: "TelemetrySnapshot" | "DeviceLog", deviceIds: string[]): Promise<number> {
  const rows = await h.services.database.opened.raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table}" WHERE "deviceId" = ANY($1::uuid[])`, [deviceIds]);
  return rows[0].n;
}

it("keeps what a busy service refused, resends it after Retry-After, and in the end everything taken is stored", async () => {
  const token = await createEnrollmentToken(h, acme.key, { maxUses: 8 });
  simulator = new FleetSimulator({
    url: h.url, enrollmentToken: token.token, devices: 8, heartbeatMs: 1000, telemetryMs: 40, logsMs: 40,
    failureRate: 0, idPrefix: "busy", enrollConcurrency: 4, maxSockets: 16,
  });
  await simulator.enrollAll();
  expect(simulator.stats()).toMatchObject({ enrolled: 8, enrollFailed: 0 });
  simulator.startTraffic();

  // the service refuses some batches of both kinds; the devices keep them
  await expect.poll(() => {
    const stats = simulator!.stats();
    return stats.telemetryDeferred > 0 && stats.logsDeferred > 0 && stats.telemetryOk > 0 && stats.logsOk > 0;
  }, { timeout: 30_000 }).toBe(true);

  await simulator.drain(30_000);
  const stats = simulator.stats();
  expect(stats.waiting).toEqual({ snapshots: 0, logLines: 0 });
  expect(stats.dropped).toEqual({ snapshots: 0, logLines: 0 });
  expect({ telemetryFailed: stats.telemetryFailed, logsFailed: stats.logsFailed }).toEqual({ telemetryFailed: 0, logsFailed: 0 });

  const ids = simulator.devices.map((d) => d.deviceId!);
  const taken = (count: (d: FleetSimulator["devices"][number]) => number) => simulator!.devices.reduce((sum, d) => sum + count(d), 0);
  expect(await stored("TelemetrySnapshot", ids)).toBe(taken((d) => d.telemetryOutbox.added));
  expect(await stored("DeviceLog", ids)).toBe(taken((d) => d.logOutbox.added));
});
