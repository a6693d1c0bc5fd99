// The real agent's loop (agent/src/agent.ts, FleetAgent) against the service in process, through
// a front on loopback that can go away (its port closed, its connections cut) or answer in the
// service's place (503 with Retry-After, 429, a proxy's 502 page). What a device relies on:
//
// * an outage of a minute (twelve heartbeat intervals, 240 telemetry intervals) loses no
//   telemetry snapshot and no log line that fits the buffer: every one produced during it
//   arrives once, in the order produced, and is stored once (docs/devices.md, "When the service
//   is busy"); past the buffer's bound the oldest are dropped, not the newest;
// * a heartbeat answered 429 or 503 waits the Retry-After the service gave (sooner or later than
//   its interval, and even at the busy pace of a change waiting to be reported), then goes back
//   to its interval; only a 2xx lets it forget a batch (telemetry, log lines, deployment reports);
// * its first telemetry snapshot is taken at start, and again at each restart, not an interval
//   later: a just-enrolled device's Telemetry tab fills as soon as it is online.
//
// The agent's clock is the real one (it has no injected clock): the outage is a real minute.
// Intervals are shortened where the agent's options allow. The engine is a fake with one
// container that writes a line whenever its log is read.
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { FleetAgent } from "../../../agent/src/agent.js";
import { storeCredentials } from "../../../agent/src/identity-store.js";
import { Outbox } from "../../../agent/src/core/outbox.js";
import type { LogLine as EngineLogLine, ComposeEngine, ProjectContainer } from "../../../agent/src/runtime/engine.js";
import { fakeEngine } from "./fake-engine.js";
import type { LogLine, TelemetrySnapshot } from "../../../agent/src/core/reports.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { X509Certificate } from "node:crypto";
import { eventually } from "../../support/server-process.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa, type EnrolledDevice } from "./fleet-support.js";

const HEARTBEAT_SECONDS = 5;

/** An engine with one running container that writes one line each time its log is read. */
function chattyEngine(): ComposeEngine {
  const container: ProjectContainer = { id: "c0ffee", name: "fleet-app-web-1", service: "web", state: "running", health: null, exitCode: null, workingDir: null };
  const written: EngineLogLine[] = [];
  let n = 0;
  return fakeEngine({
    containers: async () => [container],
    containersOf: async () => [container],
    logs: async (_name, since) => {
      n++;
      written.push({ timestamp: new Date().toISOString().replace("Z", `${String(n % 1_000_000).padStart(6, "0")}Z`), stream: "stdout", message: `web line ${n}` });
      return written.filter((line) => new Date(line.timestamp) >= since);
    },
  });
}

interface Exchange {
  method: string;
  path: string;
  status: number;
  /** the request's JSON body */
  body: unknown;
  at: number;
}

/** What the front does with a request instead of passing it to the service: an answer, or null to pass it. */
type Answer = (req: { method: string; path: string }) => { status: number; headers?: Record<string, string>; body: string } | null;

let h: Harness;
let tenant: Tenant;
let front: http.Server;
let frontPort: number;
const sockets = new Set<Socket>();
/** every request the front answered (passed or answered itself), in the order answered */
const exchanges: Exchange[] = [];
let inFlight = 0;
/** requests passed on whose answer never came back (connection reset by the service) */
let upstreamErrors = 0;
let answer: Answer = () => null;
/** while the service goes away: a request that comes now gets its connection cut, unanswered and unforwarded */
let closing = false;
let dir: string | undefined;

beforeAll(async () => {
  h = await createHarness({ HEARTBEAT_INTERVAL_SECONDS: String(HEARTBEAT_SECONDS), RATE_LIMIT_PER_SOURCE: "0", RATE_LIMIT_PER_DEVICE: "0", DEVICE_AUTH_RECHECK_SECONDS: "0" });
  tenant = await h.createTenant("Outage Devices");
  await ensureCa(h, tenant.key);
  const target = new URL(h.url);
  front = http.createServer((req, res) => {
    if (closing) return void req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const exchange: Exchange = { method: req.method!, path: req.url!, status: 0, body: text ? JSON.parse(text) : undefined, at: Date.now() };
      const own = answer({ method: exchange.method, path: exchange.path });
      if (own) {
        exchange.status = own.status;
        exchanges.push(exchange);
        res.writeHead(own.status, own.headers ?? {});
        res.end(own.body);
        return;
      }
      inFlight++;
      const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (reply) => {
        const body: Buffer[] = [];
        reply.on("data", (c: Buffer) => body.push(c));
        reply.on("end", () => {
          exchange.status = reply.statusCode ?? 502;
          exchanges.push(exchange);
          inFlight--;
          res.writeHead(exchange.status, reply.headers);
          res.end(Buffer.concat(body));
        });
      });
      upstream.on("error", () => {
        upstreamErrors++;
        inFlight--;
        res.destroy();
      });
      upstream.end(text);
    });
  });
  front.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  frontPort = (front.address() as AddressInfo).port;
});
afterAll(async () => {
  if (front?.listening) await new Promise((resolve) => front.close(resolve));
  await h?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
  answer = () => null;
  exchanges.length = 0;
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

/**
 * The service goes away: requests still on their way are answered (so that no batch is stored
 * without the agent hearing of it), new ones get their connection cut, then the port is closed
 * and every connection to it cut (connection refused from now on).
 */
async function closeFront() {
  closing = true;
  await eventually(async () => inFlight === 0, 10_000, "requests on their way answered");
  const closed = new Promise((resolve) => front.close(resolve));
  for (const socket of sockets) socket.destroy();
  await closed;
  closing = false;
}

async function reopenFront() {
  await new Promise<void>((resolve) => front.listen(frontPort, "127.0.0.1", resolve));
}

/** A state directory as `fleet-agent enroll` leaves it, for a device enrolled now, talking to the front. */
async function enrolledStateDir(): Promise<{ state: StateDir; device: EnrolledDevice }> {
  const device = await enroll(h, (await createEnrollmentToken(h, tenant.key)).token);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-outage-"));
  const state = new StateDir(dir);
  state.ensure();
  await storeCredentials(state, {
    serviceUrl: `http://127.0.0.1:${frontPort}`, deviceId: device.deviceId, reportedDeviceId: device.reportedDeviceId, name: "outage",
    certificateId: device.certificateId, certificateNotAfter: new Date(new X509Certificate(device.certificate).validTo).toISOString(),
    heartbeatIntervalSeconds: HEARTBEAT_SECONDS, enrolledAt: new Date().toISOString(),
  }, device.keys, device.certificate, []);
  return { state, device };
}

/** Everything the agent puts into its outboxes, in order: what it produced. */
function recordProduced() {
  const telemetry: TelemetrySnapshot[] = [];
  const logs: LogLine[] = [];
  const add = Outbox.prototype.add;
  vi.spyOn(Outbox.prototype, "add").mockImplementation(function (this: Outbox<unknown>, items: unknown[]) {
    for (const item of items) ("message" in (item as object) ? logs : telemetry).push(item as never);
    add.call(this, items);
  });
  return { telemetry, logs };
}

const isTelemetry = (e: Exchange) => e.method === "POST" && e.path === "/trpc/telemetryIngest.ingest";
const isLogs = (e: Exchange) => e.method === "POST" && e.path === "/trpc/logsIngest.ingest";
const isHeartbeat = (e: Exchange) => e.method === "POST" && e.path === "/api/v1/agent/heartbeat";
const ok = (e: Exchange) => e.status >= 200 && e.status < 300;

/** The items of every batch the service took (2xx), in the order taken. */
function taken() {
  return {
    telemetry: exchanges.filter((e) => isTelemetry(e) && ok(e)).flatMap((e) => (e.body as { snapshots: TelemetrySnapshot[] }).snapshots),
    logs: exchanges.filter((e) => isLogs(e) && ok(e)).flatMap((e) => (e.body as { entries: LogLine[] }).entries),
  };
}

async function stored(deviceId: string) {
  const [telemetry, logs] = await Promise.all([
    h.services.prisma.telemetrySnapshot.findMany({ where: { deviceId }, select: { timestamp: true }, orderBy: { timestamp: "asc" } }),
    h.services.prisma.deviceLog.findMany({ where: { deviceId }, select: { message: true } }),
  ]);
  return { telemetry: telemetry.map((r) => r.timestamp.toISOString()), logs: logs.map((r) => r.message) };
}

/** Stops the agent and waits until nothing it sent is still on its way and the service stored all it took. */
async function stopAndSettle(agent: FleetAgent, deviceId: string) {
  await agent.stop();
  expect(await agent.done).toBe(0);
  // compared whole, so that a timeout names the counts it last saw
  await eventually(async () => {
    const db = await stored(deviceId);
    const t = taken();
    expect({ inFlight, upstreamErrors, telemetry: db.telemetry.length, logs: db.logs.length })
      .toEqual({ inFlight: 0, upstreamErrors, telemetry: t.telemetry.length, logs: t.logs.length });
    return true;
  }, 30_000, "every batch taken stored, none in flight");
}

it("an outage of a minute (its port closed, then 503s and a proxy's 502 pages) loses no snapshot and no log line: each arrives once, in order", { timeout: 180_000 }, async () => {
  const { state, device } = await enrolledStateDir();
  const produced = recordProduced();
  const lines: string[] = [];
  /** when each line was printed */
  const printedAt: number[] = [];
  const agent = new FleetAgent({ state, engine: chattyEngine(), print: (line) => (lines.push(line), printedAt.push(Date.now())), telemetryIntervalMs: 250, logIntervalMs: 250 });
  await agent.start();
  // it works: a heartbeat, a batch of each kind taken
  await eventually(async () => agent.lastHeartbeatAt !== null && taken().telemetry.length > 0 && taken().logs.length > 0, 30_000, "the agent at work");

  // The outage: 30 s with the port closed (connection refused), 30 s answered in the service's
  // place: 503 with Retry-After 1, and a proxy's HTML 502 without one, turn about.
  const outageStarted = Date.now();
  const producedBefore = { telemetry: produced.telemetry.length, logs: produced.logs.length };
  await closeFront();
  await new Promise((resolve) => setTimeout(resolve, 30_000)); // the outage is a span of time: nothing to wait for but the clock
  let turn = 0;
  answer = (): ReturnType<Answer> => (turn++ % 2 === 0
    ? { status: 503, headers: { "content-type": "application/json", "retry-after": "1" }, body: JSON.stringify({ code: "SERVICE_UNAVAILABLE", message: "down for maintenance" }) }
    : { status: 502, headers: { "content-type": "text/html" }, body: "<html><body>502 Bad Gateway</body></html>" });
  await reopenFront();
  await new Promise((resolve) => setTimeout(resolve, 30_000));
  const refusedDuringOutage = exchanges.filter((e) => e.at >= outageStarted && !ok(e));
  answer = () => null;
  const outageEnded = Date.now();
  const producedDuring = { telemetry: produced.telemetry.length - producedBefore.telemetry, logs: produced.logs.length - producedBefore.logs };

  // the span covered many intervals of each kind
  expect(outageEnded - outageStarted).toBeGreaterThanOrEqual(60_000);
  expect(producedDuring.telemetry).toBeGreaterThan(100);
  expect(producedDuring.logs).toBeGreaterThan(100);
  // the answered half of it saw heartbeats and batches refused, each kind more than once
  expect(refusedDuringOutage.filter(isHeartbeat).length).toBeGreaterThanOrEqual(3);
  expect(refusedDuringOutage.filter(isTelemetry).length).toBeGreaterThanOrEqual(2);
  expect(refusedDuringOutage.filter(isLogs).length).toBeGreaterThanOrEqual(2);
  expect(new Set(refusedDuringOutage.map((e) => e.status))).toEqual(new Set([502, 503]));

  // back: everything produced until the outage ended arrives, and a heartbeat is answered
  const heldByOutage = { telemetry: producedBefore.telemetry + producedDuring.telemetry, logs: producedBefore.logs + producedDuring.logs };
  await eventually(async () => taken().telemetry.length >= heldByOutage.telemetry && taken().logs.length >= heldByOutage.logs &&
    taken().logs.some((l) => l.message.startsWith("the service answers again")), 60_000, "what the outage held taken, and the line that the service answers again");
  await stopAndSettle(agent, device.deviceId);

  // Arrived exactly once, in the order produced: what the service took is what the agent
  // produced, from the first item on (a batch whose answer the stop cut off may still count as
  // waiting on the device: the service took it).
  const arrived = taken();
  expect(arrived.telemetry.length).toBeGreaterThanOrEqual(heldByOutage.telemetry);
  expect(arrived.logs.length).toBeGreaterThanOrEqual(heldByOutage.logs);
  expect(arrived.telemetry).toEqual(produced.telemetry.slice(0, arrived.telemetry.length));
  expect(arrived.logs).toEqual(produced.logs.slice(0, arrived.logs.length));
  // each line numbered, the numbers growing: what lets the service store a line sent again once
  const numbers = arrived.logs.map((l) => l.seq!);
  expect(numbers.every((n, k) => Number.isSafeInteger(n) && (k === 0 || n > numbers[k - 1]))).toBe(true);
  // and stored once each
  const db = await stored(device.deviceId);
  expect(db.telemetry).toEqual(arrived.telemetry.map((s) => s.timestamp).sort());
  expect(db.logs.sort()).toEqual(arrived.logs.map((l) => l.message).sort());
  // the agent's own account of it: one line when the service went away (not one per failed
  // request of the minute), and one when it answered again. (A later failure of its own, a
  // heartbeat timing out on a loaded machine, would be another outage with its own two lines.)
  const printed = (pattern: RegExp, from: number, to: number) => lines.filter((l, i) => pattern.test(l) && printedAt[i] >= from && printedAt[i] <= to);
  expect(printed(/the service cannot be reached/, outageStarted, outageEnded), lines.join("\n")).toHaveLength(1);
  const answeredAgain = lines.findIndex((l, i) => /the service answers again after \d+ s/.test(l) && printedAt[i] >= outageEnded);
  expect(answeredAgain, lines.join("\n")).toBeGreaterThanOrEqual(0);
  expect(printed(/the service cannot be reached/, outageEnded, printedAt[answeredAgain]), lines.join("\n")).toEqual([]);
  expect(arrived.logs.map((l) => l.message)).toEqual(expect.arrayContaining([expect.stringMatching(/^the service cannot be reached/), expect.stringMatching(/^the service answers again/)]));
});

/**
 * Where each item that arrived was produced (its index in `all`), and the runs of produced items
 * that never arrived, up to the last one that did (the newest may still wait on the device).
 */
function arrivalOf(all: readonly object[], arrived: readonly object[]) {
  const key = (item: object) => JSON.stringify(item);
  const indexOf = new Map(all.map((item, i) => [key(item), i]));
  const positions = arrived.map((item) => indexOf.get(key(item)) ?? -1);
  const seen = new Set(positions);
  const missing: Array<{ from: number; to: number }> = [];
  const last = Math.max(-1, ...positions);
  for (let i = 0; i <= last; i++) {
    if (seen.has(i)) continue;
    const last = missing.at(-1);
    if (last && last.to === i - 1) last.to = i;
    else missing.push({ from: i, to: i });
  }
  return { positions, missing };
}

it("past the buffer's bound the oldest waiting are dropped and counted: one run of the oldest is missing, the newest arrive", { timeout: 120_000 }, async () => {
  const { state, device } = await enrolledStateDir();
  const produced = recordProduced();
  const CAPACITY = 10;
  const agent = new FleetAgent({ state, engine: chattyEngine(), print: () => {}, telemetryIntervalMs: 100, logIntervalMs: 100, telemetryCapacity: CAPACITY, logCapacity: CAPACITY });
  await agent.start();
  await eventually(async () => taken().telemetry.length > 0 && taken().logs.length > 0, 30_000, "the agent at work");
  await closeFront();
  const closedAt = { telemetry: produced.telemetry.length, logs: produced.logs.length };
  // three times the bound of each kind produced while the port is closed
  await eventually(async () => produced.telemetry.length - closedAt.telemetry >= 3 * CAPACITY && produced.logs.length - closedAt.logs >= 3 * CAPACITY, 30_000, "the buffer overrun");
  const reopenedAt = { telemetry: produced.telemetry.length, logs: produced.logs.length };
  await reopenFront();
  // taken again: items produced after the reopening arrive
  const producedAfter = (all: readonly object[], arrived: readonly object[], from: number) => arrived.some((item) => all.slice(from).some((p) => JSON.stringify(p) === JSON.stringify(item)));
  await eventually(async () => producedAfter(produced.telemetry, taken().telemetry, reopenedAt.telemetry) && producedAfter(produced.logs, taken().logs, reopenedAt.logs), 30_000, "items of after the outage taken");
  await stopAndSettle(agent, device.deviceId);

  const status = agent.status();
  for (const [kind, all, arrived, dropped, closed, reopened] of [
    ["telemetry", produced.telemetry, taken().telemetry, status.telemetryDropped, closedAt.telemetry, reopenedAt.telemetry],
    ["logs", produced.logs, taken().logs, status.logLinesDropped, closedAt.logs, reopenedAt.logs],
  ] as const) {
    const { positions, missing } = arrivalOf(all, arrived);
    // every item that arrived was produced, arrived once, in the order produced
    expect(positions.includes(-1), kind).toBe(false);
    expect(positions, `${kind}: once each, in order`).toEqual([...new Set(positions)].sort((a, b) => a - b));
    // one run is missing: the oldest of what the outage held, as many as the agent counted as dropped
    expect(missing, kind).toHaveLength(1);
    const [run] = missing;
    expect(run.to - run.from + 1, kind).toBe(dropped);
    expect(dropped, kind).toBeGreaterThanOrEqual(reopened - closed - CAPACITY);
    // the dropped were held during the outage (from at most a buffer's worth before it closed);
    // after the run, everything arrived up to the last item taken, produced after the reopening
    // (the agent asks again a few seconds after its last refusal: what it produced meanwhile
    // counts against the bound too)
    expect(run.from, kind).toBeGreaterThanOrEqual(closed - CAPACITY);
    const last = positions.at(-1)!;
    expect(last, kind).toBeGreaterThanOrEqual(reopened);
    expect(positions.filter((p) => p > run.to), kind).toEqual(Array.from({ length: last - run.to }, (_, i) => run.to + 1 + i));
  }
});

it("a heartbeat answered 503 or 429 waits the service's Retry-After, sooner or later than its interval, then resumes; only a 2xx forgets a batch", { timeout: 120_000 }, async () => {
  const { state, device } = await enrolledStateDir();
  const produced = recordProduced();
  // the first heartbeat 503 Retry-After 2 (sooner than the 5 s interval), the second 429
  // Retry-After 8 (later than it); telemetry and log batches meanwhile 503 or 429, Retry-After 1
  let heartbeats = 0;
  let batchTurn = 0;
  let busy = true;
  const refusal = (status: number, retryAfter: string) => ({
    status, headers: { "content-type": "application/json", "retry-after": retryAfter },
    body: JSON.stringify({ code: status === 429 ? "TOO_MANY_REQUESTS" : "SERVICE_UNAVAILABLE", message: "busy" }),
  });
  answer = (req) => {
    if (!busy) return null;
    if (req.path === "/api/v1/agent/heartbeat") {
      heartbeats++;
      if (heartbeats === 1) return refusal(503, "2");
      if (heartbeats === 2) return refusal(429, "8");
      busy = false;
      return null;
    }
    return batchTurn++ % 2 === 0 ? refusal(503, "1") : refusal(429, "1");
  };
  const agent = new FleetAgent({ state, engine: chattyEngine(), print: () => {}, telemetryIntervalMs: 300, logIntervalMs: 300 });
  await agent.start();
  await eventually(async () => exchanges.filter(isHeartbeat).length >= 4, 40_000, "four heartbeats");
  const beats = exchanges.filter(isHeartbeat).slice(0, 4);
  expect(beats.map((e) => e.status)).toEqual([503, 429, 200, 200]);
  const gaps = beats.slice(1).map((e, i) => e.at - beats[i].at);
  // after the 503: its Retry-After (2 s), not the interval (5 s)
  expect(gaps[0]).toBeGreaterThanOrEqual(1990);
  expect(gaps[0]).toBeLessThan(HEARTBEAT_SECONDS * 1000);
  // after the 429: its Retry-After (8 s), longer than the interval
  expect(gaps[1]).toBeGreaterThanOrEqual(7990);
  // after the 200: the interval again
  expect(gaps[2]).toBeGreaterThanOrEqual(HEARTBEAT_SECONDS * 1000 - 10);
  expect(gaps[2]).toBeLessThan(7990);
  await stopAndSettle(agent, device.deviceId);

  // the batches refused 503/429 were kept and sent again after their Retry-After: everything
  // produced arrived once, in order, the first refused batch's items among them
  const refused = exchanges.filter((e) => (isTelemetry(e) || isLogs(e)) && !ok(e));
  expect(new Set(refused.map((e) => e.status))).toEqual(new Set([429, 503]));
  const firstRefused = (refused.find(isTelemetry)!.body as { snapshots: TelemetrySnapshot[] }).snapshots;
  const arrived = taken();
  expect(arrived.telemetry).toEqual(expect.arrayContaining(firstRefused));
  expect(arrived.telemetry).toEqual(produced.telemetry.slice(0, arrived.telemetry.length));
  expect(arrived.logs).toEqual(produced.logs.slice(0, arrived.logs.length));
  // everything produced before the heartbeats were answered again arrived
  const answeredAgain = beats[2].at;
  expect(arrived.telemetry.length).toBeGreaterThanOrEqual(produced.telemetry.filter((t) => Date.parse(t.timestamp) < answeredAgain).length);
  expect(arrived.logs.length).toBeGreaterThanOrEqual(produced.logs.filter((l) => Date.parse(l.timestamp) < answeredAgain).length);
  // a batch is sent no sooner than the Retry-After of its refusal (1 s)
  for (const kind of [isTelemetry, isLogs]) {
    const sent = exchanges.filter(kind);
    for (let i = 1; i < sent.length; i++) if (!ok(sent[i - 1])) expect(sent[i].at - sent[i - 1].at).toBeGreaterThanOrEqual(990);
  }
});

it("while a deployment change waits to be reported (every second, normally), a 503's Retry-After still holds the next heartbeat, and the report is sent again until a 2xx", { timeout: 60_000 }, async () => {
  const { state } = await enrolledStateDir();
  // the device ran a deployment to `running`; the service last acknowledged `installing`: the
  // change waits to be reported, so the agent heartbeats at its busy pace (here every 100 ms)
  const deploymentId = "5b0c7e5e-7a4f-4f0e-9d8e-2f6a1c3b9d70";
  state.writeJson("deployments.json", [{
    deploymentId, applicationId: "8d2e4f6a-1b3c-4d5e-8f70-9a1b2c3d4e5f", version: "1.0.0", action: "install", state: "running", attempt: 1,
    mayInstall: true, downloaded: true, dueAt: null, reportedState: "installing", history: ["pending", "downloading", "installing", "running"],
  }]);
  let heartbeats = 0;
  answer = (req) => {
    if (req.path !== "/api/v1/agent/heartbeat" || ++heartbeats > 1) return null;
    return { status: 503, headers: { "content-type": "application/json", "retry-after": "3" }, body: JSON.stringify({ code: "SERVICE_UNAVAILABLE", message: "busy" }) };
  };
  const agent = new FleetAgent({ state, engine: fakeEngine(), print: () => {}, busyHeartbeatMs: 100, telemetryIntervalMs: 60_000, logIntervalMs: 60_000 });
  await agent.start();
  await eventually(async () => exchanges.filter(isHeartbeat).length >= 2, 20_000, "two heartbeats");
  await agent.stop();
  const [refused, next] = exchanges.filter(isHeartbeat);
  expect(refused.status).toBe(503);
  expect(next.at - refused.at).toBeGreaterThanOrEqual(2990);
  // the report the refused heartbeat carried goes again with the next one: a 503 forgot nothing
  const report = { deploymentId, state: "running" };
  expect((refused.body as { deployments?: unknown[] }).deployments).toEqual([expect.objectContaining(report)]);
  expect((next.body as { deployments?: unknown[] }).deployments).toEqual([expect.objectContaining(report)]);
});

it("the first telemetry snapshot is taken at start, and again after a restart, not an interval later", { timeout: 60_000 }, async () => {
  const { state, device } = await enrolledStateDir();
  // an interval of an hour: any snapshot within this test is one taken at start
  const options = { state, engine: fakeEngine(), print: () => {}, telemetryIntervalMs: 3_600_000, logIntervalMs: 3_600_000 };
  const latest = () => h.api("GET", `/api/v1/devices/${device.deviceId}/telemetry/latest`, { key: tenant.key });
  expect((await latest()).status).toBe(404);
  for (const run of ["start", "restart"]) {
    const agent = new FleetAgent(options);
    await agent.start();
    await eventually(async () => taken().telemetry.length === (run === "start" ? 1 : 2) || undefined, 20_000, `the snapshot taken at ${run}`);
    await stopAndSettle(agent, device.deviceId);
  }
  const [first, second] = taken().telemetry;
  expect(Date.parse(second.timestamp)).toBeGreaterThan(Date.parse(first.timestamp));
  // a whole snapshot of the machine, and the service shows it as the device's latest
  expect(first.memoryTotalBytes).toBeGreaterThan(0);
  expect(first.cpuUsagePercent).toBeGreaterThanOrEqual(0);
  const shown = await latest();
  expect(shown.status, shown.text).toBe(200);
  expect(shown.body).toMatchObject({ timestamp: second.timestamp, memoryTotalBytes: second.memoryTotalBytes, uptimeSeconds: second.uptimeSeconds });
});
