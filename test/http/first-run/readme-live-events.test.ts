// The README's tour, "Live events": the socket opened with a ticket says it is ready; the one
// more device enrolled with the command the README gives (`npm run simulate -- ... --devices 1
// --prefix live`, with the demo's enrollment token) shows, in this order, the events the README
// prints: provisioned, online, then the demo's continuous deployment downloading, installing
// and running on it. The command is parsed as `npm run simulate` parses it; the events are
// compared with the README's lines by type and change (ids and times vary). Set up as
// `npm run demo` sets up its organization (scripts/demo.ts): the sample applications as a Git
// registry, a token labelling devices site=demo-plant, the continuous `forwarder-everywhere`.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHarness, type Harness } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "../agent/fleet-support.js";
import { connectRealtime, type RealtimeClient } from "../../support/realtime-client.js";
import { FleetSimulator } from "../../../src/simulator/engine.js";
import { parseSimulatorArgs } from "../../../src/simulator/cli.js";
import { addSampleRegistry, apiCaller, serveSampleApps, type SampleAppsServer } from "../../../scripts/sample-apps.js";
import { ROOT } from "../../support/server-process.js";

let h: Harness;
let samples: SampleAppsServer;
const simulators: FleetSimulator[] = [];
let socket: RealtimeClient | undefined;

beforeAll(async () => {
  h = await createHarness({ RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_CREDENTIAL: "0", RATE_LIMIT_PER_DEVICE: "0" });
  samples = await serveSampleApps();
}, 120_000);

afterAll(async () => {
  socket?.close();
  for (const simulator of simulators) await simulator.stop();
  await samples?.close();
  await h?.close();
});

/** The README's "Live events" item: the simulate command and the event lines it shows, in order. */
function readmeLiveEvents() {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("* **Live events**");
  expect(start, "the README's Live events item").toBeGreaterThan(0);
  const item = readme.slice(start, readme.indexOf("\n* **", start + 1));
  const command = /^\s*\$ (npm run simulate -- .*)$/m.exec(item)?.[1];
  const events = item.split("\n").map((l) => l.trim()).filter((l) => l.startsWith('{"type":')).map((l) => JSON.parse(l));
  return { command, events };
}

/** What an event line says, ids and times aside. */
const gist = (e: { type: string; channel?: string; channels?: string[]; data?: { from?: string | null; to?: string; state?: string } }) =>
  [e.type, e.channel ?? e.channels?.join(","), e.data?.from, e.data?.to, e.data?.state].filter((x) => x !== undefined).join(" ");

describe("the README's live events", () => {
  it("are what the socket shows when the README's one more device enrolls", async () => {
    const { command, events } = readmeLiveEvents();
    expect(command, "the README gives the command that makes something happen").toBeDefined();

    // the demo's organization, as scripts/demo.ts makes it
    const tenant = await h.createTenant("Demo Live");
    const key = await h.createKey(tenant.org.id, ["*"], { role: "operator" });
    await ensureCa(h, key);
    await addSampleRegistry(apiCaller(h.url), key, samples.url);
    const token = await createEnrollmentToken(h, key, { labels: { site: "demo-plant", tier: "edge", tz: "Europe/Berlin" } });
    // a few of the demo's devices first (a deployment starts on devices that are there)
    const fleet = new FleetSimulator({ url: h.url, enrollmentToken: token.token, devices: 3, heartbeatMs: 10_000, telemetryMs: 0, failureRate: 0, idPrefix: "demo" });
    simulators.push(fleet);
    await fleet.enrollAll();
    expect(fleet.stats(), fleet.stats().lastError ?? "").toMatchObject({ enrolled: 3 });
    const apps = (await h.api("GET", "/api/v1/applications?limit=100", { key })).body.items as Array<{ id: string; key: string }>;
    const created = await h.api("POST", "/api/v1/deployments", {
      key,
      body: {
        name: "forwarder-everywhere", applicationId: apps.find((a) => a.key === "telemetry-forwarder")!.id, version: "0.9.0", profileId: "compose-default",
        target: { labelSelector: { site: "demo-plant" } }, continuous: true,
      },
    });
    expect(created.status, created.text).toBe(201);
    const started = await h.api("POST", `/api/v1/deployments/${created.body.id}/start`, { key });
    expect(started.status, started.text).toBe(200);

    // the socket, as the README opens it
    const ticket = await h.api("POST", "/api/v1/realtime/ticket", { key, body: {} });
    expect(ticket.status, ticket.text).toBe(201);
    const connected = await connectRealtime(h.url, ticket.body.ticket);
    if ("refused" in connected) throw new Error(`the socket was refused: ${connected.refused}`);
    socket = connected;

    // the README's command, as npm run simulate parses it (its URL and $TOKEN this service's)
    const argv = command!.replace(/^npm run simulate -- /, "").split(/\s+/)
      .map((arg) => (arg === "$TOKEN" ? token.token : arg === "http://localhost:3000" ? h.url : arg));
    const options = parseSimulatorArgs(argv);
    expect(options).toMatchObject({ devices: 1, idPrefix: "live" });
    const simulator = new FleetSimulator(options);
    simulators.push(simulator);
    await simulator.enrollAll();
    expect(simulator.stats(), simulator.stats().lastError ?? "").toMatchObject({ enrolled: 1 });
    simulator.startTraffic();
    const deviceId = simulator.devices[0].deviceId;
    await socket.next((m) => m.type === "deployment.progress" && m.data.deviceId === deviceId && m.data.state === "running", 90_000);

    const shown = socket.messages.filter((m) => m.type === "ready" || m.data?.deviceId === deviceId);
    expect(shown.map(gist)).toEqual(events.map(gist));
  }, 180_000);
});
