// The real agent's loop (agent/src/agent.ts, FleetAgent) and its certificate, against the
// service in process on loopback. Due for renewal (two thirds into its validity), the loop renews
// it with a new key before its heartbeat, stores the new key, certificate and identity, and
// heartbeats with it. Expired, the service refuses it, and the agent says so, naming when it
// expired, stops asking (exit code 78, RestartPreventExitStatus of its unit) and does not try a
// renewal it cannot get. Time passes on the clock both sides read (Date only; timers run as
// usual). The engine is an empty fake: no deployment is involved.
import { X509Certificate } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, expect, it, vi } from "vitest";
import { EXIT_CREDENTIALS_REFUSED, FleetAgent, renewalDueAt } from "../../../agent/src/agent.js";
import { loadIdentity, storeCredentials } from "../../../agent/src/identity-store.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { eventually } from "../../support/server-process.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, enroll, ensureCa } from "./fleet-support.js";
import { fakeEngine } from "./fake-engine.js";

const DAY = 86_400_000;

/** An engine with nothing on it. */
const emptyEngine = fakeEngine();

let h: Harness;
let tenant: Tenant;
/** a pass-through to the service that records each request's method and path */
let front: http.Server;
let frontUrl: string;
const requests: string[] = [];
let dir: string;

beforeAll(async () => {
  h = await createHarness({ DEVICE_AUTH_RECHECK_SECONDS: "0" });
  tenant = await h.createTenant("Expiring Devices");
  await ensureCa(h, tenant.key);
  const target = new URL(h.url);
  front = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const upstream = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  frontUrl = `http://127.0.0.1:${(front.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => front?.close(resolve));
  await h?.close();
});
afterEach(() => {
  vi.useRealTimers();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A call of the agent's protocol (telemetry and log batches aside): enrollment, renewal, heartbeat, packages. */
const isAgentCall = (request: string) => /^\w+ \/(api\/v1\/agent\/|trpc\/agent\.)/.test(request);

/** A state directory as `fleet-agent enroll` leaves it, for a device enrolled now with a certificate of 365 days. */
async function enrolledStateDir() {
  const device = await enroll(h, (await createEnrollmentToken(h, tenant.key)).token);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-expired-"));
  const state = new StateDir(dir);
  state.ensure();
  const notAfter = new Date(new X509Certificate(device.certificate).validTo).toISOString();
  await storeCredentials(state, {
    serviceUrl: frontUrl, deviceId: device.deviceId, reportedDeviceId: device.reportedDeviceId, name: "expiring", certificateId: device.certificateId,
    certificateNotAfter: notAfter, heartbeatIntervalSeconds: 60, enrolledAt: new Date().toISOString(),
  }, device.keys, device.certificate, []);
  return { state, device, notAfter };
}

it("due for renewal: the loop renews with a new key before its heartbeat, keeps the new credentials, and heartbeats with them", async () => {
  const { state, device } = await enrolledStateDir();
  const before = loadIdentity(state);
  const oldKey = fs.readFileSync(path.join(dir, before.keyFile), "utf8");
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(renewalDueAt(device.certificate) + 3_600_000);
  requests.length = 0;
  const lines: string[] = [];
  const agent = new FleetAgent({ state, engine: emptyEngine, print: (line) => lines.push(line), telemetryIntervalMs: 60_000, logIntervalMs: 60_000 });
  await agent.start();
  try {
    await eventually(async () => agent.lastHeartbeatAt ?? undefined, 30_000, "a heartbeat after the renewal");
    // renewal through the typed tRPC client, the heartbeat on its lean REST route
    expect(requests.filter(isAgentCall)).toEqual(["POST /trpc/agent.renewCertificate", "POST /api/v1/agent/heartbeat"]);
    const after = loadIdentity(state);
    expect(after.certificateId).not.toBe(before.certificateId);
    expect(after.keyFile).not.toBe(before.keyFile);
    expect(fs.readFileSync(path.join(dir, after.keyFile), "utf8")).not.toBe(oldKey);
    expect(fs.statSync(path.join(dir, after.keyFile)).mode & 0o777).toBe(0o600);
    // the service issued it, for this device, valid from the (moved) clock; the heartbeat came with it
    const issued = await h.services.prisma.deviceCertificate.findUniqueOrThrow({ where: { id: after.certificateId! }, select: { deviceId: true, notAfter: true } });
    expect(issued.deviceId).toBe(device.deviceId);
    expect(issued.notAfter.toISOString()).toBe(after.certificateNotAfter);
    expect(issued.notAfter.getTime()).toBeGreaterThan(Date.now() + 300 * DAY);
    expect(lines.some((l) => l.startsWith(`info: certificate renewed with a new key; valid until ${after.certificateNotAfter}`))).toBe(true);
    expect(lines.filter((l) => l.startsWith("error: "))).toEqual([]);
  } finally {
    await agent.stop();
  }
  expect(await agent.done).toBe(0);
});

it("an expired certificate: the agent says when it expired, tries no renewal, stops asking and exits 78", async () => {
  const { state, device, notAfter } = await enrolledStateDir();
  // a year and a day later, on both sides
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(Date.parse(notAfter) + DAY);
  const lines: string[] = [];
  requests.length = 0;
  const agent = new FleetAgent({ state, engine: emptyEngine, print: (line) => lines.push(line), telemetryIntervalMs: 100, logIntervalMs: 100, busyHeartbeatMs: 100 });
  await agent.start();
  expect(await agent.done).toBe(EXIT_CREDENTIALS_REFUSED);

  const refusal = lines.filter((l) => l.startsWith("error: "));
  expect(refusal).toEqual([
    `error: the service refuses this device's certificate (401: Device certificate is expired or not yet valid): it expired at ${notAfter} and was not renewed in time; ` +
    "the agent stops asking. Workloads keep running. Enroll the device again (fleet-agent enroll --force) once the cause is fixed.",
  ]);
  // one heartbeat, no renewal (an expired certificate cannot renew itself)
  expect(requests.filter(isAgentCall)).toEqual(["POST /api/v1/agent/heartbeat"]);
  expect(lines.join("\n")).not.toMatch(/certificate renewal/);
  // stopped asking: nothing more reaches the service over ten of its intervals (absence can only be watched over time)
  const asked = requests.length;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(requests.length).toBe(asked);
  // the service saw no heartbeat from it
  const row = await h.services.prisma.device.findUniqueOrThrow({ where: { id: device.deviceId }, select: { lastSeenAt: true } });
  expect(row.lastSeenAt === null || row.lastSeenAt.getTime() < Date.parse(notAfter)).toBe(true);
});

it("a certificate that is still valid but revoked: the same stop, without an expiry in the words", async () => {
  const { state, device } = await enrolledStateDir();
  const revoked = await h.api("POST", `/api/v1/devices/${device.deviceId}/certificates/${device.certificateId}/revoke`, { key: tenant.key, body: { reason: "Key compromise" } });
  expect(revoked.status, revoked.text).toBe(200);
  const lines: string[] = [];
  const agent = new FleetAgent({ state, engine: emptyEngine, print: (line) => lines.push(line), telemetryIntervalMs: 100, logIntervalMs: 100 });
  await agent.start();
  expect(await agent.done).toBe(EXIT_CREDENTIALS_REFUSED);
  expect(lines.filter((l) => l.startsWith("error: "))).toEqual([
    "error: the service refuses this device's certificate (401: Device certificate is revoked); the agent stops asking. " +
    "Workloads keep running. Enroll the device again (fleet-agent enroll --force) once the cause is fixed.",
  ]);
});
