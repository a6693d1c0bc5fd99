// Shared by the telemetry, logs, realtime and alert tests: a tenant with a CA and enrolled
// devices (over the real agent protocol, via the agent tests' helpers), and senders for the
// agent's telemetry and log batches.
import { afterAll, beforeAll } from "vitest";
import { openPGlite, openPostgres, type OpenedDatabase } from "../../../src/db/adapters.js";
import { newPostgresDatabase, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, type EnrolledDevice } from "../agent/fleet-support.js";

export type { EnrolledDevice };

export async function enrolledDevices(h: Harness, tenant: Tenant, count: number, labels: Record<string, string> = {}): Promise<EnrolledDevice[]> {
  await ensureCa(h, tenant.key);
  const token = await createEnrollmentToken(h, tenant.key, { labels });
  const devices: EnrolledDevice[] = [];
  for (let i = 0; i < count; i++) devices.push(await enroll(h, token.token, { name: `dev-${i}-${tenant.org.slug}` }));
  return devices;
}

export async function sendTelemetry(h: Harness, device: EnrolledDevice, snapshots: unknown[]) {
  return h.api("POST", "/api/v1/agent/telemetry", { key: null, token: await device.token(), body: { snapshots } });
}

export async function sendLogs(h: Harness, device: EnrolledDevice, entries: unknown[]) {
  return h.api("POST", "/api/v1/agent/logs", { key: null, token: await device.token(), body: { entries } });
}

/** Sends any number of snapshots in batches of up to 1,000 (the ingest limit). */
export async function sendAllTelemetry(h: Harness, device: EnrolledDevice, snapshots: unknown[]) {
  for (let i = 0; i < snapshots.length; i += 1000) {
    const res = await sendTelemetry(h, device, snapshots.slice(i, i + 1000));
    if (res.status !== 200) throw new Error(`telemetry batch refused: ${res.status} ${res.text}`);
  }
}

/** The field paths a 400 names (the REST facade's message is generic; its issues name each field). */
export const issuePaths = (body: { issues?: { path: unknown[] }[]; data?: { issues?: { path: unknown[] }[] } }) =>
  (body.issues ?? []).map((i) => i.path.join("."));

/** An empty database of its own (no migration applied) for the tests of a describe block. */
export function freshDatabase(): () => OpenedDatabase {
  let opened: OpenedDatabase;
  let drop: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    const url = process.env.DATABASE_URL;
    if (url) {
      const created = await newPostgresDatabase(url);
      drop = created.drop;
      opened = openPostgres(created.url.toString(), 2);
    } else {
      opened = await openPGlite();
    }
  });
  afterAll(async () => {
    await opened?.raw.close();
    await drop();
  });
  return () => opened;
}
