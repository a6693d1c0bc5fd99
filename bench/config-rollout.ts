// The time from a layer change to every one of 1,000 simulated devices reporting it applied
// (issue 48, docs/configuration.md "Measured"). The service runs in its own process (PGlite, or
// BENCH_DATABASE_URL); the simulator's devices (real device JWTs over HTTP, each with its
// VirtualConfiguration: it takes a full revision at once and reports it with its next heartbeat)
// heartbeat as fast as BENCH_CONCURRENCY closed loops allow, each device once per round, so
// what is measured is the service's own work: answering 1,000 full configurations and storing
// 1,000 reports. A device counts as done when a heartbeat carrying its report of the new
// revision was answered 200; the service's own view (the preview's appliedRevision) is checked
// at the end. With agents at their heartbeat interval H the same change takes at most about 2 H
// more (one heartbeat to hear it, the next to report it).
//   BENCH_DEVICES=1000 BENCH_CONCURRENCY=32 BENCH_CHANGES=3 BENCH_DATABASE_URL=<postgresql://...>
import { FleetSimulator } from "../src/simulator/engine.js";
import { startServiceWithOrganization } from "./support/bench-organization.js";
import { machineLine } from "./support/machine.js";

const DEVICES = Number(process.env.BENCH_DEVICES ?? 1000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const CHANGES = Number(process.env.BENCH_CHANGES ?? 3);
const ADMIN_KEY = "fm_bench" + "G".repeat(36);

console.log(machineLine());
const { service, url, client, key, enrollmentToken, call } = await startServiceWithOrganization({ adminKey: ADMIN_KEY, name: "Bench Config Rollout", tokenLabels: { site: "bench" } });
try {
  const simulator = new FleetSimulator({ url, enrollmentToken, devices: DEVICES, heartbeatMs: 30_000, telemetryMs: 0, failureRate: 0, enrollConcurrency: 16, maxSockets: CONCURRENCY });
  const enrollStarted = Date.now();
  await simulator.enrollAll();
  const devices = simulator.devices.filter((d) => d.deviceId);
  await Promise.all(devices.map((d) => d.authorization()));
  console.log(`enrolled ${devices.length} devices in ${((Date.now() - enrollStarted) / 1000).toFixed(0)} s; heartbeats at concurrency ${CONCURRENCY}`);

  const file = `# site {{ device.labels.site }}\nurl={{ vars.MQTT_URL }}\n${"x".repeat(2000)}\n`;
  const layer = await call(key, "POST", "/api/v1/config-layers", {
    name: "defaults", kind: "organization", variables: { MQTT_URL: "mqtts://{{ device.labels.site }}.broker:8883", LOG_LEVEL: "info" },
    secrets: { TOKEN: "bench-secret" }, files: [{ path: "/etc/fleet/bench.conf", content: file }],
  });

  /** Rounds of one heartbeat per device not done yet, until every device's report of `revision` was answered 200. */
  async function untilReported(revision: string) {
    const started = performance.now();
    let pending = devices;
    let rounds = 0;
    let heartbeats = 0;
    while (pending.length > 0) {
      rounds++;
      const next: typeof devices = [];
      let i = 0;
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        for (let device = pending[i++]; device; device = pending[i++]) {
          const reporting = device.configuration.applied === revision; // taken: this heartbeat carries its report
          const res = await device.heartbeat();
          heartbeats++;
          if (!(reporting && res.status === 200)) next.push(device);
        }
      }));
      pending = next;
      if (rounds > 50) throw new Error(`${pending.length} devices did not report revision ${revision.slice(0, 12)} after 50 rounds`);
    }
    return { seconds: (performance.now() - started) / 1000, rounds, heartbeats };
  }

  async function appliedCount(revision: string) {
    let count = 0;
    for (let offset = 0; offset < devices.length; offset += 200) {
      const page = await call(key, "GET", `/api/v1/config-layers/preview?limit=200&offset=${offset}`);
      count += (page.items as Array<{ appliedRevision: string | null }>).filter((d) => d.appliedRevision === revision).length;
    }
    return count;
  }

  const revisionNow = async () => (await call(key, "GET", `/api/v1/config-layers/effective?deviceId=${devices[0].deviceId}`)).revision as string;
  const first = await untilReported(await revisionNow());
  console.log(`layer created: every device in sync after ${first.seconds.toFixed(1)} s (${first.heartbeats} heartbeats in ${first.rounds} rounds; warm-up)`);

  for (let change = 1; change <= CHANGES; change++) {
    const changedAt = performance.now();
    await call(key, "PATCH", `/api/v1/config-layers/${layer.id}`, { variables: { MQTT_URL: "mqtts://{{ device.labels.site }}.broker:8883", LOG_LEVEL: `debug-${change}` } });
    const revision = await revisionNow();
    const result = await untilReported(revision);
    const total = (performance.now() - changedAt) / 1000;
    const stored = await appliedCount(revision);
    console.log(
      `change ${change}: all ${devices.length} devices reported revision ${revision.slice(0, 12)} applied ${total.toFixed(1)} s after the PATCH ` +
      `(${result.heartbeats} heartbeats, ${result.rounds} rounds, ${(result.heartbeats / result.seconds).toFixed(0)} heartbeats/s); the service holds ${stored} applied`,
    );
  }
} finally {
  client.close();
  await service.stop();
}
