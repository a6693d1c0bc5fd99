// The device agent protocol end to end, with keys generated here: enrollment tokens,
// enrollment, device authentication, heartbeat, certificate renewal and offline detection.
import crypto from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignJWT } from "jose";
import { createHarness, type Harness, type Tenant } from "../../support/harness.js";
import { expectSecured } from "../../support/security.js";
import { sha256Hex } from "../../../src/lib/crypto.js";
import { eventBusOf, type FleetEvents } from "../../../src/lib/events.js";
import { markOfflineDevices, detectOfflineDevices } from "../../../src/modules/devices/offline.js";
import { deviceJobs } from "../../../src/modules/devices/jobs.js";
import { createCsr, generateDeviceKeys } from "../../../agent/src/core/identity.js";
import { createEnrollmentToken, enroll, ensureCa, heartbeat, type EnrolledDevice } from "./fleet-support.js";

let h: Harness;
let acme: Tenant;
let globex: Tenant;
let tokenSecret: string;

beforeAll(async () => {
  // Re-check cached certificates on every call so that revocation is observable at once.
  h = await createHarness({ DEVICE_AUTH_RECHECK_SECONDS: "0" });
  acme = await h.createTenant("Acme Agents");
  globex = await h.createTenant("Globex Agents");
});
afterAll(() => h?.close());

const agentEnroll = (body: Record<string, unknown>) => h.api("POST", "/api/v1/agent/enroll", { key: null, body });

async function csrFor(reportedDeviceId: string) {
  return createCsr(await generateDeviceKeys("ES256"), reportedDeviceId);
}

describe("enrollment tokens", () => {
  it("creates a token whose secret is shown once and stored only as a hash", async () => {
    const res = await h.api("POST", "/api/v1/enrollment-tokens", {
      key: acme.key,
      body: { name: "Berlin line 1", labels: { site: "berlin", tier: "edge" }, maxUses: 3, expiresAt: new Date(Date.now() + 86_400_000).toISOString() },
    });
    expect(res.status).toBe(201);
    expect(res.body.token).toMatch(/^fme_[A-Za-z0-9]{40}$/);
    expect(res.body).toMatchObject({ name: "Berlin line 1", labels: { site: "berlin", tier: "edge" }, maxUses: 3, useCount: 0, remainingUses: 3, status: "active", revokedAt: null });
    expect(res.body.tokenPrefix).toBe(res.body.token.slice(0, 8));
    const row = await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: res.body.id } });
    expect(row.tokenHash).toBe(sha256Hex(res.body.token));
    expect(JSON.stringify(row)).not.toContain(res.body.token);

    const list = await h.api("GET", "/api/v1/enrollment-tokens", { key: acme.key });
    expect(list.status).toBe(200);
    const listed = list.body.items.find((t: { id: string }) => t.id === res.body.id);
    expect(listed).toBeDefined();
    expect(listed.token).toBeUndefined();
    expect(list.text).not.toContain(res.body.token);
    // The audit entry of the creation does not carry the secret either.
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { entityId: res.body.id } });
    expect(JSON.stringify(audit)).not.toContain(res.body.token);
  });

  it("refuses invalid token requests", async () => {
    const cases = [
      { name: "" },
      { name: "x", labels: { "bad key!": "v" } },
      { name: "x", labels: { site: "a,b" } },
      { name: "x", maxUses: 0 },
      { name: "x", expiresAt: new Date(Date.now() - 1000).toISOString() },
    ];
    for (const body of cases) {
      const res = await h.api("POST", "/api/v1/enrollment-tokens", { key: acme.key, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.code).toBe("BAD_REQUEST");
    }
  });

  it("revokes a token: 200 once, 409 again, 404 across tenants", async () => {
    const t = await createEnrollmentToken(h, acme.key);
    expect((await h.api("DELETE", `/api/v1/enrollment-tokens/${t.id}`, { key: globex.key })).status).toBe(404);
    const res = await h.api("DELETE", `/api/v1/enrollment-tokens/${t.id}`, { key: acme.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: t.id, status: "revoked" });
    expect((await h.api("DELETE", `/api/v1/enrollment-tokens/${t.id}`, { key: acme.key })).status).toBe(409);
    const revoked = await h.api("GET", "/api/v1/enrollment-tokens?status=revoked", { key: acme.key });
    expect(revoked.body.items.map((i: { id: string }) => i.id)).toContain(t.id);
    const active = await h.api("GET", "/api/v1/enrollment-tokens?status=active", { key: acme.key });
    expect(active.body.items.map((i: { id: string }) => i.id)).not.toContain(t.id);
  });

  it("is secured", async () => {
    const t = await createEnrollmentToken(h, acme.key);
    await expectSecured(h, acme, globex, { method: "GET", path: "/api/v1/enrollment-tokens", permission: "devices:read" });
    await expectSecured(h, acme, globex, { method: "POST", path: "/api/v1/enrollment-tokens", body: { name: "s" }, permission: "enrollment:write" });
    await expectSecured(h, acme, globex, {
      method: "DELETE",
      path: `/api/v1/enrollment-tokens/${t.id}`,
      permission: "enrollment:write",
      foreignPath: `/api/v1/enrollment-tokens/${t.id}`,
    });
  });
});

describe("enrollment", () => {
  it("refuses with 409 while the organization has no usable default CA, and consumes nothing", async () => {
    const tenant = await h.createTenant("No CA Yet");
    const t = await createEnrollmentToken(h, tenant.key, { maxUses: 1 });
    const res = await agentEnroll({ enrollmentToken: t.token, reportedDeviceId: "no-ca-1", csr: await csrFor("no-ca-1") });
    expect(res.status).toBe(409);
    expect(res.body.message).toMatch(/default CA/);
    expect(await h.services.prisma.device.count({ where: { organizationId: tenant.org.id } })).toBe(0);
    expect((await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: t.id } })).useCount).toBe(0);
  });

  it("enrolls a device: provisioned, labelled from the token, certificate from the default CA, one transaction", async () => {
    await ensureCa(h, acme.key);
    const t = await createEnrollmentToken(h, acme.key, { labels: { site: "berlin", tier: "core" } });
    const keys = await generateDeviceKeys("ES256");
    const res = await agentEnroll({
      enrollmentToken: t.token,
      reportedDeviceId: "SN-0001",
      name: "Press 1",
      csr: await createCsr(keys, "whatever-the-device-asks"),
      facts: { os: "Linux 6.6", arch: "arm64", agentVersion: "1.2.3", cpuCores: 4 },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.certificate).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(res.body.caChain.length).toBeGreaterThanOrEqual(1);
    expect(res.body.heartbeatIntervalSeconds).toBe(30);
    const { X509Certificate } = await import("node:crypto");
    const cert = new X509Certificate(res.body.certificate);
    expect(cert.subject).toBe(`CN=${res.body.deviceId}`);
    expect(cert.verify(new X509Certificate(res.body.caChain[0]).publicKey)).toBe(true);

    const device = await h.api("GET", `/api/v1/devices/${res.body.deviceId}`, { key: acme.key });
    expect(device.body).toMatchObject({
      name: "Press 1",
      reportedDeviceId: "SN-0001",
      claimActive: true,
      status: "provisioned",
      labels: { site: "berlin", tier: "core" },
      os: "Linux 6.6",
      arch: "arm64",
      agentVersion: "1.2.3",
      facts: { cpuCores: 4 },
      lastSeenAt: null,
    });
    expect(device.body.enrolledAt).not.toBeNull();
    expect((await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: t.id } })).useCount).toBe(1);
    const activity = await h.api("GET", `/api/v1/devices/${res.body.deviceId}/activity`, { key: acme.key });
    expect(activity.body.items.map((e: { type: string }) => e.type).sort()).toEqual(["certificate_issued", "enrolled"]);
    const audit = await h.services.prisma.auditEntry.findFirstOrThrow({ where: { action: "agent.enroll", entityId: res.body.deviceId } });
    expect(audit).toMatchObject({ actorType: "device", actorId: res.body.deviceId, organizationId: acme.org.id, outcome: "success" });
    expect(JSON.stringify(audit)).not.toContain(t.token);
  });

  it("takes the labels the device asks for (fleet-agent enroll --label), the token's value winning on a shared key; a bad label is a 400 naming it", async () => {
    await ensureCa(h, acme.key);
    const t = await createEnrollmentToken(h, acme.key, { labels: { site: "berlin" } });
    const res = await agentEnroll({
      enrollmentToken: t.token, reportedDeviceId: "SN-LABELS-1", csr: await csrFor("SN-LABELS-1"), labels: { site: "munich", line: "3" },
    });
    expect(res.status, res.text).toBe(201);
    const device = await h.api("GET", `/api/v1/devices/${res.body.deviceId}`, { key: acme.key });
    expect(device.body.labels).toEqual({ site: "berlin", line: "3" });

    const bad = await agentEnroll({ enrollmentToken: t.token, reportedDeviceId: "SN-LABELS-2", csr: await csrFor("SN-LABELS-2"), labels: { "bad key!": "x" } });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain("labels");
    expect(await h.services.prisma.device.count({ where: { reportedDeviceId: "SN-LABELS-2" } })).toBe(0);
  });

  it("answers 401 for an unknown, revoked, expired or used-up token", async () => {
    const csr = await csrFor("tok-1");
    const unknown = await agentEnroll({ enrollmentToken: "fme_" + "x".repeat(40), reportedDeviceId: "tok-1", csr });
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe("Invalid enrollment token");

    const revoked = await createEnrollmentToken(h, acme.key);
    await h.api("DELETE", `/api/v1/enrollment-tokens/${revoked.id}`, { key: acme.key });
    const r1 = await agentEnroll({ enrollmentToken: revoked.token, reportedDeviceId: "tok-1", csr });
    expect(r1.status).toBe(401);
    expect(r1.body.message).toMatch(/revoked/);

    const expired = await createEnrollmentToken(h, acme.key);
    await h.services.prisma.enrollmentToken.update({ where: { id: expired.id }, data: { expiresAt: new Date(Date.now() - 1000) } });
    const r2 = await agentEnroll({ enrollmentToken: expired.token, reportedDeviceId: "tok-1", csr });
    expect(r2.status).toBe(401);
    expect(r2.body.message).toMatch(/expired/);

    const once = await createEnrollmentToken(h, acme.key, { maxUses: 1 });
    await enroll(h, once.token);
    const r3 = await agentEnroll({ enrollmentToken: once.token, reportedDeviceId: "tok-1", csr });
    expect(r3.status).toBe(401);
    expect(r3.body.message).toMatch(/maximum/);
    expect(await h.services.prisma.device.count({ where: { reportedDeviceId: "tok-1" } })).toBe(0);
  });

  it("never exceeds maxUses under concurrent enrollments", async () => {
    const t = await createEnrollmentToken(h, acme.key, { maxUses: 2 });
    const csrs = await Promise.all([0, 1, 2, 3].map((i) => csrFor(`race-${i}`)));
    const results = await Promise.all(csrs.map((csr, i) => agentEnroll({ enrollmentToken: t.token, reportedDeviceId: `race-${i}`, csr })));
    expect(results.map((r) => r.status).sort()).toEqual([201, 201, 401, 401]);
    expect((await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: t.id } })).useCount).toBe(2);
    const list = await h.api("GET", "/api/v1/enrollment-tokens?status=exhausted", { key: acme.key });
    expect(list.body.items.map((i: { id: string }) => i.id)).toContain(t.id);
  });

  it("answers 409 when the reported device id is claimed, rolls the token use back, and enrolls again after release", async () => {
    const t = await createEnrollmentToken(h, acme.key);
    const first = await enroll(h, t.token, { reportedDeviceId: "SN-CLAIM" });
    const again = await agentEnroll({ enrollmentToken: t.token, reportedDeviceId: "SN-CLAIM", csr: await csrFor("SN-CLAIM") });
    expect(again.status).toBe(409);
    expect(again.body.message).toContain(first.deviceId);
    expect((await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: t.id } })).useCount).toBe(1);
    // The same id in another organization is a different claim.
    await ensureCa(h, globex.key);
    const other = await createEnrollmentToken(h, globex.key);
    await enroll(h, other.token, { reportedDeviceId: "SN-CLAIM" });

    const released = await h.api("POST", `/api/v1/devices/${first.deviceId}/release-claim`, { key: acme.key });
    expect(released.status).toBe(200);
    const replacement = await enroll(h, t.token, { reportedDeviceId: "SN-CLAIM" });
    expect(replacement.deviceId).not.toBe(first.deviceId);
    const old = await h.api("GET", `/api/v1/devices/${first.deviceId}`, { key: acme.key });
    expect(old.body).toMatchObject({ reportedDeviceId: "SN-CLAIM", claimActive: false });
  });

  it("answers 400 for a bad CSR or body and creates nothing", async () => {
    const t = await createEnrollmentToken(h, acme.key);
    const before = await h.services.prisma.device.count();
    const bad = await agentEnroll({ enrollmentToken: t.token, reportedDeviceId: "bad-csr", csr: "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----" });
    expect(bad.status).toBe(400);
    const missing = await agentEnroll({ enrollmentToken: t.token, csr: await csrFor("x") });
    expect(missing.status).toBe(400);
    // Raw JSON: an object literal would swallow "__proto__" before it is sent.
    const raw = `{"enrollmentToken":${JSON.stringify(t.token)},"reportedDeviceId":"x","csr":${JSON.stringify(await csrFor("x"))},"facts":{"__proto__":{"polluted":true}}}`;
    const hostile = await h.api("POST", "/api/v1/agent/enroll", { key: null, raw, headers: { "content-type": "application/json" } });
    expect(hostile.status).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await h.services.prisma.device.count()).toBe(before);
    expect((await h.services.prisma.enrollmentToken.findUniqueOrThrow({ where: { id: t.id } })).useCount).toBe(0);
  });
});

describe("device authentication and heartbeat", () => {
  let token: { token: string; id: string };
  let device: EnrolledDevice;
  beforeAll(async () => {
    token = await createEnrollmentToken(h, acme.key, { labels: { site: "hamburg" } });
    device = await enroll(h, token.token);
  });

  it("accepts a valid device JWT: online, facts and lastSeenAt recorded, desired state answered, event published", async () => {
    const events: FleetEvents["device.status_changed"][] = [];
    const off = eventBusOf(h.services).subscribe("device.status_changed", (e) => void events.push(e));
    const res = await heartbeat(h, device, { facts: { os: "Linux 6.8", hardwareModel: "Pi 5", ipAddress: "10.0.0.7", kernel: "6.8.1" } });
    off();
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({ heartbeatIntervalSeconds: 30, deployments: [] });
    const row = await h.services.prisma.device.findUniqueOrThrow({ where: { id: device.deviceId } });
    expect(row).toMatchObject({ status: "online", os: "Linux 6.8", hardwareModel: "Pi 5", ipAddress: "10.0.0.7", facts: { kernel: "6.8.1" } });
    expect(Date.now() - row.lastSeenAt!.getTime()).toBeLessThan(60_000);
    expect(events).toEqual([{ organizationId: acme.org.id, deviceId: device.deviceId, from: "provisioned", to: "online", at: expect.any(String) }]);

    // A second heartbeat changes no status: no event, no activity entry; named facts are kept.
    const before = await h.services.prisma.deviceEvent.count({ where: { deviceId: device.deviceId } });
    expect((await heartbeat(h, device)).status).toBe(200);
    expect(await h.services.prisma.deviceEvent.count({ where: { deviceId: device.deviceId } })).toBe(before);
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: device.deviceId } })).os).toBe("Linux 6.8");
  });

  it("records an error status reported by the agent", async () => {
    const d = await enroll(h, token.token);
    expect((await heartbeat(h, d, { status: "error" })).status).toBe(200);
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: d.deviceId } })).status).toBe("error");
    expect((await heartbeat(h, d, { status: "bogus" })).status).toBe(400);
  });

  it("keeps why a device is in error (its heartbeat's message, else a failed deployment's) on the device and in the status-change activity, until it is online again", async () => {
    const d = await enroll(h, token.token);
    const get = async () => (await h.api("GET", `/api/v1/devices/${d.deviceId}`, { key: acme.key })).body;
    const reason = "container app-2 keeps exiting with code 137 (out of memory)";
    expect((await heartbeat(h, d, { status: "error", message: reason })).status).toBe(200);
    expect(await get()).toMatchObject({ status: "error", statusReason: reason });
    const listed = await h.api("GET", `/api/v1/devices?search=${encodeURIComponent(d.reportedDeviceId)}`, { key: acme.key });
    expect(listed.body.items.find((i: { id: string }) => i.id === d.deviceId)).toMatchObject({ statusReason: reason });
    const activity = await h.api("GET", `/api/v1/devices/${d.deviceId}/activity?type=status_changed`, { key: acme.key });
    expect(activity.status, activity.text).toBe(200);
    expect(activity.body.items[0]).toMatchObject({ message: `Status changed from provisioned to error: ${reason}`, data: { from: "provisioned", to: "error", message: reason } });

    // still in error without saying why again: the reason stays; online: none
    await heartbeat(h, d, { status: "error" });
    expect((await get()).statusReason).toBe(reason);
    await heartbeat(h, d);
    expect(await get()).toMatchObject({ status: "online", statusReason: null });
    const online = (await h.api("GET", `/api/v1/devices/${d.deviceId}/activity?type=status_changed`, { key: acme.key })).body.items[0];
    expect(online).toMatchObject({ message: "Status changed from error to online", data: { from: "error", to: "online" } });
    expect(online.data).not.toHaveProperty("message");

    // an error with a failed deployment and no message of its own: the deployment's message
    const failed = "image pull failed: manifest unknown";
    await heartbeat(h, d, { status: "error", deployments: [{ deploymentId: crypto.randomUUID(), state: "failed", message: failed }] });
    expect(await get()).toMatchObject({ status: "error", statusReason: failed });
  });

  it("accepts EdDSA and RS256 device keys", async () => {
    for (const algorithm of ["EdDSA", "RS256"] as const) {
      const d = await enroll(h, token.token, { algorithm });
      const res = await heartbeat(h, d);
      expect(res.status, `${algorithm}: ${res.text}`).toBe(200);
    }
  });

  it("refuses expired tokens, lifetimes over five minutes, a wrong x5t#S256 and a wrong subject", async () => {
    const other = await enroll(h, token.token);
    const now = Math.floor(Date.now() / 1000);
    const expired = await device.token({ issuedAt: now - 600, lifetimeSeconds: 300 });
    const r1 = await heartbeat(h, device, {}, expired);
    expect(r1.status).toBe(401);
    expect(r1.body.message).toMatch(/expired/);

    const tooLong = await device.token({ lifetimeSeconds: 3600 });
    expect((await heartbeat(h, device, {}, tooLong)).status).toBe(401);

    // Signed by this device but naming another device's certificate: signature mismatch.
    const wrongX5t = await device.token({ x5t: other.x5t, sub: other.deviceId });
    const r3 = await heartbeat(h, device, {}, wrongX5t);
    expect(r3.status).toBe(401);
    // Naming a certificate that does not exist.
    expect((await heartbeat(h, device, {}, await device.token({ x5t: "A".repeat(43) }))).status).toBe(401);
    // Right key and certificate, other device id.
    expect((await heartbeat(h, device, {}, await device.token({ sub: other.deviceId }))).status).toBe(401);

    // No exp at all.
    const noExp = await new SignJWT({}).setProtectedHeader({ alg: "ES256", "x5t#S256": device.x5t }).setSubject(device.deviceId).sign(device.keys.keys.privateKey as never);
    expect((await heartbeat(h, device, {}, noExp)).status).toBe(401);
    // HS256 "device token" naming the certificate: the algorithm is pinned to the key type.
    const hs = await new SignJWT({}).setProtectedHeader({ alg: "HS256", "x5t#S256": device.x5t }).setSubject(device.deviceId).setExpirationTime("2m").sign(new TextEncoder().encode("x".repeat(32)));
    expect((await heartbeat(h, device, {}, hs)).status).toBe(401);
  });

  it("keeps API keys off agent operations and device tokens off management operations", async () => {
    const noCredentials = await h.api("POST", "/api/v1/agent/heartbeat", { key: null, body: {} });
    expect(noCredentials.status).toBe(401);
    const apiKey = await h.api("POST", "/api/v1/agent/heartbeat", { key: acme.key, body: {} });
    expect(apiKey.status).toBe(401);
    expect(apiKey.body.message).toMatch(/not an API key/);
    const both = await h.api("POST", "/api/v1/agent/heartbeat", { key: acme.key, token: await device.token(), body: {} });
    expect(both.status).toBe(401);
    const userToken = await h.login(acme.user.email, acme.user.password);
    expect((await h.api("POST", "/api/v1/agent/heartbeat", { key: null, token: userToken, body: {} })).status).toBe(401);
    const renewWithKey = await h.api("POST", "/api/v1/agent/certificate/renew", { key: acme.key, body: { csr: await csrFor("k") } });
    expect(renewWithKey.status).toBe(401);

    const deviceToken = await device.token();
    for (const [method, path] of [
      ["GET", "/api/v1/devices"],
      ["GET", `/api/v1/devices/${device.deviceId}`],
      ["POST", "/api/v1/groups/query"],
      ["GET", "/api/v1/enrollment-tokens"],
    ]) {
      const res = await h.api(method, path, { key: null, token: deviceToken, body: method === "POST" ? { labelSelector: {} } : undefined });
      expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it("refuses a revoked certificate at once, and the refusal is audited", async () => {
    const d = await enroll(h, token.token);
    // One token reused, as agents do: after its first verification it is remembered.
    const reused = await d.token();
    expect((await heartbeat(h, d, {}, reused)).status).toBe(200);
    expect((await heartbeat(h, d, {}, reused)).status).toBe(200);
    const revoke = await h.api("POST", `/api/v1/devices/${d.deviceId}/certificates/${d.certificateId}/revoke`, { key: acme.key, body: { reason: "Key compromise" } });
    expect(revoke.status, revoke.text).toBe(200);
    const res = await heartbeat(h, d, {}, reused);
    expect(res.status).toBe(401);
    const renew = await h.api("POST", "/api/v1/agent/certificate/renew", { key: null, token: reused, body: { csr: await csrFor("r") } });
    expect(renew.status).toBe(401);
    expect(renew.body.message).toMatch(/revoked/);
    const refused = await h.services.prisma.auditEntry.findFirst({ where: { action: "auth.refused", actorType: "device", actorId: d.deviceId } });
    expect(refused).not.toBeNull();
    const activity = await h.api("GET", `/api/v1/devices/${d.deviceId}/activity?type=certificate_revoked`, { key: acme.key });
    expect(activity.status, activity.text).toBe(200);
    expect(activity.body.items).toHaveLength(1);
    expect(activity.body.items[0].data.reason).toBe("Key compromise");
  });

  it("refuses the tokens of a deleted device", async () => {
    const d = await enroll(h, token.token);
    expect((await heartbeat(h, d)).status).toBe(200);
    const del = await h.api("DELETE", `/api/v1/devices/${d.deviceId}`, { key: acme.key });
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ id: d.deviceId, deleted: true, revokedCertificates: 1 });
    expect((await heartbeat(h, d)).status).toBe(401);
  });

  it("renews the certificate with a new key; both certificates then authenticate", async () => {
    const d = await enroll(h, token.token);
    const nextKeys = await generateDeviceKeys("ES256");
    const res = await h.api("POST", "/api/v1/agent/certificate/renew", {
      key: null,
      token: await d.token(),
      body: { csr: await createCsr(nextKeys, d.reportedDeviceId) },
    });
    expect(res.status, res.text).toBe(201);
    expect(res.body.certificateId).not.toBe(d.certificateId);
    expect(res.body.caChain.length).toBeGreaterThanOrEqual(1);
    const { x5tS256, signDeviceToken } = await import("../../../agent/src/core/identity.js");
    const renewedToken = await signDeviceToken(nextKeys, { deviceId: d.deviceId, x5t: x5tS256(res.body.certificate) });
    expect((await heartbeat(h, d, {}, renewedToken)).status).toBe(200);
    expect((await heartbeat(h, d)).status).toBe(200); // the old one stays valid until it expires
    const activity = await h.api("GET", `/api/v1/devices/${d.deviceId}/activity?type=certificate_renewed`, { key: acme.key });
    expect(activity.body.items).toHaveLength(1);
    expect(await h.services.prisma.auditEntry.count({ where: { action: "agent.certificate.renew", actorId: d.deviceId } })).toBe(1);
    const bad = await h.api("POST", "/api/v1/agent/certificate/renew", { key: null, token: await d.token(), body: { csr: "nope" } });
    expect(bad.status).toBe(400);
  });
});

describe("suspended organizations", () => {
  it("refuse enrollment and device calls with 403 until enabled again", async () => {
    const tenant = await h.createTenant("Suspend Me");
    await ensureCa(h, tenant.key);
    const t = await createEnrollmentToken(h, tenant.key);
    const d = await enroll(h, t.token);
    expect((await heartbeat(h, d)).status).toBe(200);
    const suspend = await h.api("POST", `/api/v1/organizations/${tenant.org.id}/suspend`, { body: { reason: "test" } });
    expect(suspend.status, suspend.text).toBe(200);
    const enrollment = await agentEnroll({ enrollmentToken: t.token, reportedDeviceId: "susp-1", csr: await csrFor("susp-1") });
    expect(enrollment.status).toBe(403);
    expect(await h.services.prisma.device.count({ where: { reportedDeviceId: "susp-1" } })).toBe(0);
    expect((await heartbeat(h, d)).status).toBe(403);
    const renew = await h.api("POST", "/api/v1/agent/certificate/renew", { key: null, token: await d.token(), body: { csr: await csrFor("r") } });
    expect(renew.status).toBe(403);
    expect((await h.api("POST", `/api/v1/organizations/${tenant.org.id}/enable`, {})).status).toBe(200);
    expect((await heartbeat(h, d)).status).toBe(200);
  });
});

describe("offline detection", () => {
  it("marks devices offline after three missed intervals, with an event and an activity entry", async () => {
    const tenant = await h.createTenant("Offline Co");
    await ensureCa(h, tenant.key);
    const t = await createEnrollmentToken(h, tenant.key);
    const stale = await enroll(h, t.token);
    const fresh = await enroll(h, t.token);
    const failing = await enroll(h, t.token);
    const neverSeen = await enroll(h, t.token);
    for (const d of [stale, fresh]) expect((await heartbeat(h, d)).status).toBe(200);
    expect((await heartbeat(h, failing, { status: "error" })).status).toBe(200);
    const interval = h.services.config.HEARTBEAT_INTERVAL_SECONDS;
    const now = new Date();
    // `stale` and `failing` were last seen 3 intervals + 1 s before "now"; `fresh` just now.
    const old = new Date(now.getTime() - (3 * interval + 1) * 1000);
    await h.services.prisma.device.updateMany({ where: { id: { in: [stale.deviceId, failing.deviceId] } }, data: { lastSeenAt: old } });
    // Just inside the window: stays online.
    await h.services.prisma.device.update({ where: { id: fresh.deviceId }, data: { lastSeenAt: new Date(now.getTime() - (3 * interval - 1) * 1000) } });

    const events: FleetEvents["device.status_changed"][] = [];
    const off = eventBusOf(h.services).subscribe("device.status_changed", (e) => void events.push(e));
    const marked = await detectOfflineDevices(h.services.prisma, eventBusOf(h.services), interval, now);
    off();
    const ours = marked.filter((m) => m.organizationId === tenant.org.id);
    expect(ours.map((m) => m.deviceId).sort()).toEqual([stale.deviceId, failing.deviceId].sort());
    expect(events.filter((e) => e.organizationId === tenant.org.id).map((e) => [e.deviceId, e.from, e.to]).sort()).toEqual(
      [[stale.deviceId, "online", "offline"], [failing.deviceId, "error", "offline"]].sort(),
    );
    const statuses = await h.api("POST", "/api/v1/groups/query", { key: tenant.key, body: { labelSelector: {} } });
    expect(statuses.body.byStatus).toEqual({ online: 1, offline: 2, pending: 0, error: 0, provisioned: 1 });
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: neverSeen.deviceId } })).status).toBe("provisioned");
    const activity = await h.api("GET", `/api/v1/devices/${stale.deviceId}/activity?type=status_changed`, { key: tenant.key });
    expect(activity.body.items[0]).toMatchObject({ actorType: "system", data: { from: "online", to: "offline", reason: "missed_heartbeats" } });

    // Running again changes nothing; a heartbeat brings the device back online.
    expect((await markOfflineDevices(h.services.prisma, now, interval)).filter((m) => m.organizationId === tenant.org.id)).toEqual([]);
    expect((await heartbeat(h, stale)).status).toBe(200);
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: stale.deviceId } })).status).toBe("online");
  });

  it("runs as a job-runner schedule", async () => {
    const jobs = deviceJobs(h.services.config);
    expect(jobs.schedules.map((s) => s.name)).toEqual(["devices.offline-detection"]);
    const tenant = await h.createTenant("Offline Job Co");
    await ensureCa(h, tenant.key);
    const t = await createEnrollmentToken(h, tenant.key);
    const d = await enroll(h, t.token);
    expect((await heartbeat(h, d)).status).toBe(200);
    await h.services.prisma.device.update({ where: { id: d.deviceId }, data: { lastSeenAt: new Date(Date.now() - 3_600_000) } });
    await jobs.schedules[0].run({
      services: h.services,
      logger: h.services.logger,
      job: { id: "test", type: "schedule.devices.offline-detection", attempts: 1, maxAttempts: 1, payload: {} },
      signal: new AbortController().signal,
    });
    expect((await h.services.prisma.device.findUniqueOrThrow({ where: { id: d.deviceId } })).status).toBe("offline");
  });
});

describe("the tRPC client", () => {
  it("reaches the agent heartbeat through /trpc with a device token", async () => {
    const t = await createEnrollmentToken(h, acme.key);
    const d = await enroll(h, t.token);
    const { createTRPCClient, httpLink } = await import("@trpc/client");
    const client = createTRPCClient<import("../../../src/trpc/router.js").AppRouter>({
      links: [httpLink({ url: `${h.url}/trpc`, headers: async () => ({ authorization: `Bearer ${await d.token()}` }) })],
    });
    expect(await client.agent.heartbeat.mutate({})).toEqual({ heartbeatIntervalSeconds: 30, deployments: [] });
  });
});
