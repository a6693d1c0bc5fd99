// Simulated devices take configuration revisions (src/simulator/virtual-configuration.ts)
// through the real heartbeat: after an organization layer is created, and again after it
// changed, every simulated device reports the new revision applied and the service shows it in
// sync (what a rollout and the benchmark of a layer change reaching a fleet count on).
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";

let h: Harness;
let acme: Tenant;
let simulator: FleetSimulator | undefined;

beforeAll(async () => {
  h = await createHarness();
  acme = await h.createTenant("Acme Configured");
  await ensureCa(h, acme.key);
});

afterAll(async () => {
  await simulator?.stop();
  await h?.close();
});

it("every simulated device reports each revision of its configuration applied", async () => {
  const token = await createEnrollmentToken(h, acme.key, { maxUses: 3 });
  simulator = new FleetSimulator({ url: h.url, enrollmentToken: token.token, devices: 3, heartbeatMs: 3_600_000, telemetryMs: 3_600_000, logsMs: 3_600_000, failureRate: 0, idPrefix: "configured", enrollConcurrency: 3 });
  await simulator.enrollAll();
  const devices = simulator.devices;
  const inSync = async () => {
    for (const d of devices) await d.heartbeat(); // takes the revision
    for (const d of devices) await d.heartbeat(); // reports it
    return Promise.all(devices.map(async (d) => (await h.api("GET", `/api/v1/config-layers/effective?deviceId=${d.deviceId}`, { key: acme.key })).body as { revision: string; inSync: boolean; reported: { state: string } | null }));
  };

  const created = await h.api("POST", "/api/v1/config-layers", { key: acme.key, body: { name: "defaults", kind: "organization", variables: { SITE: "{{ device.name }}" }, files: [{ path: "/etc/fleet/site.conf", content: "site={{ vars.SITE }}\n" }] } });
  expect(created.status, created.text).toBe(201);
  const first = await inSync();
  expect(first.map((e) => [e.inSync, e.reported?.state])).toEqual(devices.map(() => [true, "applied"]));

  const changed = await h.api("PATCH", `/api/v1/config-layers/${created.body.id}`, { key: acme.key, body: { variables: { SITE: "x-{{ device.name }}" } } });
  expect(changed.status, changed.text).toBe(200);
  const second = await inSync();
  expect(second.map((e) => e.inSync)).toEqual([true, true, true]);
  expect(second.map((e) => e.revision)).not.toEqual(first.map((e) => e.revision));
  expect(devices.map((d) => d.configuration.applied)).toEqual(second.map((e) => e.revision));
});
