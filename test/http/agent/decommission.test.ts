// Decommission with the real agent loop (agent/src/agent.ts, FleetAgent) against the service in
// process (issue 50, docs/admission.md): a device waiting in the lobby heartbeats; once rejected,
// or once an admitted device is deleted, its agent is told so on its next contact, wipes its
// identity (key, certificate, identity.json) and stops with 78. Only the key's holder is told: a
// token signed with another key naming the deleted device's certificate gets a plain 401. A device
// whose certificate is revoked but which still exists keeps its identity (the plain refusal).
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { X509Certificate } from "node:crypto";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { EXIT_CREDENTIALS_REFUSED, FleetAgent } from "../../../agent/src/agent.js";
import { storeCredentials } from "../../../agent/src/identity-store.js";
import { StateDir } from "../../../agent/src/state-dir.js";
import { createCsr, generateDeviceKeys, signDeviceToken, x5tS256 } from "../../../agent/src/core/identity.js";
import { eventually } from "../../support/server-process.js";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { createEnrollmentToken, ensureCa } from "./fleet-support.js";
import { fakeEngine } from "./fake-engine.js";

let h: Harness;
let tenant: Tenant;
const dirs: string[] = [];

beforeAll(async () => {
  h = await createHarness({ HEARTBEAT_INTERVAL_SECONDS: "5" });
  tenant = await h.createTenant("Decommissioned Devices");
  await ensureCa(h, tenant.key);
});
afterAll(async () => {
  await h?.close();
});
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

/** Enrolls over the protocol with `mode`'s token and leaves the state directory as `fleet-agent enroll` does. */
async function enrolledAgent(mode: "auto" | "approval") {
  const token = await createEnrollmentToken(h, tenant.key, { mode });
  const keys = await generateDeviceKeys("ES256");
  const reportedDeviceId = `hw-${crypto.randomBytes(4).toString("hex")}`;
  const res = await h.api("POST", "/api/v1/agent/enroll", { key: null, body: { enrollmentToken: token.token, reportedDeviceId, csr: await createCsr(keys, reportedDeviceId) } });
  expect(res.status, res.text).toBe(201);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-decommission-"));
  dirs.push(dir);
  const state = new StateDir(dir);
  state.ensure();
  await storeCredentials(state, {
    serviceUrl: h.url, deviceId: res.body.deviceId, reportedDeviceId, name: reportedDeviceId, certificateId: res.body.certificateId,
    certificateNotAfter: new Date(new X509Certificate(res.body.certificate).validTo).toISOString(), heartbeatIntervalSeconds: 5, enrolledAt: new Date().toISOString(),
  }, keys, res.body.certificate, res.body.caChain);
  const lines: string[] = [];
  const agent = new FleetAgent({ state, engine: fakeEngine(), print: (line) => lines.push(line), telemetryIntervalMs: 60_000, logIntervalMs: 60_000 });
  return { agent, lines, dir, deviceId: res.body.deviceId as string, certificate: res.body.certificate as string, admission: res.body.admission as string };
}

const identityFiles = (dir: string) => fs.readdirSync(dir).filter((f) => /^(identity\.json|device-.*\.(key|crt)|ca-chain-.*\.pem)$/.test(f));

it("a device rejected in the lobby: its running agent is told on its next heartbeat, wipes its identity and exits 78", async () => {
  const { agent, lines, dir, deviceId, admission } = await enrolledAgent("approval");
  expect(admission).toBe("pending");
  expect(identityFiles(dir)).toHaveLength(4);
  await agent.start();
  // it heartbeats while it waits
  await eventually(async () => agent.lastHeartbeatAt ?? undefined, 30_000, "a heartbeat from the lobby");
  const [request] = (await h.api("GET", "/api/v1/enrollment-requests?state=pending", { key: tenant.key })).body.items.filter((r: { deviceId: string }) => r.deviceId === deviceId);
  const rejected = await h.api("POST", `/api/v1/enrollment-requests/${request.id}/reject`, { key: tenant.key, body: { reason: "unknown hardware" } });
  expect(rejected.status, rejected.text).toBe(200);

  expect(await agent.done).toBe(EXIT_CREDENTIALS_REFUSED);
  expect(identityFiles(dir)).toEqual([]);
  expect(lines.filter((l) => l.startsWith("error: "))).toEqual([
    "error: the service says this device was decommissioned (This device was decommissioned (deleted or rejected): its certificate is revoked; wipe the identity and stop); " +
    "its identity is wiped and the agent stops. Workloads keep running.",
  ]);
});

it("an admitted device deleted: the same on its next contact; the certificate is revoked either way", async () => {
  const { agent, dir, deviceId, admission } = await enrolledAgent("auto");
  expect(admission).toBe("admitted");
  const deleted = await h.api("DELETE", `/api/v1/devices/${deviceId}`, { key: tenant.key });
  expect(deleted.body).toMatchObject({ deleted: true, revokedCertificates: 1 });
  await agent.start();
  expect(await agent.done).toBe(EXIT_CREDENTIALS_REFUSED);
  expect(identityFiles(dir)).toEqual([]);
});

it("only the key's holder is told; a revoked certificate of a device that still exists wipes nothing", async () => {
  const { deviceId, certificate } = await enrolledAgent("auto");
  await h.api("DELETE", `/api/v1/devices/${deviceId}`, { key: tenant.key });
  const stranger = await generateDeviceKeys("ES256");
  const forged = await signDeviceToken(stranger, { deviceId, x5t: x5tS256(certificate) });
  const res = await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: forged, body: {} });
  expect(res.status).toBe(401);
  expect(res.headers.get("fleet-device-decommissioned")).toBeNull();
  expect(res.body.message).toBe("Device certificate is revoked");

  const kept = await enrolledAgent("auto");
  const [cert] = (await h.api("GET", `/api/v1/devices/${kept.deviceId}/certificates`, { key: tenant.key })).body.items;
  expect((await h.api("POST", `/api/v1/devices/${kept.deviceId}/certificates/${cert.id}/revoke`, { key: tenant.key, body: { reason: "Key compromise" } })).status).toBe(200);
  await kept.agent.start();
  expect(await kept.agent.done).toBe(EXIT_CREDENTIALS_REFUSED);
  expect(identityFiles(kept.dir)).toHaveLength(4);
});
