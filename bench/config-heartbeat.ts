// The heartbeat's cost with configuration against without (issue 48): simulated devices
// (the simulator's engine, real device JWTs over HTTP) heartbeat a service in its own process,
// first in an organization without configuration layers, then with a default layer and
// BENCH_CONFIG_SELECTORS selector layers that all apply (10 variables, one secret and a 2 KiB
// templated file each): once with every answer the full one (files, variables, secrets revealed:
// the simulated devices report nothing, the worst case), once after every device reported the
// revision applied (answered { revision, full: false }: the steady state). Prints figures.
//   BENCH_DEVICES=200 BENCH_SECONDS=10 BENCH_CONCURRENCY=32 BENCH_CONFIG_SELECTORS=10 BENCH_DATABASE_URL=<postgresql://...>
import { FleetSimulator } from "../src/simulator/engine.js";
import { LatencyRecorder } from "../src/simulator/latency.js";
import { cpuMicrosUsed } from "./support/child.js";
import { startServiceWithOrganization } from "./support/bench-organization.js";
import { fmtMs, machineLine } from "./support/machine.js";

const DEVICES = Number(process.env.BENCH_DEVICES ?? 200);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const SELECTORS = Number(process.env.BENCH_CONFIG_SELECTORS ?? 10);
const ADMIN_KEY = "fm_bench" + "C".repeat(36);

console.log(machineLine());
const { service, url, client, key, enrollmentToken, call } = await startServiceWithOrganization({ adminKey: ADMIN_KEY, name: "Bench Config", tokenLabels: { site: "bench", tier: "pilot" } });
try {
  const simulator = new FleetSimulator({ url, enrollmentToken, devices: DEVICES, heartbeatMs: 30_000, telemetryMs: 0, failureRate: 0, enrollConcurrency: 16, maxSockets: CONCURRENCY });
  await simulator.enrollAll();
  console.log(`enrolled ${simulator.stats().enrolled} devices; ${SECONDS} s of heartbeats at concurrency ${CONCURRENCY} per phase (after a warm-up)`);

  const measure = async (label: string) => {
    await simulator.heartbeatLoad(3000, CONCURRENCY); // warm-up: JIT, connections, caches
    const before = await service.command("stats");
    const result = await simulator.heartbeatLoad(SECONDS * 1000, CONCURRENCY, new LatencyRecorder());
    const after = await service.command("stats");
    const cpu = cpuMicrosUsed(before, after) / Math.max(1, result.ok);
    console.log(`${label.padEnd(44)} ${result.perSecond.toFixed(0).padStart(6)}/s  p50 ${fmtMs(result.latency.p50)}  p99 ${fmtMs(result.latency.p99)}  service CPU ${cpu.toFixed(0)} µs/heartbeat  (${result.failed} failed)`);
  };

  await measure("no configuration layers");
  const file = (name: string) => ({ path: `/etc/fleet/${name}.conf`, content: `# ${name}\nsite={{ device.labels.site }}\nurl={{ vars.MQTT_URL }}\n${"x".repeat(2000)}\n` });
  const vars = (i: number) => Object.fromEntries(Array.from({ length: 10 }, (_, k) => [`V${i}_${k}`, k % 2 ? `value-${k}` : `{{ device.labels.site }}-${k}`]));
  await call(key, "POST", "/api/v1/config-layers", {
    name: "defaults", kind: "organization", variables: { ...vars(0), MQTT_URL: "mqtts://{{ device.labels.site }}.broker:8883" }, secrets: { TOKEN_0: "bench-secret-0" }, files: [file("defaults")],
  });
  for (let i = 1; i <= SELECTORS; i++) {
    await call(key, "POST", "/api/v1/config-layers", {
      name: `layer-${i}`, kind: "selector", selector: i % 2 ? { site: "bench" } : { tier: "pilot" }, order: i, variables: vars(i), secrets: { [`TOKEN_${i}`]: `bench-secret-${i}` }, files: [file(`layer-${i}`)],
    });
  }
  await measure(`${SELECTORS + 1} layers, full answer every heartbeat`);
  // every device reports the revision applied (as the agent does): then the answer is { revision, full: false }
  for (const device of simulator.devices.filter((d) => d.deviceId)) {
    const auth = { authorization: await device.authorization() };
    const first = await client.request<any>("POST", "/api/v1/agent/heartbeat", {}, auth);
    const revision = first.body.configuration.revision as string;
    await client.request("POST", "/api/v1/agent/heartbeat", { configuration: { revision, state: "applied", appliedRevision: revision } }, auth);
  }
  await measure(`${SELECTORS + 1} layers, applied: only the revision`);
} finally {
  client.close();
  await service.stop();
}
