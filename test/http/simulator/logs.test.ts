// The simulator's devices write log lines over the agent protocol (POST /agent/logs), so a
// simulated fleet has logs to read and follow in the console: routine lines from a healthy
// device, warnings and errors from a failing one.
import { afterAll, beforeAll, expect, it } from "vitest";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";

let h: Harness;
let acme: Tenant;
const simulators: FleetSimulator[] = [];

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0" });
  acme = await h.createTenant("Acme Logs");
  await ensureCa(h, acme.key);
});

afterAll(async () => {
  for (const simulator of simulators) await simulator.stop();
  await h?.close();
});

async function fleet(label: string, failureRate: number) {
  const token = await createEnrollmentToken(h, acme.key, { labels: { fleet: label }, maxUses: 3 });
  const simulator = new FleetSimulator({
    url: h.url, enrollmentToken: token.token, devices: 3, heartbeatMs: 200, telemetryMs: 0, logsMs: 100,
    failureRate, idPrefix: `logs-${label}`, enrollConcurrency: 3, maxSockets: 4,
  });
  simulators.push(simulator);
  await simulator.enrollAll();
  simulator.startTraffic();
  return simulator;
}

type Line = { level: string; source: string; message: string };

/** Every device's stored lines once each device's lines satisfy `enough` (polls; fails with what it saw). */
async function linesOfEachDevice(simulator: FleetSimulator, enough: (lines: Line[]) => boolean) {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const pages = await Promise.all(simulator.devices.map((d) => h.api("GET", `/api/v1/devices/${d.deviceId}/logs?limit=200`, { key: acme.key })));
    for (const page of pages) expect(page.status, page.text).toBe(200);
    const lines = pages.map((p) => p.body.items as Line[]);
    if (lines.every(enough)) return lines;
    if (Date.now() > deadline) throw new Error(`lines per device: ${lines.map((l) => l.length).join(", ")}; ${simulator.stats().lastError}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

it("healthy devices write routine lines of their agent, runtime and system, none above info", async () => {
  const simulator = await fleet("healthy", 0);
  const lines = (await linesOfEachDevice(simulator, (l) => l.length >= 5)).flat();
  expect(simulator.stats()).toMatchObject({ logsFailed: 0 });
  expect(simulator.stats().logsOk).toBeGreaterThan(0);
  expect(lines.filter((l) => l.level === "warn" || l.level === "error")).toEqual([]);
  expect(new Set(lines.map((l) => l.source)).size).toBeGreaterThan(1);
});

// A failing device recovers with probability one half per heartbeat and fails again at the next
// (failureRate 1), and its first log batches may go out before its first heartbeat rolled the
// dice: so each device is watched until a warning or error arrives (at load 13 ten lines were not
// always enough), rather than judged on a fixed number of lines.
it("failing devices write warnings and errors", async () => {
  const simulator = await fleet("failing", 1);
  const trouble = (l: Line) => l.level === "warn" || l.level === "error";
  const lines = await linesOfEachDevice(simulator, (device) => device.some(trouble));
  for (const device of lines) expect(device.filter(trouble).length).toBeGreaterThan(0);
  expect(simulator.stats().logsFailed).toBe(0);
});
